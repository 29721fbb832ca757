"""A busy kernel's shutdown and restart, on real kernels: the kernel ends by its own exit within
jupyter_client's default wait (before the SIGTERM it sends after half of it), and leaves no
worker, no registry entry and no TLS folder; what a SIGKILL leaves is removed by the Jupyter
server extension without a next kernel of the user."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from support import run_cell, spawned_workers, wait_gone

pytestmark = pytest.mark.timeout(240)

START = "%load_ext gpudask_jupyter\nclient = %gpu_cluster start --n-workers 2 --memory-limit 1GB"
#: twenty seconds of work on the cluster, the cell waiting for it
CLUSTER_WORK = "import time\nclient.gather(client.map(time.sleep, [20, 20]))"
#: twenty seconds of work in the kernel itself, in C calls that a signal does not cut short
KERNEL_WORK = (
    "import time\nimport numpy as np\na = np.random.rand(3000, 3000)\n"
    "end = time.time() + 20\nwhile time.time() < end:\n    a @ a"
)
#: half of jupyter_client's default shutdown_wait_time (5 s): its SIGTERM comes then
SIGTERM_AT = 2.5


def _left_behind(runtime_dir: Path) -> list[str]:
    return sorted(p.name for p in runtime_dir.glob("gpudask-kernel-*"))


def _busy_kernel(km: Any, kc: Any, work: str) -> tuple[Any, list[psutil.Process]]:
    """The kernel with a cluster, running ``work``; its process and its workers."""
    reply = run_cell(kc, START)
    assert reply["status"] == "ok", reply["output"]
    workers = spawned_workers(km.provisioner.process.pid)
    assert len(workers) == 2
    kc.execute(work)
    time.sleep(1.5)  # well inside the work
    return km.provisioner.process, workers


@pytest.mark.parametrize("restart", [False, True], ids=["shutdown", "restart"])
def test_a_busy_kernel_shut_down_or_restarted_exits_by_itself_leaving_nothing(
    kernel: Any, runtime_dir: Path, restart: bool
) -> None:
    km, kc = kernel
    process, workers = _busy_kernel(km, kc, CLUSTER_WORK)
    assert len(_left_behind(runtime_dir)) == 2  # the entry and its TLS folder
    began = time.monotonic()
    if restart:
        km.restart_kernel(now=False)  # as JupyterLab's Restart Kernel: interrupt, then request
    else:
        km.shutdown_kernel(now=False)  # as JupyterLab's Shut Down Kernel
    took = time.monotonic() - began
    assert process.wait(timeout=10) == 0, "the kernel was ended by a signal, not by itself"
    assert took < SIGTERM_AT, f"{took:.2f} s: the kernel manager had to send SIGTERM"
    assert wait_gone(workers, timeout=5) == []
    assert _left_behind(runtime_dir) == []
    if restart:
        kc.wait_for_ready(timeout=60)
        assert run_cell(kc, "1 + 1")["status"] == "ok"


def test_a_shutdown_request_alone_ends_a_kernel_busy_in_c_calls(
    kernel: Any, runtime_dir: Path
) -> None:
    """A front end that sends the request without interrupting first (the kernel's work is in
    C calls, which ipykernel cannot stop between messages): the cell is interrupted, and the
    process exits by itself two seconds after the request (``shutdown.EXIT_AFTER``)."""
    km, kc = kernel
    process, workers = _busy_kernel(km, kc, KERNEL_WORK)
    began = time.monotonic()
    kc.shutdown()  # the request alone: no interrupt, no signal follows
    assert process.wait(timeout=10) == 0
    took = time.monotonic() - began
    assert took < SIGTERM_AT, f"{took:.2f} s"
    assert wait_gone(workers, timeout=5) == []
    assert _left_behind(runtime_dir) == []


def test_an_idle_kernel_with_a_cluster_exits_by_itself(kernel: Any, runtime_dir: Path) -> None:
    """multiprocessing's resource tracker, a child that ignores SIGTERM, made ipykernel wait for
    it past the kernel manager's patience even when nothing ran."""
    km, kc = kernel
    assert run_cell(kc, START)["status"] == "ok"
    process = km.provisioner.process
    began = time.monotonic()
    km.shutdown_kernel(now=False)
    assert process.wait(timeout=10) == 0
    assert time.monotonic() - began < SIGTERM_AT
    assert _left_behind(runtime_dir) == []
    assert [p for p in psutil.Process().children(recursive=True) if p.pid == process.pid] == []


def test_sigterm_while_the_shutdown_closes_waits_for_the_closers(
    kernel: Any, runtime_dir: Path
) -> None:
    """SIGTERM that lands while the shutdown request's closers still run waits for them (the
    TLS folder goes last), then ends the kernel as SIGTERM does."""
    km, kc = kernel
    process, workers = _busy_kernel(km, kc, CLUSTER_WORK)
    kc.shutdown()
    time.sleep(0.2)  # the closers are under way
    os.kill(process.pid, signal.SIGTERM)
    assert process.wait(timeout=10) in (0, -signal.SIGTERM)
    assert wait_gone(workers, timeout=5) == []
    assert _left_behind(runtime_dir) == []
