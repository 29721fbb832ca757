"""The join of a worker's GPU readings to the tasks that ran on it: one pure function, the same
for every source, so that a test can drive it with readings it makes.

A reading is GPU activity in time: CUPTI's kernel records (the GPU busy for the kernel's
duration), or NVML's per-process samples (the GPU busy for a fraction of the sample's period,
spread evenly over that period, which is all a sample says). Both become a *busy density* over
time, 0 to 1. A task gets the busy time inside its own interval on the worker; where several
tasks ran at once (a worker of more than one thread), each of them gets an equal part of the
busy time of the moments they shared, since neither source says which thread launched what.
Copies are counted by direction, for the task running when the copy began (equal parts among
tasks running then). Busy time with no task running is the worker's, not any task's
(:attr:`Attributed.unclaimed`): a kernel left running by a task that returned before it ended is
counted there, never moved to the next task.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["htod", "dtoh"]


@dataclass(frozen=True, slots=True)
class Busy:
    """The GPU busy with this process's work at ``level`` (1: a kernel ran throughout; below 1:
    the share of a sample's period it saw busy) from ``start`` to ``end`` (seconds on the
    worker's clock)."""

    start: float
    end: float
    level: float = 1.0


@dataclass(frozen=True, slots=True)
class Copy:
    """A copy between host and device that began at ``start``."""

    start: float
    nbytes: int
    direction: Direction


@dataclass(frozen=True, slots=True)
class TaskRun:
    """A task's run on the worker: its prefix, span and interval on the worker's clock."""

    key: str
    prefix: str
    span: str | None
    start: float
    stop: float


@dataclass(slots=True)
class Usage:
    """What a task (or a sum of tasks) took."""

    gpu_seconds: float = 0.0
    htod: int = 0
    dtoh: int = 0

    def add(self, other: Usage) -> None:
        self.gpu_seconds += other.gpu_seconds
        self.htod += other.htod
        self.dtoh += other.dtoh


@dataclass(slots=True)
class Attributed:
    by_task: dict[str, Usage] = field(default_factory=dict)
    unclaimed: Usage = field(default_factory=Usage)
    """Busy time and copies while no task of the worker ran."""


def union(intervals: Iterable[Busy]) -> list[Busy]:
    """Kernels that overlap (several streams) as the intervals when any ran, at level 1: the GPU
    time of a process is the time some kernel of it ran, not the sum of their durations."""
    out: list[Busy] = []
    for b in sorted(intervals, key=lambda b: b.start):
        if b.end <= b.start:
            continue
        if out and b.start <= out[-1].end:
            if b.end > out[-1].end:
                out[-1] = Busy(out[-1].start, b.end)
        else:
            out.append(Busy(b.start, b.end))
    return out


def attribute(
    tasks: Sequence[TaskRun], busy: Iterable[Busy], copies: Iterable[Copy] = ()
) -> Attributed:
    """Each task's GPU seconds and copies (see the module's docstring for the rule)."""
    result = Attributed(by_task={t.key: Usage() for t in tasks})
    edges = sorted({t.start for t in tasks} | {t.stop for t in tasks})
    readings = list(busy)
    whole = union(b for b in readings if b.level >= 1)  # kernels at once are one busy GPU
    for b in whole + [b for b in readings if b.level < 1]:
        if b.end <= b.start or b.level <= 0:
            continue
        points = [
            b.start,
            *edges[bisect.bisect_right(edges, b.start) : bisect.bisect_left(edges, b.end)],
            b.end,
        ]
        for lo, hi in itertools.pairwise(points):
            seconds = (hi - lo) * b.level
            if seconds <= 0:
                continue
            running = _running(tasks, (lo + hi) / 2)
            if not running:
                result.unclaimed.gpu_seconds += seconds
            for t in running:
                result.by_task[t.key].gpu_seconds += seconds / len(running)
    for c in copies:
        running = _running(tasks, c.start)
        targets = [result.by_task[t.key] for t in running] or [result.unclaimed]
        share = c.nbytes // len(targets)
        for usage in targets:
            if c.direction == "htod":
                usage.htod += share
            else:
                usage.dtoh += share
    return result


def _running(tasks: Sequence[TaskRun], moment: float) -> list[TaskRun]:
    return [t for t in tasks if t.start <= moment < t.stop]
