"""The cores this process may use, and how many of them other processes keep busy.

The pinned copy is bound by the host's memcpy, so it wants one thread per free core. On a shared
workshop server the cores are not free: with eight busy processes on sixteen cores, sixteen copy
threads are preempted in turn, a thread that holds a pinned buffer stalls its DMA queue, and the
copy ran at 25 GB/s where eight threads ran at 37 GB/s. So the copy asks how busy the host is.

The answer comes from the per-core busy time in ``/proc/stat`` (cores of this process's affinity
only), minus this process's own CPU time, averaged over the time since the last question (at
least :data:`MIN_WINDOW`, at most :data:`MAX_WINDOW` ago): no sampling thread, a few tens of
microseconds per question, and no answer (None) the first time or after a long pause.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

MIN_WINDOW = 0.2  # seconds: /proc/stat counts in clock ticks (10 ms), so shorter is noise
MAX_WINDOW = 60.0  # seconds: older load says little about now
STAT = "/proc/stat"


def usable_cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_threads() -> int:
    """Copy threads on an idle host: all but two of the cores this process may run on, 2 to 16.
    memcpy is the bottleneck, and a transfer is short, so it may take the machine while it
    lasts."""
    return max(2, min(16, usable_cores() - 2))


@dataclass(frozen=True)
class Sample:
    when: float  # monotonic seconds
    busy: float  # CPU seconds the usable cores spent on anything but idle, since boot
    ours: float  # CPU seconds of this process, since it started


def _busy_seconds(text: str, cores: set[int], tick: int) -> float:
    busy = 0
    for line in text.splitlines():
        if not (line.startswith("cpu") and line[3:4].isdigit()):
            continue
        name, *values = line.split()
        if int(name[3:]) not in cores:
            continue
        ticks = [int(v) for v in values[:8]]  # guest time is counted in user time already
        busy += sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)  # idle, iowait
    return busy / tick


def sample() -> Sample | None:
    """Now, or None where ``/proc/stat`` cannot be read (not Linux)."""
    try:
        with open(STAT, encoding="ascii") as file:
            text = file.read()
        cores = set(os.sched_getaffinity(0))
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, AttributeError, ValueError):
        log.debug("no per-core CPU times here", exc_info=True)
        return None
    own = os.times()
    return Sample(time.monotonic(), _busy_seconds(text, cores, tick), own.user + own.system)


def others_busy(before: Sample, after: Sample) -> float:
    """Cores kept busy by other processes between two samples, on average."""
    elapsed = after.when - before.when
    if elapsed <= 0:
        return 0.0
    return max(0.0, ((after.busy - before.busy) - (after.ours - before.ours)) / elapsed)


class Load:
    """The load since the last question (see the module's docstring)."""

    def __init__(self) -> None:
        self._last: Sample | None = None
        self._estimate: float | None = None
        self._lock = threading.Lock()

    def others(self) -> float | None:
        now = sample()
        if now is None:
            return None
        with self._lock:
            last = self._last
            if last is not None and now.when - last.when < MIN_WINDOW:
                return self._estimate  # too soon to tell more: the last answer stands
            self._last = now
            stale = last is None or now.when - last.when > MAX_WINDOW
            self._estimate = None if stale or last is None else others_busy(last, now)
            return self._estimate


_load = Load()


def free_cores() -> int | None:
    """Usable cores other processes left free lately, or None when that is not known yet."""
    others = _load.others()
    if others is None:
        return None
    return max(0, usable_cores() - round(others))


def copy_threads(most: int | None = None) -> int:
    """Threads for the next copy: ``most`` (:func:`default_threads`), or fewer (never below 2)
    on a busy host."""
    most = default_threads() if most is None else most
    free = free_cores()
    if free is None:
        return most
    threads = max(2, min(most, free))
    if threads < most:
        log.debug("%d usable cores free lately: %d copy threads instead of %d", free, threads, most)
    return threads
