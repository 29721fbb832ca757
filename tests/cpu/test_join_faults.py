"""``join`` with bad input and bad peers: it fails with a sentence naming what is wrong, within
its timeout, and leaves nothing running (no worker process, no thread, no socket, no entry)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import psutil
import pytest
from IPython.core.error import UsageError
from support import DaskProcesses, free_port, spawned_workers, this_kernel, wait_gone

from gpudask_jupyter import registry
from gpudask_jupyter.cluster import join

TIMEOUT = 2.0
SLACK = 3.0  # the machine may be busy; a hang would take far longer

pytestmark = pytest.mark.timeout(120)


def _open_to(port: int) -> list[object]:
    return [
        c
        for c in psutil.Process().net_connections(kind="inet")
        if c.raddr and c.raddr.port == port and c.status != psutil.CONN_LISTEN
    ]


def _nothing_running(runtime_dir: Path) -> None:
    assert this_kernel().current() is None
    assert [p for p in spawned_workers() if p.ppid() == os.getpid()] == []
    assert join.THREAD_NAME not in {t.name for t in threading.enumerate()}
    assert registry.read_all(runtime_dir) == {}


def _join_fails(shell, line: str, match: str, runtime_dir: Path) -> str:
    started = time.monotonic()
    with pytest.raises(UsageError, match=match) as info:
        shell.run_line_magic("gpu_cluster", line)
    assert time.monotonic() - started < TIMEOUT + SLACK
    _nothing_running(runtime_dir)
    return str(info.value)


def test_nobody_at_the_address(shell, runtime_dir: Path) -> None:
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    _join_fails(
        shell,
        f"join {address} --n-workers 1 --timeout {TIMEOUT:g}s",
        f"No Dask scheduler answered at {address} within 2 s",
        runtime_dir,
    )
    assert _open_to(port) == []


def test_a_silent_listener(shell, silent_port: int, runtime_dir: Path) -> None:
    address = f"tcp://127.0.0.1:{silent_port}"
    text = _join_fails(
        shell,
        f"join {address} --timeout {TIMEOUT:g}s",
        "accepted the connection but sent nothing within 2 s",
        runtime_dir,
    )
    assert address in text
    assert _open_to(silent_port) == []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("join", "join needs a scheduler ADDRESS or --scheduler-file"),
        ("join tcp://127.0.0.1:1 --scheduler-file x.json", "one of them"),
        ("join --scheduler-file /nonexistent/scheduler.json", "no such file"),
        ("join tls://127.0.0.1:1", "uses TLS: pass --tls-ca-file"),
        ("join tcp://127.0.0.1:1 --tls-ca-file x.pem", "TLS needs all of"),
        ("join tcp://127.0.0.1:1 --n-workers 0", "must be 1 or more"),
        ("join tcp://127.0.0.1:1 --resources GPU", "expected NAME=AMOUNT"),
        ("join tcp://127.0.0.1:1 --memory-limit lots", "expected auto, none, a size"),
        ("join tcp://127.0.0.1:1 --n-workers 100000", "at most"),
        ("join tcp://127.0.0.1:1 --require-gpu", "Nothing was started .--require-gpu is set"),
    ],
)
def test_bad_input_starts_nothing(shell, line: str, message: str, runtime_dir: Path) -> None:
    _join_fails(shell, line, message, runtime_dir)


def test_workers_that_do_not_join_in_time_are_ended(
    shell, tmp_path: Path, runtime_dir: Path
) -> None:
    """The scheduler answers, but the workers get less time than a process needs to start:
    the error says so, and the half-started workers are gone with everything else."""
    processes = DaskProcesses(tmp_path, workers=0)
    try:
        shell.run_line_magic("config", "GpuDaskMagics.startup_timeout = 0.2")
        _join_fails(
            shell,
            f"join {processes.address} --n-workers 2",
            f"workers did not join {processes.address} within 200 ms; nothing was left running",
            runtime_dir,
        )
        time.sleep(1.0)  # a worker process that was still being made would show up by now
        _nothing_running(runtime_dir)
    finally:
        processes.close()


def test_leave_without_a_joined_cluster(shell, dask_processes: DaskProcesses, capsys) -> None:
    shell.run_line_magic("gpu_cluster", "leave")
    assert "No cluster to leave." in capsys.readouterr().out
    shell.run_line_magic("gpu_cluster", f"attach {dask_processes.address}")
    with pytest.raises(UsageError, match="leave is for a cluster joined with"):
        shell.run_line_magic("gpu_cluster", "leave")
    assert this_kernel().current() is not None  # still attached


def test_a_scheduler_that_dies_status_says_so_and_stop_ends_our_workers(
    shell, tmp_path: Path, capsys, runtime_dir: Path
) -> None:
    processes = DaskProcesses(tmp_path, workers=0)
    try:
        shell.run_line_magic("gpu_cluster", f"join {processes.address} --n-workers 2")
        ours = [p for p in spawned_workers() if p.ppid() == os.getpid()]
        assert len(ours) == 2
    finally:
        processes.close()
    deadline = time.monotonic() + 30
    session = this_kernel().current()
    while session is not None and session.alive and time.monotonic() < deadline:
        time.sleep(0.2)
    capsys.readouterr()
    shell.run_line_magic("gpu_cluster", "status")
    assert "no longer reachable" in capsys.readouterr().out
    started = time.monotonic()
    shell.run_line_magic("gpu_cluster", "stop")
    assert time.monotonic() - started < 2 * join.CLOSE_TIMEOUT
    assert wait_gone(ours) == []
    _nothing_running(runtime_dir)
