"""Runs inside a Dask scheduler: one call per monitor tick returns everything the panel needs.

Shipped by value (cloudpickle), so a scheduler on another machine needs only dask and
distributed. Reading the task stream, the task groups and the workers in one function makes
the three consistent (the scheduler's event loop runs it atomically) and costs one round trip.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from ..compat import distributed as compat

DONE_STATES = ("memory", "released", "forgotten")

_shipping = threading.Lock()
_shipped = False


def ship_by_value() -> None:
    """Make cloudpickle send this module and :mod:`..compat.distributed` (which it calls, and
    which imports nothing of this package) by value, so a scheduler elsewhere need not install
    this package. Called in the monitoring process."""
    global _shipped
    with _shipping:
        if not _shipped:
            import cloudpickle

            from . import scheduler_probe

            cloudpickle.register_pickle_by_value(scheduler_probe)
            cloudpickle.register_pickle_by_value(compat)
            _shipped = True


def worker_count(dask_scheduler: Any = None) -> int:
    """How many workers the scheduler has now."""
    return compat.worker_count(dask_scheduler)


def record_tasks(dask_scheduler: Any = None) -> None:
    """Start recording the task stream now. Runs inside the scheduler, when this kernel starts a
    cluster: a panel or sidebar opened later then shows the work done before it looked, not only
    what ran after its first poll (the recording is otherwise made on first read)."""
    compat.task_stream_plugin(dask_scheduler)


def poll(
    dask_scheduler: Any = None, cursor: int | None = None, limit: int = 5000
) -> dict[str, Any]:
    """Task-stream records after ``cursor`` (at most ``limit``), progress, worker identities and
    the resources waiting tasks ask of no worker."""
    from dask.utils import key_split

    plugin = compat.task_stream_plugin(dask_scheduler)
    index = plugin.index
    buffer = plugin.buffer
    first = index - len(buffer)
    if cursor is None or cursor > index:
        cursor = max(first, index - 200)  # a new reader sees the most recent tasks
    start = max(cursor, first, index - limit)
    # a prefix's colour is its place in the scheduler's order: every reader gets the same one
    order = compat.prefix_order(dask_scheduler)
    tasks = []
    for msg in itertools.islice(buffer, start - first, None):
        key = msg["key"]
        error = msg.get("status") != "OK"
        prefix = key_split(key)
        for span in msg.get("startstops", ()):
            tasks.append(
                (
                    msg.get("worker"),
                    msg.get("thread"),
                    span["start"],
                    span["stop"],
                    span["action"],
                    str(key),
                    prefix,
                    error,
                    order.get(prefix, -1),
                )
            )
    # total, done, processing, erred, running, place in the scheduler's order
    progress: dict[str, list[int]] = {}
    for prefix, states in compat.task_group_states(dask_scheduler):
        row = progress.setdefault(prefix, [0, 0, 0, 0, 0, order.get(prefix, -1)])
        row[0] += sum(states.values())
        row[1] += sum(states.get(s, 0) for s in DONE_STATES)
        row[2] += states.get("processing", 0)
        row[3] += states.get("erred", 0)
    for prefix in compat.executing_prefixes(dask_scheduler):
        if prefix in progress:
            progress[prefix][4] += 1
    for row in progress.values():
        row[4] = min(row[4], row[2])  # a heartbeat may name a task that has finished since
    return {
        "index": index,
        "tasks": tasks,
        "progress": progress,
        "workers": _workers(dask_scheduler),
        "waiting": missing_resources(dask_scheduler),
        "time": time.time(),
    }


def _workers(dask_scheduler: Any) -> dict[str, dict[str, Any]]:
    """Each worker's identity, as ``scheduler_info()`` gives it, and its process id (``pid``):
    with it the monitor finds the worker's share of a local GPU's memory in NVML's process list."""
    workers = {}
    for address, identity, pid in compat.worker_identities(dask_scheduler):
        identity["pid"] = pid
        workers[address] = identity
    return workers


def missing_resources(dask_scheduler: Any = None) -> dict[str, int]:
    """Resource name -> tasks that wait for it because no worker offers enough of it.

    A task submitted with ``resources={"GPU": 1}`` waits (the scheduler's "no-worker" state,
    ``unrunnable``) until some worker offers that much; on a cluster whose workers advertise no
    such resource it never runs, silently. Runs inside the scheduler.
    """
    offered: dict[str, float] = {}
    for resources in compat.offered_resources(dask_scheduler):
        for name, amount in resources.items():
            offered[name] = max(offered.get(name, 0.0), float(amount))
    waiting: dict[str, int] = {}
    for restrictions in compat.unrunnable_restrictions(dask_scheduler):
        for name, amount in restrictions.items():
            if offered.get(name, 0.0) < float(amount):
                waiting[name] = waiting.get(name, 0) + 1
    return waiting
