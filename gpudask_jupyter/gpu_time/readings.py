"""What the workers' GPU-time events say, summed per task prefix for a stretch of time: for the
views (the window they show) and for ``%gpu_cluster profile`` (a cell, or the last N seconds).

:func:`events_since` runs inside the scheduler (shipped by value, like the monitor's probe); the
rest runs in the kernel or the Jupyter server. A prefix's figures are sums over its tasks that
ended in the stretch, except the memory peak, the highest of their peaks. ``busy`` is GPU seconds
over wall seconds: how much of the time its tasks ran the GPU was working for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .facts import ROW_FIELDS, TOPIC


def events_since(
    dask_scheduler: Any = None, since: float = 0.0
) -> list[tuple[float, dict[str, Any]]]:
    """The GPU-time events the scheduler received after ``since`` (its clock), oldest first."""
    return [(t, msg) for t, msg in dask_scheduler.get_events(TOPIC) if t > since]


@dataclass(slots=True)
class PrefixTime:
    prefix: str
    tasks: int = 0
    wall: float = 0.0
    gpu: float = 0.0
    htod: int = 0
    dtoh: int = 0
    peak: int | None = None
    shared: bool = False

    @property
    def busy(self) -> float | None:
        """Share of the tasks' wall time the GPU worked for them (None: no wall time)."""
        return self.gpu / self.wall if self.wall > 0 else None

    def add(
        self,
        tasks: int,
        wall: float,
        gpu: float,
        htod: int,
        dtoh: int,
        peak: int | None,
        shared: bool,
    ) -> None:
        """Count more tasks: their figures summed, except the peak (the highest) and whether
        some task shared its worker's moments (any)."""
        self.tasks += int(tasks)
        self.wall += float(wall)
        self.gpu += float(gpu)
        self.htod += int(htod)
        self.dtoh += int(dtoh)
        if peak is not None:
            self.peak = max(self.peak or 0, int(peak))
        self.shared = self.shared or bool(shared)

    def row(self, span: str | None) -> list[Any]:
        """The figures as a usage event's row of ``span`` (:data:`.facts.ROW_FIELDS`)."""
        return [span if name == "span" else getattr(self, name) for name in ROW_FIELDS]


@dataclass(slots=True)
class Sources:
    """Which source each worker measures with, and why (its announcement)."""

    by_worker: dict[str, dict[str, Any]] = field(default_factory=dict)

    def note(self, msg: dict[str, Any]) -> None:
        self.by_worker[str(msg.get("worker"))] = msg

    @property
    def measuring(self) -> int:
        """Workers that measure GPU time."""
        return sum(1 for msg in self.by_worker.values() if msg.get("source"))

    def summary(self) -> str:
        """One line: the sources in use and their resolution, or why none."""
        if not self.by_worker:
            return "no worker has reported how it measures GPU time yet"
        said: dict[str, int] = {}
        for msg in self.by_worker.values():
            if msg.get("source"):
                res = msg.get("resolution") or 0
                text = f"{msg['source']} ({_resolution(res)} resolution)"
            else:
                text = str(msg.get("reason") or "not measured")
            said[text] = said.get(text, 0) + 1
        return "; ".join(f"{text}: {n} worker(s)" for text, n in said.items())


def _resolution(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.0f} ms"
    return f"{seconds:.1f} s"


def per_prefix(
    events: Iterable[tuple[float, dict[str, Any]]],
    start: float | None = None,
    stop: float | None = None,
    spans: set[str] | None = None,
) -> list[PrefixTime]:
    """Sum the usage events' rows per prefix, for tasks that ended between ``start`` and
    ``stop``, or belonging to ``spans``; most GPU seconds first. An event holds a worker's tasks
    of about a second: it counts where its last task ended, so that two cells never both count
    it (a task that ended in the second before a cell's first may be counted with that cell)."""
    found: dict[str, PrefixTime] = {}
    for _, msg in events:
        if msg.get("kind") != "usage":
            continue
        last = float(msg.get("last", 0.0))
        if (start is not None and last < start) or (stop is not None and last > stop):
            continue
        for raw in msg.get("rows", ()):
            figures = dict(zip(ROW_FIELDS, raw, strict=False))
            span, prefix = figures.pop("span"), figures.pop("prefix")
            if spans is not None and span not in spans:
                continue
            found.setdefault(prefix, PrefixTime(prefix)).add(**figures)
    return sorted(found.values(), key=lambda p: (-p.gpu, -p.wall, p.prefix))


def flushed(events: Iterable[tuple[float, dict[str, Any]]], token: str) -> int:
    """How many workers' ``flushed`` events with ``token`` the scheduler has received."""
    return sum(1 for _, msg in events if msg.get("kind") == "flushed" and msg.get("token") == token)


def sources_of(events: Iterable[tuple[float, dict[str, Any]]]) -> Sources:
    out = Sources()
    for _, msg in events:
        if msg.get("kind") == "source":
            out.note(msg)
    return out
