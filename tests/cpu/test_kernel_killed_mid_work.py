"""A kernel ended in the middle of its work leaves nothing behind once the next kernel of the same
user loads the extension: SIGTERM in the middle of ``--distribute`` removes the transfer's
shared-memory segments and the TLS folder on the way out (and never hangs); after SIGKILL, which
runs no handler, the next kernel's ``%load_ext`` removes them. Real kernels, a real CPU cluster,
real segments in /dev/shm.

A worker removes each segment once it has read it, so a segment seen a moment ago may be gone
by the time a signal lands. The SIGKILL test therefore stops the workers first: the kernel's
segment then stays, as it does when every process of the user is killed at once (the OOM
killer, a ``kill -9 -1``). That the workers end with a killed kernel is tested in
``test_kernel_lifecycle``; here, with the SIGTERM."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from support import run_cell as run
from support import spawned_workers, undertaker_of, wait_gone

from gpudask_jupyter.convert.distribute import shared_memory

pytestmark = pytest.mark.timeout(240)

SMALL_SHM = "%config GpuDaskMagics.distribute_shm_limit = '8MiB'"  # many rounds: a long transfer
SPREAD = (
    "%%to_gpu --distribute --npartitions 64 -q\n"
    "import numpy as np\n"
    "big = np.arange(60_000_000, dtype='float64')\n"
)


def _mid_transfer(km: Any, kc: Any) -> tuple[int, list[Any]]:
    """Start a cluster and a long --distribute; return once its segments exist (the kernel's
    pid, its workers)."""
    pid = km.provisioner.process.pid
    reply = run(kc, f"%load_ext gpudask_jupyter\n%gpu_cluster start --n-workers 2\n{SMALL_SHM}")
    assert reply["status"] == "ok", reply["output"]
    workers = spawned_workers(pid)
    kc.execute(SPREAD)
    _wait_for_segments(pid, 60, "the transfer made no segment")
    return pid, workers


def _left_by(pid: int) -> list[str]:
    """The segments of process ``pid`` in /dev/shm (whether it still runs or not)."""
    return [
        n for n in shared_memory.ours() if n.startswith(f"{shared_memory.SEGMENT_PREFIX}{pid}-")
    ]


def _wait_for_segments(pid: int, timeout: float, failure: str) -> list[str]:
    """The segments of process ``pid``'s transfer (not its probe), once there are any."""
    deadline = time.monotonic() + timeout
    while not (found := [n for n in _left_by(pid) if not n.endswith(".probe")]):
        assert time.monotonic() < deadline, failure
        time.sleep(0.01)
    return found


def _stopped(proc: Any) -> bool:
    """Whether every thread of ``proc`` has stopped (a thread in a system call finishes it
    first: until then it may still remove a segment)."""
    try:
        tasks = list(Path(f"/proc/{proc.pid}/task").iterdir())
    except FileNotFoundError:
        return True  # ended: it removes nothing either
    states = []
    for task in tasks:
        with contextlib.suppress(OSError):
            stat = (task / "stat").read_text()
            states.append(stat[stat.rfind(")") + 2])
    return bool(states) and all(state in "tT" for state in states)


def _hold_a_segment(pid: int, workers: list[Any]) -> list[str]:
    """Stop the kernel's workers (those it has now too, should one have been replaced) and
    wait until a segment of its transfer exists: with no worker to read it, it stays. The
    segments then held."""
    workers.extend(w for w in spawned_workers(pid) if w not in workers)
    for worker in workers:
        with contextlib.suppress(psutil.NoSuchProcess):
            worker.suspend()
    deadline = time.monotonic() + 30
    while not all(_stopped(worker) for worker in workers):
        assert time.monotonic() < deadline, "the workers did not stop"
        time.sleep(0.01)
    return _wait_for_segments(pid, 30, "the transfer ended before its workers were stopped")


def test_sigterm_mid_transfer_leaves_no_segment_and_never_hangs(
    kernel: Any, runtime_dir: Path
) -> None:
    km, kc = kernel
    pid, workers = _mid_transfer(km, kc)
    os.kill(pid, signal.SIGTERM)
    ended = time.monotonic()
    process = km.provisioner.process
    while process.poll() is None:
        assert time.monotonic() - ended < 10, "SIGTERM hung the kernel"
        time.sleep(0.05)
    assert _left_by(pid) == []
    assert wait_gone(workers) == []
    assert not list(runtime_dir.glob("gpudask-kernel-*"))


def test_after_sigkill_the_next_kernel_removes_what_was_left(
    kernel: Any, runtime_dir: Path
) -> None:
    from jupyter_client.manager import KernelManager

    km, kc = kernel
    pid, workers = _mid_transfer(km, kc)
    held = _hold_a_segment(pid, workers)
    undertaker_of(pid).kill()  # every process of the kernel killed at once
    os.kill(pid, signal.SIGKILL)  # no handler runs
    km.provisioner.process.wait()
    for worker in workers:
        with contextlib.suppress(psutil.NoSuchProcess):
            worker.kill()  # stopped, they cannot read (and remove) what the kernel left
    assert wait_gone(workers) == []
    assert set(held) <= set(_left_by(pid))  # the segments are still there
    assert list(runtime_dir.glob("gpudask-kernel-*"))  # and the entry, the TLS folder
    nxt = KernelManager(kernel_name="python3")
    nxt.start_kernel()
    client = nxt.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        reply = run(client, "%load_ext gpudask_jupyter")
        assert reply["status"] == "ok", reply["output"]
        assert _left_by(pid) == []
        assert not list(runtime_dir.glob("gpudask-kernel-*"))
    finally:
        client.stop_channels()
        nxt.shutdown_kernel(now=True)
