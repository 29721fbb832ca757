"""No orphans: a real ipykernel that started a cluster leaves no worker, no registry entry and no
TLS key after shutdown, restart or SIGTERM (the kernel manager ends a shutdown with SIGTERM when
the kernel has not exited after half its wait, so atexit alone is not enough)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from jupyter_client.manager import KernelManager
from support import printed, read_iopub, spawned_workers, undertaker_of, wait_gone, wait_until
from support import run_cell as run

from gpudask_jupyter.compat import PARENT_PID

pytestmark = pytest.mark.timeout(240)


def _start_cluster(km: KernelManager, kc: Any) -> list[Any]:
    reply = run(
        kc,
        "%load_ext gpudask_jupyter\nclient = %gpu_cluster start --n-workers 2 --memory-limit 1GB",
    )
    assert reply["status"] == "ok", reply["output"]
    workers = spawned_workers(km.provisioner.process.pid)
    assert len(workers) == 2, reply["output"]
    return workers


def _left_behind(runtime_dir: Path) -> list[str]:
    """Registry entries, TLS folders and requests to a fork server in the runtime directory."""
    found = [*runtime_dir.glob("gpudask-kernel-*"), *runtime_dir.glob("gpudask-fork-*")]
    return sorted(p.name for p in found)


def test_kernel_shutdown_leaves_nothing(kernel, runtime_dir: Path) -> None:
    km, kc = kernel
    workers = _start_cluster(km, kc)
    assert len(_left_behind(runtime_dir)) == 2  # the entry and its TLS folder
    km.shutdown_kernel(now=False)
    assert wait_gone(workers) == []
    assert _left_behind(runtime_dir) == []


@pytest.mark.parametrize("how", ["shutdown", "restart", "SIGTERM"])
def test_the_kernels_end_respawns_no_worker_and_takes_its_log(
    kernel, runtime_dir: Path, how: str
) -> None:
    """The nannies are told before their workers are ended, so none restarts one ("Restarting
    worker", a new process, on a GPU a new CUDA context); the kernel's Dask log, with no error
    in it, goes with the kernel. Its lines are read through a descriptor opened before the end
    (the file is removed as the kernel ends)."""
    km, kc = kernel
    workers = _start_cluster(km, kc)
    assert run(kc, "held = client.submit(sum, [1, 2]); held.result()")["status"] == "ok"
    log = runtime_dir / "gpudask-logs" / f"{km.kernel_id}.log"
    with open(log, encoding="utf-8") as lines:
        if how == "shutdown":
            km.shutdown_kernel(now=False)
        elif how == "restart":
            km.restart_kernel(now=False)
        else:
            os.kill(km.provisioner.process.pid, signal.SIGTERM)
            wait_until(lambda: not km.is_alive(), 60, "the kernel to end of SIGTERM")
        assert wait_gone(workers) == []
        wait_until(lambda: not log.exists(), 60, "the kernel's log to go")
        said = lines.read()
    assert "Removing worker" in said, said  # the log the end wrote in
    assert "Restarting worker" not in said, said


def test_kernel_restart_leaves_nothing(kernel, runtime_dir: Path) -> None:
    km, kc = kernel
    workers = _start_cluster(km, kc)
    km.restart_kernel(now=False)
    assert wait_gone(workers) == []
    assert _left_behind(runtime_dir) == []
    kc.wait_for_ready(timeout=60)
    reply = run(kc, "1 + 1")
    assert reply["status"] == "ok"


def test_sigterm_closes_the_cluster_then_ends_the_kernel(kernel, runtime_dir: Path) -> None:
    km, kc = kernel
    workers = _start_cluster(km, kc)
    process = km.provisioner.process
    os.kill(process.pid, signal.SIGTERM)
    wait_until(lambda: process.poll() is not None, 30, "the kernel to end after SIGTERM")
    assert process.poll() == -signal.SIGTERM  # it still ends by SIGTERM, as the manager expects
    assert wait_gone(workers) == []
    assert _left_behind(runtime_dir) == []


def test_a_killed_kernels_files_are_removed_by_its_undertaker(kernel, runtime_dir: Path) -> None:
    """SIGKILL runs no handler: the process the kernel started with its first file removes
    them once the kernel has ended, and then ends itself."""
    km, kc = kernel
    workers = _start_cluster(km, kc)
    undertaker = undertaker_of(km.provisioner.process.pid)
    assert undertaker.pid not in {p.pid for p in workers}
    assert os.getsid(undertaker.pid) == undertaker.pid  # out of reach of the kernel's group
    os.kill(km.provisioner.process.pid, signal.SIGKILL)
    km.provisioner.process.wait(timeout=60)
    assert wait_gone(workers) == []  # the workers end with their parent's pipe
    wait_until(lambda: _left_behind(runtime_dir) == [], 60, "the entry and the TLS folder to go")
    assert wait_gone([undertaker]) == []


def test_a_killed_kernels_entry_is_ignored_then_pruned(kernel, runtime_dir: Path) -> None:
    """Every process of the kernel killed at once, its undertaker too: what it left is ignored
    at once and removed by the next prune."""
    from gpudask_jupyter import registry

    km, kc = kernel
    workers = _start_cluster(km, kc)
    undertaker = undertaker_of(km.provisioner.process.pid)
    undertaker.kill()
    os.kill(km.provisioner.process.pid, signal.SIGKILL)  # no handler runs
    km.provisioner.process.wait(timeout=60)  # the kernel has ended (a dying one still runs)
    assert wait_gone(workers) == []  # the workers end with their parent's pipe
    assert len(_left_behind(runtime_dir)) == 2
    assert registry.read_all(runtime_dir) == {}  # the server ignores it at once
    assert registry.prune(runtime_dir) == [km.kernel_id]
    assert _left_behind(runtime_dir) == []


def test_unloading_puts_back_sigterm_and_the_shutdown_request(kernel) -> None:
    _, kc = kernel
    code = (
        "import signal\n"
        "k = get_ipython().kernel\n"
        "before = signal.getsignal(signal.SIGTERM), 'do_shutdown' in vars(k)\n"
        "%load_ext gpudask_jupyter\n"
        "loaded = signal.getsignal(signal.SIGTERM), 'do_shutdown' in vars(k)\n"
        "%unload_ext gpudask_jupyter\n"
        "after = signal.getsignal(signal.SIGTERM), 'do_shutdown' in vars(k)\n"
        "print(before == after, loaded[0] is not before[0], loaded[1], after[1])\n"
    )
    reply = run(kc, code)
    assert reply["status"] == "ok", reply["output"]
    assert reply["output"].split() == ["True", "True", "True", "False"]


def test_interrupting_a_cell_keeps_the_workers(kernel) -> None:
    km, kc = kernel
    workers = _start_cluster(km, kc)
    cell = kc.execute("import time\nprint('SLEEPING', flush=True)\ntime.sleep(30)")
    read_iopub(kc, printed(cell, "SLEEPING"), 60, "the cell to begin its sleep")
    km.interrupt_kernel()
    kc.wait_for_ready(timeout=30)
    time.sleep(1)
    assert all(w.is_running() for w in workers)
    reply = run(
        kc,
        "n = len(client.scheduler_info()['workers'])\n"
        "print(n, client.submit(sum, [1, 2]).result(timeout=30))",
    )
    assert reply["status"] == "ok", reply["output"]
    assert reply["output"].split() == ["2", "3"]


def test_kernel_id_names_the_registry_entry(kernel, runtime_dir) -> None:
    km, kc = kernel
    _start_cluster(km, kc)
    from gpudask_jupyter import registry

    entries = registry.read_all(runtime_dir)
    assert list(entries) == [km.kernel_id]
    reply = run(kc, "%gpu_cluster stop")
    assert reply["status"] == "ok"
    assert registry.read_all(runtime_dir) == {}


def test_the_panel_and_the_sidebar_give_a_stop_one_time_and_its_note_goes_with_the_kernel(
    kernel, runtime_dir: Path
) -> None:
    """The kernel's panel and the server's sidebar each notice a stop at their own next look;
    both show the time the kernel's ``stop`` began, which the kernel notes where its entry was.
    Once the kernel has ended, its undertaker removes the note."""
    from gpudask_jupyter.monitor import Monitor
    from gpudask_jupyter.server.registry_monitor import RegistrySources

    km, kc = kernel
    _start_cluster(km, kc)
    panel = (
        "from gpudask_jupyter.widget.shared_monitor import this_kernel_view\n"
        "def stopped_at():\n"
        "    this_kernel_view().monitor().tick()\n"
        "    return this_kernel_view().monitor().frame('kernel')[0]['cluster']['stopped_at']\n"
        "print('PANEL', stopped_at())"
    )
    assert "PANEL None" in run(kc, panel)["output"]
    sidebar = Monitor(RegistrySources())
    sidebar.tick()
    assert sidebar.frame(km.kernel_id)[0]["cluster"]["state"] == "running"
    assert run(kc, "%gpu_cluster stop")["status"] == "ok"
    sidebar.tick()  # each monitor notices the stop at its own look, at its own time
    seen = run(kc, "print('PANEL', repr(stopped_at()))")["output"]
    on_panel = float(seen.split("PANEL ")[1].split()[0])
    on_sidebar = sidebar.frame(km.kernel_id)[0]["cluster"]["stopped_at"]
    assert on_sidebar == on_panel, (on_sidebar, on_panel)
    assert time.time() - 60 < on_panel < time.time()
    sidebar.stop()
    km.shutdown_kernel(now=False)
    wait_until(lambda: _left_behind(runtime_dir) == [], 60, "the note to go with the kernel")


def test_usage_error_fails_the_cell_with_one_line(kernel) -> None:
    _, kc = kernel
    reply = run(kc, "%load_ext gpudask_jupyter\n%gpu_cluster scale many")
    assert reply["status"] == "error"
    assert reply["ename"] == "UsageError"
    assert "expected a number of workers" in reply["output"]
    assert "Traceback" not in reply["output"]


def _of_kernel(pid: int) -> list[psutil.Process]:
    """Every process a kernel's start made for Dask, wherever it was reparented: its fork server
    and the workers, forked or spawned, carry the kernel's pid in the variable a nanny names its
    parent by (their children are found by the snapshot below)."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(PARENT_PID) == str(pid):
                found.append(proc)
    return found


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
@pytest.mark.parametrize("delay", [0.1, 0.4, 0.9])
def test_a_kernel_ended_during_a_first_start_leaves_no_process(
    kernel, runtime_dir: Path, delay: float, how: signal.Signals
) -> None:
    """A first start launches its workers' fork server before anything else: a kernel ended
    before it is launched, while it imports, or as the workers register leaves neither it nor a
    worker, nor an entry, a TLS key or its request; the next kernel starts its cluster."""
    km, kc = kernel
    assert run(kc, "%load_ext gpudask_jupyter")["status"] == "ok"
    process = km.provisioner.process
    kc.execute("client = %gpu_cluster start --n-workers 2 --memory-limit 1GB")
    time.sleep(delay)
    made = psutil.Process(process.pid).children(recursive=True) + _of_kernel(process.pid)
    os.kill(process.pid, how)
    try:
        process.wait(30)
    except Exception:
        pytest.fail(f"the kernel did not end within 30 s of {how.name}")
    assert wait_gone(made) == [], f"left after {how.name} at {delay} s"
    assert wait_gone(_of_kernel(process.pid)) == []
    # whatever the start had written, its undertaker removes once the kernel has ended
    wait_until(
        lambda: _left_behind(runtime_dir) == [], 60, f"what {how.name} at {delay} s left to go"
    )
    km.restart_kernel(now=True)
    kc.wait_for_ready(timeout=60)
    reply = run(
        kc,
        "%load_ext gpudask_jupyter\nclient = %gpu_cluster start --n-workers 2 "
        "--memory-limit 1GB\nprint(len(client.scheduler_info()['workers']))",
    )
    assert reply["status"] == "ok", reply["output"]
    assert reply["output"].split()[-1] == "2"
