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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Floats = NDArray[np.float64]

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
    """Each task's GPU seconds and copies (see the module's docstring for the rule).

    Runs once a second on each worker's event loop, over every kernel CUPTI saw in that second
    (tens of thousands for a pipeline of small cuDF kernels), so it is a sweep, not a search:
    the tasks' starts and stops cut time into segments, each with the tasks running in it, and
    the busy time inside a segment is a difference of the busy time's running integral, read
    for every segment at once (NumPy). The cost grows with kernels plus tasks, not with their
    product, and holds the GIL that the worker's task thread needs for a few milliseconds."""
    import numpy as np

    result = Attributed(by_task={t.key: Usage() for t in tasks})
    readings = list(busy)
    # seconds from the first moment in view: running sums of wall-clock seconds (1.8e9) would
    # lose the microseconds that many short kernels add up to
    origin = min([t.start for t in tasks] + [b.start for b in readings], default=0.0)
    edges = np.array(sorted({t.start for t in tasks} | {t.stop for t in tasks}), dtype=float)
    running = _segments(tasks, edges)
    edges -= origin
    whole = [b for b in readings if b.level >= 1]
    partial = [b for b in readings if 0 < b.level < 1 and b.end > b.start]
    total = 0.0
    within = np.zeros(max(len(edges) - 1, 0))
    if whole:
        starts, ends = _merged(
            np.fromiter((b.start for b in whole), float, len(whole)) - origin,
            np.fromiter((b.end for b in whole), float, len(whole)) - origin,
        )
        total += float((ends - starts).sum())
        within += np.diff(_integral(edges, starts, ends, np.ones(len(starts))))
    if partial:
        starts = np.array([b.start for b in partial]) - origin
        ends = np.array([b.end for b in partial]) - origin
        levels = np.array([b.level for b in partial])
        total += float(((ends - starts) * levels).sum())
        within += np.diff(_integral(edges, starts, ends, levels))
    claimed = 0.0
    for segment, members in enumerate(running):
        seconds = float(within[segment])
        if not members or seconds <= 0:
            continue
        claimed += seconds
        for t in members:
            result.by_task[t.key].gpu_seconds += seconds / len(members)
    result.unclaimed.gpu_seconds += max(total - claimed, 0.0)
    moved = list(copies)
    at = np.searchsorted(edges, [c.start - origin for c in moved], side="right") - 1
    for c, segment in zip(moved, at.tolist(), strict=True):
        members = running[segment] if 0 <= segment < len(running) else []
        targets = [result.by_task[t.key] for t in members] or [result.unclaimed]
        share = c.nbytes // len(targets)
        for usage in targets:
            if c.direction == "htod":
                usage.htod += share
            else:
                usage.dtoh += share
    return result


def _segments(tasks: Sequence[TaskRun], edges: Floats) -> list[list[TaskRun]]:
    """The tasks running in each segment between consecutive ``edges`` (a task runs over
    ``[start, stop)``)."""
    import numpy as np

    out: list[list[TaskRun]] = [[] for _ in range(max(len(edges) - 1, 0))]
    for t in tasks:
        first = int(np.searchsorted(edges, t.start))
        last = int(np.searchsorted(edges, t.stop))
        for segment in range(first, last):
            out[segment].append(t)
    return out


def _merged(starts: Floats, ends: Floats) -> tuple[Floats, Floats]:
    """Intervals that overlap or touch merged (:func:`union`), as sorted arrays."""
    import numpy as np

    keep = ends > starts
    order = np.argsort(starts[keep], kind="stable")
    s, e = starts[keep][order], ends[keep][order]
    if not len(s):
        return s, e
    reach = np.maximum.accumulate(e)
    fresh = np.r_[True, s[1:] > reach[:-1]]
    first = np.flatnonzero(fresh)
    return s[first], np.maximum.reduceat(e, first)


def _integral(points: Floats, starts: Floats, ends: Floats, levels: Floats) -> Floats:
    """The busy time from the beginning of time up to each of ``points``: the sum over
    intervals of ``level`` times the part of the interval before the point."""
    import numpy as np

    out = np.zeros(len(points))
    if not len(points) or not len(starts):
        return out
    # each interval adds level·(t - start) from its start, and takes level·(t - end) from its
    # end: two sorted ramps, summed at the points with running sums
    for at, sign in ((starts, 1.0), (ends, -1.0)):
        order = np.argsort(at, kind="stable")
        where, weight = at[order], sign * levels[order]
        slope = np.r_[0.0, np.cumsum(weight)]
        offset = np.r_[0.0, np.cumsum(weight * where)]
        k = np.searchsorted(where, points, side="right")
        out += slope[k] * points - offset[k]
    return out
