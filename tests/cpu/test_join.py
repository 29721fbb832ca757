"""``%gpu_cluster join`` and ``leave`` against a real ``dask scheduler`` in another process.

This machine has no GPU, so the joined workers are CPU workers (the fallback ``start`` has too);
they are real worker processes, children of this process, that the scheduler's other clients
see. Leaving hands their data to the scheduler's other worker before they end.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from IPython.core.error import UsageError
from support import (
    DaskProcesses,
    spawned_workers,
    this_kernel,
    this_view,
    wait_gone,
    write_tls_files,
)

from gpudask_jupyter import registry
from gpudask_jupyter.cluster import join
from gpudask_jupyter.cluster.kinds import Joined
from gpudask_jupyter.monitor import Monitor
from gpudask_jupyter.server.registry_monitor import RegistrySources
from gpudask_jupyter.widget import shared_monitor

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def other_client(scheduler: DaskProcesses) -> Iterator[Any]:
    """Another client of the scheduler, as a colleague's notebook would be."""
    from distributed import Client

    with Client(scheduler.address, timeout=30, set_as_default=False) as client:
        yield client


def _join(shell: Any, scheduler: DaskProcesses, extra: str = "") -> tuple[Any, list[str]]:
    client = shell.run_line_magic(
        "gpu_cluster", f"join {scheduler.address} --n-workers 2 --memory-limit 1GB {extra}"
    )
    session = this_kernel().current()
    assert session is not None and isinstance(session.kind, Joined)
    ours = session.kind.workers.addresses()
    assert len(ours) == 2
    return client, ours


def _children() -> list[int]:
    """Worker processes started by this process itself (the scheduler's own worker is a
    grandchild: a child of its ``dask worker`` command)."""
    return sorted(p.pid for p in spawned_workers() if p.ppid() == os.getpid())


def _nothing_left(pids: list[int]) -> None:
    assert wait_gone([psutil.Process(p) for p in pids if psutil.pid_exists(p)]) == []
    assert _children() == []
    assert join.THREAD_NAME not in {t.name for t in threading.enumerate()}
    assert this_kernel().current() is None


def _stamp() -> Callable[[int], tuple[int, int, int]]:
    """What computing a partition again would change: when and where it ran. A lambda, so that
    it travels by value: the scheduler and its worker cannot import this test module."""
    return lambda i: (i, time.time_ns(), os.getpid())


def test_joined_workers_are_ours_run_tasks_and_others_see_them(
    shell, scheduler: DaskProcesses, other_client: Any, capsys, runtime_dir: Path
) -> None:
    from distributed import default_client

    client, ours = _join(shell, scheduler)
    out = capsys.readouterr()
    assert default_client() is client
    assert f"Joined {scheduler.address}: 2 workers of this kernel, 3 in all" in out.out
    assert "Joining CPU workers instead" in out.err  # no GPU here, as start would say
    pids = client.run(os.getpid, workers=ours)
    assert sorted(pids.values()) == _children()
    ran_on = {client.submit(os.getpid, workers=[a], pure=False).result() for a in ours}
    assert ran_on == set(pids.values())
    seen = other_client.scheduler_info(n_workers=-1)["workers"]
    assert set(ours) < set(seen) and len(seen) == 3
    (entry,) = registry.read_all(runtime_dir).values()
    assert entry.mode == "joined" and sorted(entry.workers or []) == sorted(ours)
    shell.run_line_magic("gpu_cluster", "status")
    status = capsys.readouterr().out
    assert "Joined cluster at" in status
    assert status.count("this kernel") >= 2 and "others" in status
    shell.run_line_magic("gpu_cluster", "leave")
    _nothing_left(list(pids.values()))
    assert registry.read_all(runtime_dir) == {}
    seen = other_client.scheduler_info(n_workers=-1)["workers"]
    assert [w["name"] for w in seen.values()] == ["remote-0"]


def test_leave_moves_a_persisted_collection_to_the_other_worker(
    shell, scheduler: DaskProcesses, other_client: Any, capsys
) -> None:
    import dask.bag as db
    from distributed import futures_of, wait

    client, ours = _join(shell, scheduler)
    pids = list(client.run(os.getpid, workers=ours).values())
    bag = other_client.persist(
        db.from_sequence(range(4), npartitions=4).map(_stamp()), workers=ours
    )
    wait(futures_of(bag))
    held = {w for where in other_client.who_has(bag).values() for w in where}
    assert held and held <= set(ours)
    before = other_client.compute(bag).result()
    assert {pid for _, _, pid in before} <= set(pids)
    capsys.readouterr()
    shell.run_line_magic("gpu_cluster", "leave --timeout 30s")
    out = capsys.readouterr().out
    assert "2 workers of this kernel left the cluster" in out
    assert "moved the data they held to its other workers first" in out
    assert "the scheduler keeps running" in out
    _nothing_left(pids)
    (remote,) = other_client.scheduler_info(n_workers=-1)["workers"]
    held = {w for where in other_client.who_has(bag).values() for w in where}
    assert held == {remote}
    assert other_client.compute(bag).result() == before  # moved, not computed again


def test_without_another_worker_the_data_cannot_move_and_leave_says_so(
    shell, tmp_path: Path, capsys
) -> None:
    from distributed import Client

    lonely = DaskProcesses(tmp_path, workers=0)
    try:
        client = shell.run_line_magic("gpu_cluster", f"join {lonely.address} --n-workers 1")
        with Client(lonely.address, timeout=30, set_as_default=False) as other:
            held = other.submit(_stamp(), 1, pure=False)
            held.result()
            pids = list(client.run(os.getpid).values())
            capsys.readouterr()
            shell.run_line_magic("gpu_cluster", "stop")
            out = capsys.readouterr().out
            assert "could not hand over their data" in out and "they were ended anyway" in out
            assert "This kernel is disconnected from it." in out
            _nothing_left(pids)
            assert other.scheduler_info()["workers"] == {}
    finally:
        lonely.close()


def test_a_worker_that_dies_comes_back_and_the_registry_follows(
    shell, scheduler: DaskProcesses, runtime_dir: Path
) -> None:
    client, ours = _join(shell, scheduler)
    session = this_kernel().current()
    assert session is not None and isinstance(session.kind, Joined)
    victim = client.run(os.getpid, workers=[ours[0]])[ours[0]]
    os.kill(victim, signal.SIGKILL)  # its nanny starts another worker, at another address
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = session.kind.workers.addresses()
        (entry,) = registry.read_all(runtime_dir).values()
        if len(now) == 2 and ours[0] not in now and sorted(entry.workers or []) == sorted(now):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"the registry did not follow the new worker: {now} vs {entry.workers}")
    pids = list(client.run(os.getpid, workers=now).values())
    assert victim not in pids
    shell.run_line_magic("gpu_cluster", "stop")
    _nothing_left(pids)


def test_the_panel_and_the_sidebar_mark_our_workers(
    shell, scheduler: DaskProcesses, runtime_dir: Path
) -> None:
    _, ours = _join(shell, scheduler)
    session = this_kernel().current()
    assert session is not None
    sidebar = RegistrySources()
    for monitor, key in (
        (Monitor(this_view().sources), shared_monitor.KEY),
        (Monitor(sidebar), session.kernel_id),
    ):
        try:
            monitor.tick(wait=10)
            frame, _ = monitor.frame(key)
        finally:
            monitor.stop()
        assert frame["cluster"] is not None and frame["cluster"]["mode"] == "joined"
        marked = {w["address"]: w["ours"] for w in frame["workers"]}
        assert len(marked) == 3  # remote-0 too
        assert marked == {address: address in ours for address in marked}


def test_tls_join_to_a_tls_scheduler(shell, tmp_path: Path, capsys) -> None:
    from distributed import Security

    files = write_tls_files(tmp_path)
    secure = DaskProcesses(tmp_path, tls=files, workers=1)
    try:
        security = Security(
            tls_ca_file=files["ca"],
            tls_client_cert=files["cert"],
            tls_client_key=files["key"],
            require_encryption=True,
        )
        secure.wait_for_workers(1, security=security)
        assert secure.address.startswith("tls://")
        client = shell.run_line_magic(
            "gpu_cluster",
            f"join {secure.address} --n-workers 1 --tls-ca-file {files['ca']} "
            f"--tls-cert {files['cert']} --tls-key {files['key']}",
        )
        assert "take connections from only holders of a certificate" in capsys.readouterr().out
        (ours,) = this_kernel().current().kind.workers.addresses()  # type: ignore[union-attr]
        assert ours.startswith("tls://")
        pid = client.submit(os.getpid, workers=[ours], pure=False).result()
        assert psutil.Process(pid).ppid() == os.getpid()
        shell.run_line_magic("gpu_cluster", "leave")
        _nothing_left([pid])
    finally:
        secure.close()


def test_a_second_join_is_refused_then_replaces(shell, scheduler: DaskProcesses, capsys) -> None:
    client, ours = _join(shell, scheduler)
    again = shell.run_line_magic("gpu_cluster", f"join {scheduler.address} --n-workers 1")
    assert again is client
    assert "join --replace" in capsys.readouterr().err
    with pytest.raises(UsageError, match="cannot scale it; %gpu_cluster leave, then join again"):
        shell.run_line_magic("gpu_cluster", "scale 3")
    pids = list(client.run(os.getpid, workers=ours).values())
    shell.run_line_magic("gpu_cluster", f"join {scheduler.address} --n-workers 1 --replace")
    assert wait_gone([psutil.Process(p) for p in pids if psutil.pid_exists(p)]) == []
    session = this_kernel().current()
    assert session is not None and isinstance(session.kind, Joined)
    assert len(session.kind.workers.addresses()) == 1


def test_restart_of_a_joined_cluster_restarts_only_this_kernels_workers(
    shell, scheduler: DaskProcesses, other_client: Any
) -> None:
    _, ours = _join(shell, scheduler)
    before = other_client.run(os.getpid)
    theirs = {a: pid for a, pid in before.items() if a not in ours}
    assert len(theirs) == 1
    shell.run_line_magic("gpu_cluster", "restart")
    deadline = time.monotonic() + 60
    while True:  # our workers come back under new addresses and new processes
        after = other_client.run(os.getpid)
        mine = {a: pid for a, pid in after.items() if a not in theirs}
        if len(mine) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert {a: after[a] for a in theirs} == theirs  # the colleague's worker was not restarted
    assert len(mine) == 2 and not set(mine.values()) & {before[a] for a in ours}
    shell.run_line_magic("gpu_cluster", "leave")
