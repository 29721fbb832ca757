"""One object per kernel: what the extension runs for a kernel (its cluster, its panels' view,
its cells' GPU time, its magics) is held by one :class:`Extension`, made by ``%load_ext`` and
ended by ``%unload_ext``. Two made in one process do not see each other: a cluster started on
one is not the other's, and stopping one leaves the other's running."""

from __future__ import annotations

from typing import Any

import psutil
from support import this_kernel, wait_gone

from gpudask_jupyter.cluster import commands
from gpudask_jupyter.cluster.options import StartOptions
from gpudask_jupyter.magics.extension import Extension
from gpudask_jupyter.widget import SHELL_SLOT


def test_load_makes_one_extension_and_unload_ends_it(shell: Any) -> None:
    loaded = Extension.of(shell)
    assert loaded is not None and getattr(shell, SHELL_SLOT) is loaded
    assert shell.magics_manager.magics["line"]["gpu_cluster"].__self__ is loaded.magics
    assert loaded.magics.extension is loaded and loaded.view.cluster is loaded.cluster
    shell.run_line_magic("reload_ext", "gpudask_jupyter")
    again = Extension.of(shell)
    assert again is not None and again is not loaded
    shell.run_line_magic("unload_ext", "gpudask_jupyter")
    assert Extension.of(shell) is None
    assert "gpu_cluster" not in shell.magics_manager.magics["line"]
    shell.run_line_magic("load_ext", "gpudask_jupyter")  # as the fixture left it


def test_two_extensions_in_one_process_do_not_see_each_other(shell: Any) -> None:
    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'false'")
    other = Extension(shell)  # made, not installed: a second kernel's parts
    mine = this_kernel()
    assert other.cluster is not mine and other.view is not Extension.of(shell).view  # type: ignore[union-attr]
    client = shell.run_line_magic("gpu_cluster", "start --n-workers 1 --memory-limit 1GB")
    try:
        assert mine.current() is not None and other.cluster.current() is None
        assert other.view.sources() == {} and set(this_view_sources(shell)) == {"kernel"}
        theirs, new = commands.start(other.cluster, StartOptions(n_workers=1, memory_limit="1GB"))
        assert new and other.cluster.current() is theirs
        assert theirs.address != client.scheduler.address
        assert mine.current().address == client.scheduler.address  # type: ignore[union-attr]
        ours = [psutil.Process(pid) for pid in mine.current().pids.known()]  # type: ignore[union-attr]
        theirs_workers = [psutil.Process(pid) for pid in theirs.pids.known()]
        assert (
            ours and theirs_workers and not {p.pid for p in ours} & {p.pid for p in theirs_workers}
        )
        commands.stop(other.cluster)
        assert other.cluster.current() is None and mine.current() is not None
        assert mine.current().alive  # type: ignore[union-attr]
        assert wait_gone(theirs_workers) == []
        assert all(p.is_running() for p in ours)
    finally:
        other.cluster.close()
        shell.run_line_magic("gpu_cluster", "stop")
    assert mine.current() is None


def this_view_sources(shell: Any) -> dict[str, Any]:
    loaded = Extension.of(shell)
    assert loaded is not None
    return loaded.view.sources()


def test_the_conversions_are_told_of_the_room_not_importing_it(shell: Any) -> None:
    """convert imports nothing of the room: the extension (or ``gpudask_jupyter.to_gpu``)
    hands it the room's hooks, which a ``%%to_gpu`` then runs before its GPU work."""
    import gpudask_jupyter
    from gpudask_jupyter.cluster import room
    from gpudask_jupyter.convert import room_hooks

    assert room_hooks._told.before_gpu_work is room.before_kernel_gpu_work
    assert room_hooks._told.out_of_memory is room.out_of_memory
    room_hooks.forget()
    try:
        calls: list[str] = []
        room_hooks.tell(room_hooks.RoomHooks(lambda: calls.append("placed")))
        shell.run_cell("import numpy as np")
        shell.run_cell_magic("to_gpu", "-q", "x = np.ones(3)")
        assert calls == ["placed"]
        room_hooks.forget()
        assert gpudask_jupyter.to_gpu is not None  # taken from the package: told again
        assert room_hooks._told.before_gpu_work is room.before_kernel_gpu_work
    finally:
        room_hooks.forget()
        shell.run_line_magic("reload_ext", "gpudask_jupyter")
