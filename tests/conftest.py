"""Shared fixtures: real IPython shells, real Dask processes, and process accounting.

GPU tests carry the ``gpu`` marker and are skipped, with the reason, wherever no GPU with CuPy
is usable (CI has none); they run on a GPU machine with ``pytest -m gpu``.
"""

from __future__ import annotations

import os

# A machine with other accounts counts as shared, and there a start takes its share of the room
# (one GPU, capped memory). Tests of one user's cluster run on such machines too (the GPU host
# has another account), so the room is off unless a test turns it on (the room's own tests do).
os.environ["DASK_GPUDASK__ROOM_GPUS"] = "0"

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import DaskProcesses, kernel_factory, use_stand_in_room


def _gpu_unavailable() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        if pynvml.nvmlDeviceGetCount() == 0:
            return "NVML reports no GPU"
    except Exception as err:
        return f"no usable NVIDIA GPU ({type(err).__name__}: {err})"
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as err:
        return f"CuPy unusable ({type(err).__name__}: {err})"
    return None


@pytest.hookimpl(tryfirst=True)  # before Hypothesis' own plugin reads the seed
def pytest_configure(config: pytest.Config) -> None:
    """The property tests' profile (``GPUDASK_HYPOTHESIS_PROFILE``: ``ci`` by default, ``long``
    on a GPU machine) and one seed for the whole run, printed in the header so that a failure
    in CI can be run again (``--hypothesis-seed N`` or ``GPUDASK_HYPOTHESIS_SEED=N``)."""
    import random

    from tables import load_profile

    load_profile(os.environ.get("GPUDASK_HYPOTHESIS_PROFILE", "ci"))
    if config.getoption("hypothesis_seed", None) is None:
        seed = os.environ.get("GPUDASK_HYPOTHESIS_SEED") or str(random.randrange(2**32))
        config.option.hypothesis_seed = seed
    _ctrl_c_as_in_a_terminal()


def _ctrl_c_as_in_a_terminal() -> None:
    """Ctrl-C raises ``KeyboardInterrupt`` in this process, as in a terminal or a kernel. A
    shell starts a background command (``./scripts/test.sh &`` in a script, ``nohup``) with
    SIGINT ignored, Python keeps an ignored SIGINT ignored, and every test that presses Ctrl-C
    (``_thread.interrupt_main``) would then press nothing: it waited for ever, or reported a
    product fault that was not there."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_report_header(config: pytest.Config) -> str:
    from hypothesis import settings

    seed = config.getoption("hypothesis_seed", None)
    return (
        f"property tests: seed {seed}, profile {settings.get_current_profile_name()!r} "
        f"({settings.default.max_examples} examples each; GPUDASK_HYPOTHESIS_SEED={seed} "
        "runs the same ones again)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    checked = False
    for item in items:
        if "gpu" not in item.keywords:
            continue
        if not checked:
            reason, checked = _gpu_unavailable(), True
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))


@pytest.fixture(autouse=True)
def runtime_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Registry entries go to a fresh Jupyter runtime directory per test."""
    runtime = tmp_path_factory.mktemp("runtime")
    runtime.chmod(0o700)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    yield runtime
    # a server made by a test tidies its user's files until stopped: never a later test's
    from gpudask_jupyter.server import tidy

    tidy.stop()


@pytest.fixture(autouse=True)
def _notices_per_test() -> Iterator[None]:
    """The no-GPU notice is said once per session: once per test here, so that no test's
    output depends on which test ran before it."""
    from gpudask_jupyter.convert import forget_notices

    forget_notices()
    yield
    forget_notices()


@pytest.fixture
def shell() -> Iterator[object]:
    """A real IPython shell with the extension loaded; whatever it started is closed after."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    before = set(ip.user_ns)
    ip.run_line_magic("load_ext", "gpudask_jupyter")
    try:
        yield ip
    finally:
        ip.run_line_magic("unload_ext", "gpudask_jupyter")
        ip.config.pop("GpuDaskMagics", None)  # %config persists in a shell; not across tests
        for name in set(ip.user_ns) - before:  # so would the variables a test's cells made
            del ip.user_ns[name]


@pytest.fixture
def dask_processes(tmp_path: Path) -> Iterator[DaskProcesses]:
    cluster = DaskProcesses(tmp_path)
    try:
        cluster.wait_for_workers()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[DaskProcesses]:
    """A scheduler with one worker of its own (``remote-0``), in other processes."""
    processes = DaskProcesses(tmp_path, workers=1)
    try:
        processes.wait_for_workers(1)
        yield processes
    finally:
        processes.close()


@pytest.fixture
def kernel(runtime_dir: Path) -> Iterator[tuple[Any, Any]]:
    """A kernel started the way jupyter_server starts one (connection file kernel-<id>.json)."""
    with kernel_factory(runtime_dir) as start:
        yield start()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose connections the kernel accepts (backlog) and nobody ever answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


@pytest.fixture
def room_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A shared machine with a room: two 16 GiB GPUs through the room's test seam, planned for
    four students, leases in a fresh directory (returned)."""
    room = tmp_path / "room"
    use_stand_in_room(monkeypatch, "2:16GiB")
    monkeypatch.setenv("DASK_GPUDASK__ROOM_DIR", str(room))
    monkeypatch.setenv("DASK_GPUDASK__SHARED_MACHINE", "true")
    monkeypatch.setenv("DASK_GPUDASK__ROOM_STUDENTS", "4")
    monkeypatch.setenv("DASK_GPUDASK__ROOM_GPUS", "1")  # off for the other tests (above)
    return room


@pytest.fixture
def kernels(runtime_dir: Path, room_env: Path) -> Iterator[Any]:
    """A function that starts real kernels on a shared machine with the room's test seam."""
    with kernel_factory(runtime_dir) as start:
        yield start
