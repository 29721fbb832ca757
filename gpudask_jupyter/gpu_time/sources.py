"""Where a process's GPU time is read from: CUPTI's activity records, or NVML's per-process
utilisation samples. One source per process, chosen by :func:`choose`; each says its name and
its resolution, and why a better one is not used.

CUPTI (``cupti-python``, the optional ``gpu-time`` extra) gives every kernel's start and end and
every copy's bytes and direction, to the microsecond, at a cost per kernel launch. NVML gives, for
each of the driver's sampling periods (a sixth of a second to a second, by GPU), the share of the
period in which a kernel of the process ran: coarse, free, and without bytes. Timestamps of both
are turned into seconds on this process's wall clock, the clock of Dask's task intervals.

This module imports nothing of the package: the worker plugin that uses it is shipped by value to
workers that may not have the package installed. The libraries are imported when a source is
made, and each source takes the library as an argument, so that a test can drive it with
records and samples of its own.
"""

from __future__ import annotations

import logging
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .timeline import Busy, Copy

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Reading:
    """What a source saw since its last reading, complete up to ``covered`` (seconds)."""

    busy: list[Busy] = field(default_factory=list)
    copies: list[Copy] = field(default_factory=list)
    covered: float = 0.0


class Source(Protocol):
    name: str
    """In words, for the views: "CUPTI" or "NVML samples"."""
    resolution: float
    """Seconds: the smallest span the source tells apart."""

    def read(self) -> Reading: ...

    def close(self) -> None: ...


# -- CUPTI ---------------------------------------------------------------------------------------


class CuptiSource:
    """Kernel and copy records of this process, from CUPTI's activity API. ``cupti`` is
    ``cupti.cupti`` (or a stand-in with the same calls). CUPTI hands full buffers to a callback
    on its own thread; :meth:`read` flushes what is pending and takes what has come."""

    name = "CUPTI"
    resolution = 1e-6

    def __init__(self, cupti: Any) -> None:
        self._cupti = cupti
        self._lock = threading.Lock()
        self._records: list[Any] = []
        kinds = cupti.ActivityKind
        self._kinds = (kinds.CONCURRENT_KERNEL, kinds.MEMCPY)
        copy = cupti.ActivityMemcpyKind
        self._directions = {int(copy.HTOD): "htod", int(copy.DTOH): "dtoh"}
        self._kernel = int(kinds.CONCURRENT_KERNEL)
        self._memcpy = int(kinds.MEMCPY)
        for kind in self._kinds:
            cupti.activity_enable(kind)
        cupti.activity_register_callbacks(self._requested, self._completed)

    @staticmethod
    def _requested() -> tuple[int, int]:
        return 4 << 20, 0

    def _completed(self, activities: list[Any]) -> None:
        with self._lock:
            self._records.extend(activities)

    def read(self) -> Reading:
        self._cupti.activity_flush_all(0)
        now = time.time()
        # CUPTI's clock, in ns, against the wall clock at the same moment
        offset = self._cupti.get_timestamp() / 1e9 - time.time()
        with self._lock:
            records, self._records = self._records, []
        out = Reading(covered=now)
        for r in records:
            kind = int(r.kind)
            if kind == self._kernel:
                out.busy.append(Busy(r.start / 1e9 - offset, r.end / 1e9 - offset))
            elif kind == self._memcpy:
                direction = self._directions.get(int(r.copy_kind))
                if direction is not None:
                    out.copies.append(Copy(r.start / 1e9 - offset, int(r.bytes), direction))  # type: ignore[arg-type]
        return out

    def close(self) -> None:
        for kind in self._kinds:
            try:
                self._cupti.activity_disable(kind)
            except Exception:
                log.debug("CUPTI activity %s was not disabled", kind, exc_info=True)
        self._cupti.activity_flush_all(1)


# -- NVML ----------------------------------------------------------------------------------------

#: a sample's period where nothing better is known (the driver's usual 1/6 s)
DEFAULT_PERIOD = 1 / 6

Sampler = Callable[[int], list[tuple[int, int, float]]]
"""``since`` (µs) -> ``(pid, timestamp µs, SM busy %)`` per sample newer than it."""


class NvmlSource:
    """This process's utilisation samples from NVML on the GPU it computes on. ``sampler`` is
    :func:`nvml_sampler`'s result (or a stand-in).

    NVML answers a call with at most one sample per process, whose value is the share of the
    time since the caller's last seen stamp that a kernel of the process ran (seen on an H200:
    read once, a while after a kernel began, it gave one sample of the kernel's share of that
    while). A sample therefore covers the time since the one before it, not one period, and a
    source read once a second would see only that second's average. So a thread of the source
    asks every ``poll`` seconds, a fraction of the driver's period (a fifth of a second there),
    and :meth:`read` hands over what it gathered: busy levels of about one period each."""

    name = "NVML samples"

    def __init__(self, sampler: Sampler, pid: int | None = None, poll: float = 0.05) -> None:
        self._sample = sampler
        self._pid = os.getpid() if pid is None else pid
        self._since = int(time.time() * 1e6)
        self._gaps: list[float] = []
        self._lock = threading.Lock()
        self._gathered: list[Busy] = []
        self.resolution = DEFAULT_PERIOD
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._poll, args=(poll,), name="gpudask-nvml-samples", daemon=True
        )
        self._thread.start()

    def _poll(self, seconds: float) -> None:
        while not self._stopped.wait(seconds):
            try:
                self._gather()
            except Exception:  # the next call may answer; read() says nothing is missing
                log.debug("NVML's samples were not read", exc_info=True)

    def _gather(self) -> None:
        with self._lock:
            found = sorted(
                (stamp, busy)
                for pid, stamp, busy in self._sample(self._since)
                if pid == self._pid and stamp > self._since
            )
            for stamp, busy in found:
                gap = (stamp - self._since) / 1e6
                if gap < 1:  # asked often enough: the driver's period
                    self._gaps = [*self._gaps[-49:], gap]
                    self.resolution = statistics.median(self._gaps)
                if busy > 0:
                    self._gathered.append(
                        Busy(self._since / 1e6, stamp / 1e6, min(1.0, busy / 100))
                    )
                self._since = stamp

    def read(self) -> Reading:
        now = time.time()
        self._gather()
        with self._lock:
            busy, self._gathered = self._gathered, []
            since = self._since / 1e6
        # the sample of a period comes at its end: up to a period or so later, nothing is
        # missing that a sample will still add
        return Reading(busy=busy, covered=max(since, now - 2 * self.resolution))

    def close(self) -> None:
        self._stopped.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)


def nvml_sampler(device: str | int) -> Sampler:
    """NVML's per-process samples of ``device`` (a UUID or an index), through the package's one
    NVML per process (a worker without the package has no NVML source)."""
    # lazy: this module travels by value to workers, where the package may not be installed
    from gpudask_jupyter.machine import nvml

    return lambda since: nvml.process_samples(device, since)


# -- choosing ------------------------------------------------------------------------------------


@dataclass(slots=True)
class Choice:
    source: Source | None
    reason: str
    """Why this source and not a better one (or why none), in words."""
    rmm: Any = None
    """The RMM module memory peaks are read from (None: the process's own, where imported);
    a stand-in's, in tests."""


def this_device() -> str | int:
    """The GPU this process computes on: the first of ``CUDA_VISIBLE_DEVICES`` (dask-cuda sets it
    per worker), else GPU 0."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if not visible:
        return 0
    return int(visible) if visible.isdigit() else visible


def choose(wanted: str = "auto") -> Choice:
    """The best source of ``wanted`` (:data:`.facts.CHOICES`) this process has."""
    if wanted == "off":
        return Choice(None, "GPU time is not measured (the gpu-time option is off)")
    why_not_cupti = ""
    if wanted in ("auto", "cupti"):
        try:
            from cupti import cupti  # type: ignore[import-not-found]

            return Choice(CuptiSource(cupti), "CUPTI activity records")
        except ImportError:
            why_not_cupti = "cupti-python is not installed"
        except Exception as err:  # a CUPTI that cannot trace here (another profiler, a driver)
            log.info("CUPTI cannot trace this process", exc_info=True)
            why_not_cupti = f"CUPTI cannot trace here ({err})"
        if wanted == "cupti":
            return Choice(None, f"GPU time is not measured: {why_not_cupti}")
    try:
        sampler = nvml_sampler(this_device())
        sampler(int(time.time() * 1e6))  # NVML_ERROR_NOT_SUPPORTED shows here
    except Exception as err:
        log.info("NVML gives no per-process samples here", exc_info=True)
        return Choice(
            None,
            f"GPU time is not measured: NVML gives no per-process samples ({err})"
            + (f"; {why_not_cupti}" if why_not_cupti else ""),
        )
    reason = "NVML per-process samples" + (f" ({why_not_cupti})" if why_not_cupti else "")
    return Choice(NvmlSource(sampler), reason)
