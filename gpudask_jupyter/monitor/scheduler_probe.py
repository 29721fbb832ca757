"""Runs inside a Dask scheduler: one call per monitor tick returns everything the panel needs.

Shipped by value (cloudpickle), so a scheduler on another machine needs only dask and
distributed. Reading the task stream, the task groups and the workers in one function makes
the three consistent (the scheduler's event loop runs it atomically) and costs one round trip.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from typing import Any

from ..compat import distributed as compat

DONE_STATES = ("memory", "released", "forgotten")

# per process: cloudpickle registers a module by value once per process
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

            cloudpickle.register_pickle_by_value(sys.modules[__name__])
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


#: the scheduler's attribute that holds each prefix's colour slot between polls
_SLOTS = "_gpudask_prefix_slots"


def colour_slots(
    dask_scheduler: Any, seen: list[str], now: float, slots: int, lease: float
) -> dict[str, int]:
    """Each prefix's colour slot (0 to ``slots`` - 1; -1: "other"), kept on the scheduler so
    that every view of the cluster agrees. A prefix seen now takes the first slot no prefix has
    used within ``lease`` seconds (longer than any view's window), so no view ever draws two
    prefixes in one colour; when every slot is taken, it is "other" until it is seen again with
    a slot free. Prefixes are taken in ``seen``'s order (the order their tasks ran)."""
    held: dict[str, list[float]] = getattr(dask_scheduler, _SLOTS, None) or {}
    setattr(dask_scheduler, _SLOTS, held)
    for prefix in seen:
        if prefix in held:
            held[prefix][1] = now
    taken = {int(slot) for slot, last in held.values() if slot >= 0 and now - last < lease}
    for prefix in dict.fromkeys(seen):
        entry = held.get(prefix)
        if entry is not None and entry[0] >= 0:
            continue
        free = next((n for n in range(slots) if n not in taken), -1)
        held[prefix] = [free, now]
        if free >= 0:
            taken.add(free)
    now_seen = set(seen)
    for prefix, (_, last) in list(held.items()):
        if now - last >= lease and prefix not in now_seen:
            del held[prefix]  # its slot is free; seen again, it takes a new one
    return {prefix: int(entry[0]) for prefix, entry in held.items()}


def poll(
    dask_scheduler: Any = None,
    cursor: int | None = None,
    limit: int = 5000,
    slots: int = 20,
    lease: float = 3600.0,
    events: str | None = None,
    events_since: float = 0.0,
) -> dict[str, Any]:
    """Task-stream records after ``cursor`` (at most ``limit``), progress, worker identities and
    the resources waiting tasks ask of no worker. Each prefix comes with its colour slot
    (:func:`colour_slots`, of ``slots`` colours kept ``lease`` seconds); with ``events``, the
    scheduler's events of that topic after ``events_since`` (its clock), at most ``limit``."""
    from dask.utils import key_split

    plugin = compat.task_stream_plugin(dask_scheduler)
    index = plugin.index
    buffer = plugin.buffer
    first = index - len(buffer)
    if cursor is None or cursor > index:
        cursor = max(first, index - 200)  # a new reader sees the most recent tasks
    start = max(cursor, first, index - limit)
    records = list(itertools.islice(buffer, start - first, None))
    groups = list(compat.task_group_states(dask_scheduler))
    running = list(compat.executing_prefixes(dask_scheduler))
    # what a view draws: the tasks it is sent, and the progress rows of every prefix
    prefixes = [key_split(msg["key"]) for msg in records]
    seen = prefixes + [prefix for prefix, _ in groups]
    order = colour_slots(dask_scheduler, seen, time.time(), slots, lease)
    tasks = []
    for msg, prefix in zip(records, prefixes, strict=True):
        key = msg["key"]
        error = msg.get("status") != "OK"
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
    # total, done, processing, erred, running, colour slot
    progress: dict[str, list[int]] = {}
    for prefix, states in groups:
        row = progress.setdefault(prefix, [0, 0, 0, 0, 0, order.get(prefix, -1)])
        row[0] += sum(states.values())
        row[1] += sum(states.get(s, 0) for s in DONE_STATES)
        row[2] += states.get("processing", 0)
        row[3] += states.get("erred", 0)
    for prefix in running:
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
        "events": []
        if events is None
        else [(t, m) for t, m in dask_scheduler.get_events(events) if t > events_since][-limit:],
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
