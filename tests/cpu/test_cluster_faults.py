"""``stop`` and ``status`` in every state a cluster can end up in, and what ``status`` counts.

After ``client.close()``, after an attached scheduler died, after a worker was killed: no
AttributeError, ``stop`` leaves no worker process and no registry entry, and what ``status``
advises works. Real clusters on the CPU fallback, real ``dask`` processes.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest
from support import DaskProcesses, spawned_workers, this_kernel, wait_gone

from gpudask_jupyter import registry
from gpudask_jupyter.cluster import session as cluster

START = "start --n-workers 2 --threads-per-worker 1 --memory-limit 1GB"


@pytest.fixture(autouse=True)
def _cpu_only() -> None:
    from gpudask_jupyter.machine import nvml

    if nvml.status().available:
        pytest.skip("these tests start the CPU fallback; this machine has a GPU")


def _status(shell, capsys) -> str:
    capsys.readouterr()
    shell.run_line_magic("gpu_cluster", "status")
    return str(capsys.readouterr().out)


def test_after_client_close_status_says_so_and_stop_cleans_up(
    shell, capsys, runtime_dir: Path
) -> None:
    client = shell.run_line_magic("gpu_cluster", START)
    workers = spawned_workers()
    assert len(workers) == 2
    client.close()
    out = _status(shell, capsys)
    assert "no longer usable: its client was closed" in out
    assert "%gpu_cluster stop ends what is left of it" in out
    shell.run_line_magic("gpu_cluster", "stop")  # what the status advised: it works
    assert "Cluster stopped" in capsys.readouterr().out
    assert wait_gone(workers) == []
    assert this_kernel().current() is None
    assert registry.read_all(runtime_dir) == {}
    # no TLS keys either; only the stop's note stays while the kernel lives (the sidebar's
    # time of the stop), its undertaker's to remove once the kernel ends
    left = [p.name for p in runtime_dir.glob(f"{registry.ENTRY_PREFIX}*")]
    assert all(name.endswith(registry.STOPPED_SUFFIX) for name in left), left


def test_after_a_worker_was_killed_status_and_stop_work(shell, capsys) -> None:
    client = shell.run_line_magic("gpu_cluster", START)
    victim = spawned_workers()[0]
    victim.kill()
    victim.wait(10)
    deadline = time.monotonic() + 60  # the nanny starts a new worker process
    while len(client.scheduler_info()["workers"]) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "2 workers" in _status(shell, capsys)
    workers = spawned_workers()
    shell.run_line_magic("gpu_cluster", "stop")
    assert wait_gone(workers) == []


def test_after_an_attached_scheduler_died(shell, capsys, tmp_path: Path, runtime_dir) -> None:
    procs = DaskProcesses(tmp_path)
    try:
        procs.wait_for_workers()
        shell.run_line_magic("gpu_cluster", f"attach {procs.address}")
        procs.procs[0].kill()  # the scheduler
        procs.procs[0].wait(10)
        deadline = time.monotonic() + 30
        while this_kernel().current().alive and time.monotonic() < deadline:
            time.sleep(0.2)
        out = _status(shell, capsys)
        assert f"The cluster at {procs.address} is no longer reachable" in out
        assert "%gpu_cluster stop forgets it" in out
        shell.run_line_magic("gpu_cluster", "stop")
        assert f"Detached from {procs.address}" in capsys.readouterr().out
        assert this_kernel().current() is None
        assert registry.read_all(runtime_dir) == {}
    finally:
        procs.close()


def test_a_paused_scheduler_does_not_hang_status_or_stop(
    shell, capsys, tmp_path: Path, runtime_dir
) -> None:
    import signal

    from IPython.core.error import UsageError

    procs = DaskProcesses(tmp_path)
    try:
        procs.wait_for_workers()
        shell.run_line_magic("gpu_cluster", f"attach {procs.address}")
        procs.procs[0].send_signal(signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(UsageError, match=f"The scheduler at {procs.address} did not answer"):
            shell.run_line_magic("gpu_cluster", "status")
        assert time.monotonic() - started < cluster.CALL_TIMEOUT + 5
        started = time.monotonic()
        shell.run_line_magic("gpu_cluster", "stop")
        assert time.monotonic() - started < 20
        assert this_kernel().current() is None
        assert registry.read_all(runtime_dir) == {}
    finally:
        procs.procs[0].send_signal(signal.SIGCONT)
        procs.close()


def test_stop_ends_worker_processes_the_close_left(shell) -> None:
    """If the library's close leaves a worker process (a hung worker, a dead scheduler),
    stop ends it: here the cluster's close is made to fail outright."""
    shell.run_line_magic("gpu_cluster", START)
    session = this_kernel().current()
    workers = spawned_workers()
    pids = {w.pid for w in workers}
    assert set(session.pids.known()) == pids

    def broken_close(timeout: float | None = None) -> None:
        raise RuntimeError("close failed")

    real_close = session.kind.cluster.close
    session.kind.cluster.close = broken_close
    try:
        shell.run_line_magic("gpu_cluster", "stop")
        assert wait_gone(workers, timeout=15) == []
    finally:
        real_close()
    assert not [pid for pid in pids if psutil.pid_exists(pid)]


# -- what status counts ---------------------------------------------------------------------------


def _wait_for_counts(session, expected: tuple[int, int, int], timeout: float = 30) -> None:
    from gpudask_jupyter.monitor import heartbeat

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        totals = [0, 0, 0]
        for identity in session.workers().values():
            counts = heartbeat.task_counts(identity)
            totals = [
                totals[0] + counts.executing,
                totals[1] + counts.ready,
                totals[2] + counts.in_memory,
            ]
        if tuple(totals) == expected:
            return
        time.sleep(0.2)
    raise AssertionError(f"task counts {totals}, expected {expected}")


def test_status_counts_running_ready_and_held_tasks(shell, capsys) -> None:
    from distributed import Event

    client = shell.run_line_magic(
        "gpu_cluster", "start --n-workers 1 --threads-per-worker 1 --memory-limit 1GB"
    )
    held = client.map(lambda x: x + 1, range(5))
    client.gather(held)
    gate = Event()

    def wait(i: int, name: str) -> int:
        Event(name).wait()
        return i

    running = client.map(wait, range(2), name=gate.name, pure=False)  # one thread: 1 runs
    _wait_for_counts(this_kernel().current(), (1, 1, 5))
    out = _status(shell, capsys)
    assert "1 / 1 / 5" in out
    gate.set()
    client.gather(running)


def test_status_names_resources_no_worker_offers(shell, capsys) -> None:
    client = shell.run_line_magic("gpu_cluster", START)
    capsys.readouterr()
    futures = [client.submit(sum, [i], resources={"GPU": 1}, pure=False) for i in range(3)]
    said = "3 tasks wait for resource 'GPU', which no worker offers"
    deadline = time.monotonic() + 30  # the three reach the scheduler one by one
    out = ""
    while said not in out and time.monotonic() < deadline:
        out = _status(shell, capsys)
    assert said in out
    assert all(f.status == "pending" for f in futures)


def test_a_start_refused_before_anything_runs_leaves_nothing(shell, runtime_dir: Path) -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="cannot listen there"):
        shell.run_line_magic("gpu_cluster", START + " --host 192.0.2.1")  # not ours: no bind
    assert this_kernel().current() is None
    assert wait_gone(spawned_workers()) == []
    assert not list(runtime_dir.glob(f"{registry.ENTRY_PREFIX}*"))


def test_a_start_that_fails_leaves_no_key_and_no_process(
    shell, runtime_dir: Path, monkeypatch
) -> None:
    """The cluster and its workers are up when the wait for them fails: all of it is closed."""
    from distributed import Client
    from IPython.core.error import UsageError

    def never(self, *args, **kwargs):
        raise TimeoutError("the workers did not come")

    monkeypatch.setattr(Client, "wait_for_workers", never)
    with pytest.raises(UsageError, match="The cluster did not start"):
        shell.run_line_magic("gpu_cluster", START)
    assert this_kernel().current() is None
    assert wait_gone(spawned_workers()) == []
    assert not list(runtime_dir.glob(f"{registry.ENTRY_PREFIX}*"))
