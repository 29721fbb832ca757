"""The worker plugin that measures each task's GPU time, memory peak and bus bytes.

Installed by the kernel on every cluster it starts or joins, and on attached and gateway clusters
where the scheduler lets it (:func:`.kernel.install`). Shipped by value
(:func:`.kernel.ship_by_value`): it and the modules it uses import nothing of the package, so a
worker without the package runs it.

On the worker's event loop it notes each task's run as the task leaves ``executing`` (its compute
interval, taken back to the worker's own clock), and opens and closes an RMM statistics window
around it (:mod:`.memory_peaks`). Once a second it reads its source (:mod:`.sources`), joins the
readings to the tasks that ended before the source's ``covered`` time (:mod:`.timeline`), and
hands each task's figures to distributed's fine performance metrics with
``Worker.digest_metric(("execute", span, prefix, activity, unit), value)``: the Dask dashboard's
Fine Performance Metrics page then offers the units ``gpu-seconds`` and ``bytes`` itself, and
nothing of distributed's own seconds is moved. The same figures, summed per span and prefix for
the second, go to the scheduler as one event under :data:`TOPIC`, which the views read for the
window they show (a peak is a maximum there, not a sum). A source that is missing is said once,
in an event and the worker's log; no task waits for any of this.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from .facts import TOPIC
from .memory_peaks import Peaks
from .readings import PrefixTime
from .sources import Choice, Source, choose
from .timeline import Busy, Copy, TaskRun, attribute

log = logging.getLogger(__name__)

NAME = "gpudask-gpu-time"
#: fine performance metrics (activity, unit) this plugin adds under ("execute", span, prefix)
GPU_SECONDS = ("gpu", "gpu-seconds")
HTOD = ("host-to-device", "bytes")
DTOH = ("device-to-host", "bytes")
#: seconds a task's figures may wait for the source to cover its end (NVML's samples come late)
PATIENCE = 5.0


@dataclass(slots=True)
class _Ended:
    run: TaskRun
    peak: int | None
    shared: bool
    noted: float


class GpuTimePlugin(WorkerPlugin):
    """``wanted``: the ``gpu-time`` option (:data:`.facts.CHOICES`). ``make_source(worker)``
    replaces the choice (a test's stand-in, made in the worker)."""

    name = NAME
    idempotent = True

    def __init__(
        self,
        wanted: str = "auto",
        interval: float = 1.0,
        make_source: Callable[[Any], Choice] | None = None,
    ) -> None:
        self.wanted = wanted
        self.interval = interval
        self.make_source = make_source

    # -- lifecycle ---------------------------------------------------------------------------

    def setup(self, worker: Any) -> None:
        from tornado.ioloop import PeriodicCallback

        self.worker = worker
        self._running: dict[str, list[Any]] = {}
        self._ended: list[_Ended] = []
        self._busy: list[Busy] = []
        self._copies: list[Copy] = []
        try:
            choice = self.make_source(worker) if self.make_source else choose(self.wanted)
        except Exception as err:
            log.warning("GPU time cannot be measured on this worker", exc_info=True)
            choice = Choice(None, f"GPU time is not measured: {err}")
        self.source: Source | None = choice.source
        self._peaks = Peaks(choice.rmm)
        self.reason = choice.reason
        log.info("GPU time on this worker: %s", self.reason)
        worker.log_event(TOPIC, self._announcement())
        self._callback = PeriodicCallback(self.tick, self.interval * 1000)
        worker.periodic_callbacks[NAME] = self._callback
        self._callback.start()

    def teardown(self, worker: Any) -> None:
        self._callback.stop()
        worker.periodic_callbacks.pop(NAME, None)
        try:
            self.tick(final=True)
        finally:
            if self.source is not None:
                self.source.close()

    def _announcement(self) -> dict[str, Any]:
        return {
            "kind": "source",
            "worker": self.worker.address,
            "source": None if self.source is None else self.source.name,
            "resolution": None if self.source is None else self.source.resolution,
            "reason": self.reason,
        }

    # -- tasks -------------------------------------------------------------------------------

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if self.source is None:  # nothing measures here (no GPU): the announcement said why
            return
        if finish == "executing":
            shared = bool(self._running)
            for other in self._running.values():
                other[0] = True
            # the offset distributed adds to the task's times is the one of this moment (the
            # task starts now); a heartbeat may change it before the task ends. The moment
            # itself keeps the task's readings from being pruned while it runs.
            self._running[str(key)] = [shared, self._delay(), time.time()]
            self._peaks.begin()
        elif start == "executing":
            shared, delay, _ = self._running.pop(str(key), [False, self._delay(), 0.0])
            peak = self._peaks.end()
            ts = self.worker.state.tasks.get(key)
            interval = _compute_interval(ts)
            if interval is None:
                return
            run = TaskRun(str(key), ts.prefix, ts.span_id, interval[0] - delay, interval[1] - delay)
            self._ended.append(_Ended(run, peak, shared, time.time()))

    def _delay(self) -> float:
        return float(getattr(self.worker, "scheduler_delay", 0.0) or 0.0)

    # -- once a second -----------------------------------------------------------------------

    def tick(self, final: bool = False) -> None:
        if self.source is None:
            return
        try:
            self._tick(self.source, final)
        except Exception:
            log.warning("GPU time of this worker's tasks was not measured", exc_info=True)
            self._ended.clear()

    def _take_reading(self, source: Source) -> float:
        """``source``'s new readings kept; the time up to which they are complete."""
        reading = source.read()
        self._busy.extend(reading.busy)
        self._copies.extend(reading.copies)
        return reading.covered

    def _tick(self, source: Source, final: bool) -> None:
        covered = self._take_reading(source)
        now = time.time()
        ready = [
            e for e in self._ended if final or e.run.stop <= covered or now - e.noted > PATIENCE
        ]
        if not ready:
            self._prune()
            return
        self._ended = [e for e in self._ended if e not in ready]
        runs = [e.run for e in ready]
        # the tasks still waiting share moments with these: they take their part too
        waiting = [e.run for e in self._ended]
        found = attribute(runs + waiting, self._busy, self._copies)
        rows: dict[tuple[str | None, str], PrefixTime] = {}
        for e in ready:
            run = e.run
            usage = found.by_task[run.key]
            self._digest(run, usage.gpu_seconds, usage.htod, usage.dtoh)
            row = rows.setdefault((run.span, run.prefix), PrefixTime(run.prefix))
            row.add(
                1, run.stop - run.start, usage.gpu_seconds, usage.htod, usage.dtoh, e.peak, e.shared
            )
        self._prune()
        self.worker.log_event(
            TOPIC,
            {
                "kind": "usage",
                "worker": self.worker.address,
                "source": source.name,
                "first": min(r.start for r in runs),
                "last": max(r.stop for r in runs),
                "rows": [row.row(span) for (span, _), row in rows.items()],
            },
        )

    def _digest(self, run: TaskRun, seconds: float, htod: int, dtoh: int) -> None:
        if run.span is None:  # distributed's spans extension takes metrics with a span only
            return
        for (activity, unit), value in ((GPU_SECONDS, seconds), (HTOD, htod), (DTOH, dtoh)):
            if value:
                self.worker.digest_metric(("execute", run.span, run.prefix, activity, unit), value)

    def _prune(self) -> None:
        """Readings older than every task still waiting or still running are done with (a
        task's first copy, read while it runs, waits for its end)."""
        starts = [e.run.start for e in self._ended] + [r[2] for r in self._running.values()]
        oldest = min(starts, default=time.time()) - 1.0
        self._busy = [b for b in self._busy if b.end >= oldest]
        self._copies = [c for c in self._copies if c.start >= oldest]


def _compute_interval(ts: Any) -> tuple[float, float] | None:
    if ts is None:
        return None
    for entry in reversed(getattr(ts, "startstops", ())):
        if entry.get("action") == "compute":
            return float(entry["start"]), float(entry["stop"])
    return None


async def flush(dask_worker: Any = None, patience: float = 3.0, token: str = "") -> bool:
    """Run on a worker (``Client.run``): wait until its source covers now (at most ``patience``
    seconds), then hand over every ended task's figures, followed by a ``flushed`` event naming
    ``token``: the worker's events reach the scheduler in order, in its next batch, so once that
    event is there, so are the figures before it (:func:`..readings.flushed`). False: the
    plugin is not there."""
    import asyncio

    plugin = getattr(dask_worker, "plugins", {}).get(NAME)
    if plugin is None:
        return False
    until = time.time()
    deadline = time.monotonic() + patience
    source = plugin.source
    while source is not None and time.monotonic() < deadline:
        if plugin._take_reading(source) >= until:
            break
        await asyncio.sleep(0.1)
    plugin.tick(final=True)
    if token:
        dask_worker.log_event(TOPIC, {"kind": "flushed", "token": token})
    return True
