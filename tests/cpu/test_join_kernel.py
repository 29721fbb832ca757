"""No orphans from ``join`` either: a real ipykernel that joined workers to a scheduler in another
process leaves none of them behind after ``%unload_ext``, its shutdown, or SIGKILL (no handler
runs then: the worker processes end with the pipe from their parent, the kernel). The scheduler
keeps running and sees them go."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from jupyter_client.manager import KernelManager
from support import DaskProcesses, kernel_factory, spawned_workers, wait_gone
from support import run_cell as run

pytestmark = pytest.mark.timeout(240)


def _join(km: KernelManager, kc: Any, scheduler: DaskProcesses) -> list[psutil.Process]:
    reply = run(
        kc,
        "%load_ext gpudask_jupyter\n"
        f"client = %gpu_cluster join {scheduler.address} --n-workers 2 --memory-limit 1GB",
    )
    assert reply["status"] == "ok", reply["output"]
    kernel_pid = km.provisioner.process.pid
    workers = [p for p in spawned_workers(kernel_pid) if p.ppid() == kernel_pid]
    assert len(workers) == 2, reply["output"]
    scheduler.wait_for_workers(3)
    return workers


def _scheduler_sees_only_its_own(scheduler: DaskProcesses) -> None:
    from distributed import Client

    with Client(scheduler.address, timeout=30, set_as_default=False) as client:
        deadline = time.monotonic() + 30
        while len(client.scheduler_info()["workers"]) != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        names = [w["name"] for w in client.scheduler_info()["workers"].values()]
    assert names == ["remote-0"]


@pytest.mark.parametrize("restart", [False, True], ids=["shutdown", "restart"])
def test_kernel_shutdown_or_restart_leaves_no_worker(
    kernel, scheduler: DaskProcesses, runtime_dir: Path, restart: bool
) -> None:
    km, kc = kernel
    workers = _join(km, kc, scheduler)
    if restart:
        km.restart_kernel(now=False)
    else:
        km.shutdown_kernel(now=False)
    assert wait_gone(workers) == []
    assert sorted(p.name for p in runtime_dir.glob("gpudask-kernel-*")) == []
    _scheduler_sees_only_its_own(scheduler)


def test_unload_ext_leaves_no_worker(kernel, scheduler: DaskProcesses) -> None:
    km, kc = kernel
    workers = _join(km, kc, scheduler)
    reply = run(kc, "%unload_ext gpudask_jupyter")
    assert reply["status"] == "ok", reply["output"]
    assert wait_gone(workers) == []
    _scheduler_sees_only_its_own(scheduler)


def test_a_killed_kernel_leaves_no_worker(kernel, scheduler: DaskProcesses) -> None:
    km, kc = kernel
    workers = _join(km, kc, scheduler)
    os.kill(km.provisioner.process.pid, signal.SIGKILL)  # no handler runs
    assert wait_gone(workers) == []  # they end with their parent's pipe
    _scheduler_sees_only_its_own(scheduler)


def test_join_and_leave_show_nothing_of_distributeds_logging(
    runtime_dir: Path, scheduler: DaskProcesses
) -> None:
    """What the worker processes log before their preload sends their stderr to the kernel's
    log file (distributed's "Creating preload" lines) stays out of the cell, as for a start."""
    with kernel_factory(runtime_dir) as start:
        _, kc = start(forward_fds=True)
        _join_and_leave_say_nothing_of_dask(kc, scheduler)


def _join_and_leave_say_nothing_of_dask(kc: Any, scheduler: DaskProcesses) -> None:
    joined = run(
        kc,
        "%load_ext gpudask_jupyter\n"
        f"client = %gpu_cluster join {scheduler.address} --n-workers 2 --memory-limit 1GB",
    )
    assert joined["status"] == "ok", joined["output"]
    left = run(kc, "%gpu_cluster leave")
    assert left["status"] == "ok", left["output"]
    for said in (joined["output"], left["output"]):
        assert "distributed." not in said and " - INFO - " not in said, said
