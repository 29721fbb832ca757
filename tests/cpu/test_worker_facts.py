"""What workers and the scheduler report, read on a real CPU cluster: task counts from the
heartbeats and tasks that wait for a resource no worker offers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gpudask_jupyter.monitor import heartbeat, scheduler_probe

_RELEASE = threading.Event()


def _block() -> bool:
    """Runs in the in-process worker: holds its one thread until the test releases it."""
    return _RELEASE.wait(30)


def _one() -> int:
    return 1


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def _wait(predicate: Any, timeout: float = 10) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_task_counts_come_from_the_heartbeat(client: Any) -> None:
    held = client.map(float, range(3))  # results held in memory
    client.gather(held)
    running = client.submit(_block, pure=False)  # one task running
    queued = client.submit(_one, pure=False)  # ready behind it (one thread)

    def counts() -> heartbeat.TaskCounts | None:
        info = client.scheduler_info()["workers"]
        found = heartbeat.task_counts(next(iter(info.values())))
        return found if found.executing == 1 and found.in_memory >= 3 else None

    found = _wait(counts)
    _RELEASE.set()
    assert found is not None, client.scheduler_info()["workers"]
    assert found.executing == 1 and found.in_memory >= 3
    assert running.result(timeout=10) is True and queued.result(timeout=10) == 1


def test_task_counts_without_a_heartbeat_are_zero() -> None:
    assert heartbeat.task_counts({}) == heartbeat.TaskCounts(0, 0, 0)
    assert heartbeat.task_counts({"metrics": {"task_counts": "bad"}}) == (
        heartbeat.TaskCounts(0, 0, 0)
    )


def test_a_task_waiting_for_a_missing_resource_is_named(client: Any) -> None:
    future = client.submit(_one, resources={"GPU": 1}, pure=False)
    found = _wait(lambda: client.run_on_scheduler(scheduler_probe.missing_resources))
    assert found == {"GPU": 1}
    future.cancel()
    assert _wait(lambda: not client.run_on_scheduler(scheduler_probe.missing_resources))
