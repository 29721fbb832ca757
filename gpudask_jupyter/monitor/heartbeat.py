"""GPU figures that workers report in their heartbeats, read from the scheduler's worker info.

This is how GPUs on other machines become visible (after ``attach``): local NVML sees only this
host. Recent ``distributed`` releases put flat keys in ``WorkerState.metrics``
(``gpu_utilization``, ``gpu_memory_used``, ``gpu-memory-total``); older ones nested them under
``"gpu"``. The GPU's name and total memory also arrive once, in the worker's startup information.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HeartbeatGpu:
    name: str | None
    utilization: float | None
    memory_used: int | None
    memory_total: int | None


def _number(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def reported_gpu(identity: dict[str, Any]) -> HeartbeatGpu | None:
    """GPU figures of one worker from ``scheduler_info()["workers"][addr]``; None without a GPU."""
    metrics = identity.get("metrics") or {}
    startup: dict[str, Any] = identity.get("gpu") or {}
    nested: dict[str, Any] = metrics.get("gpu") or {}
    if not isinstance(startup, dict):
        startup = {}
    if not isinstance(nested, dict):
        nested = {}
    util = _number(metrics.get("gpu_utilization", nested.get("utilization")))
    used = _number(metrics.get("gpu_memory_used", nested.get("memory-used")))
    total = _number(metrics.get("gpu-memory-total", startup.get("memory-total")))
    name = startup.get("name") if isinstance(startup.get("name"), str) else None
    if util is None and used is None and total is None and name is None:
        return None
    if total is not None and total < 0:
        total = None
    return HeartbeatGpu(name, util, used, total)


@dataclass(frozen=True)
class TaskCounts:
    """A worker's tasks by what it is doing with them, as its last heartbeat counted them."""

    executing: int
    ready: int
    in_memory: int


#: worker task states (distributed's worker state machine) behind each count
_EXECUTING = ("executing", "long-running")
_READY = ("ready", "constrained")
_IN_MEMORY = ("memory",)


def task_counts(identity: dict[str, Any]) -> TaskCounts:
    """The worker's counts from ``metrics["task_counts"]`` (state -> tasks), which workers send
    with every heartbeat; zero for a state not listed, or for a worker that sent none yet."""
    metrics = identity.get("metrics") or {}
    counts = metrics.get("task_counts") if isinstance(metrics, dict) else None
    if not isinstance(counts, dict):
        counts = {}

    def total(states: tuple[str, ...]) -> int:
        return sum(int(n) for s in states if isinstance(n := counts.get(s), int | float))

    return TaskCounts(total(_EXECUTING), total(_READY), total(_IN_MEMORY))
