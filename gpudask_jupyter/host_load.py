"""The cores this process may use, and how many of them other processes keep busy.

The pinned copy is bound by the host's memcpy, so it wants one thread per free core. On a shared
workshop server the cores are not free: with eight busy processes on sixteen cores, fourteen copy
threads are preempted in turn, a thread that holds a pinned buffer stalls its DMA queue, and the
copy ran at 25 GB/s where eight threads ran at 37 GB/s. So the copy asks how busy the host is.

The cores it may use are its affinity, capped by its cgroup's CPU quota (a container's CPU
limit). How busy they are comes from their busy time in ``/proc/stat``, minus this process's own
CPU time, averaged over the time since the last transfer ended (:func:`transfer_done`): what
the other users' processes did between this kernel's transfers, not what this kernel's own
workers did during them. Without such a window (the first transfer, or more than
:data:`MAX_WINDOW` ago), the count of processes running at this instant answers instead. No
sampling thread; a question costs a few tens of microseconds.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MIN_WINDOW = 0.2  # seconds: /proc/stat counts in clock ticks (10 ms), so shorter is noise
MAX_WINDOW = 600.0  # seconds: older load says little about now
STAT = "/proc/stat"
CGROUPS = Path("/sys/fs/cgroup")


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _quota(line: str) -> float | None:
    """Cores a cgroup v2 ``cpu.max`` line allows (None: no limit)."""
    limit, _, period = line.strip().partition(" ")
    if limit == "max" or not period:
        return None
    return int(limit) / int(period)


def quota_cores(root: Path = CGROUPS, membership: str = "/proc/self/cgroup") -> float | None:
    """The CPU quota of this process's cgroup and its parents (cgroup v2), the smallest; None
    without one."""
    try:
        lines = Path(membership).read_text().splitlines()
    except OSError:
        return None
    found: float | None = None
    for line in lines:
        if not line.startswith("0::"):
            continue
        group = root / line[3:].strip().lstrip("/")
        for directory in (group, *group.parents):
            if not directory.is_relative_to(root):
                break
            try:
                limit = _quota((directory / "cpu.max").read_text())
            except (OSError, ValueError):
                continue
            if limit is not None:
                found = limit if found is None else min(found, limit)
    return found


def usable_cores() -> int:
    """The cores this process may run on: its affinity, capped by its container's CPU limit."""
    cores = _affinity()
    limit = quota_cores()
    if limit is not None:
        cores = min(cores, max(1, math.ceil(limit)))
    return cores


def default_threads(to_device: bool = True, cores: int | None = None) -> int:
    """Copy threads on an idle host, 2 to 16: all but two of the cores this process may run on
    (``cores``, :func:`usable_cores` unless given) host→device, all of them device→host. memcpy
    is the bottleneck, and a transfer is short, so it may take the machine while it lasts.
    Device→host each thread also faults its destination in, work in the kernel that gains from
    every core: on 16 idle cores of an H200 host, with the old ring of 4 × 4 MiB per thread, 16
    threads brought 2 GiB back at 30.4 GB/s against 26.1 with 14, while host→device 14 threads
    (46.1 GB/s) beat 16 (43.6). With the ring of 2 × 4 MiB the two counts were within each
    other's spread both ways (host→device 51.6 and 52.1 GB/s, device→host 35.3 and 34.9)."""
    cores = usable_cores() if cores is None else cores
    return max(2, min(16, cores - (2 if to_device else 0)))


@dataclass(frozen=True)
class Sample:
    when: float  # monotonic seconds
    busy: float  # CPU seconds the usable cores spent on anything but idle, since boot
    ours: float  # CPU seconds of this process, since it started
    running: int  # processes running or runnable at this instant, this one included


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


def _running(text: str) -> int:
    for line in text.splitlines():
        if line.startswith("procs_running "):
            return int(line.split()[1])
    return 1


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
    busy = _busy_seconds(text, cores, tick)
    return Sample(time.monotonic(), busy, own.user + own.system, _running(text))


def others_busy(before: Sample, after: Sample) -> float:
    """Cores kept busy by other processes between two samples, on average."""
    elapsed = after.when - before.when
    if elapsed <= 0:
        return 0.0
    return max(0.0, ((after.busy - before.busy) - (after.ours - before.ours)) / elapsed)


class Load:
    """The load since the last transfer ended (see the module's docstring)."""

    def __init__(self) -> None:
        self._since: Sample | None = None  # when the last transfer ended
        self._last: float | None = None  # the last answer measured over a window
        self._lock = threading.Lock()

    def others(self) -> float | None:
        """Cores other processes keep busy, or None where this cannot be read."""
        now = sample()
        if now is None:
            return None
        with self._lock:
            since = self._since
            window = None if since is None else now.when - since.when
            if window is not None and MIN_WINDOW <= window <= MAX_WINDOW:
                assert since is not None
                self._last = others_busy(since, now)
                return self._last
            if window is not None and window < MIN_WINDOW and self._last is not None:
                return self._last  # transfers back to back: the last measure stands
        return float(max(0, now.running - 1))  # this instant; the asking thread is one of them

    def transfer_done(self) -> None:
        now = sample()
        with self._lock:
            self._since = now


_load = Load()


def transfer_done() -> None:
    """A transfer has ended: the next question measures the load from here."""
    _load.transfer_done()


def free_cores(cores: int | None = None) -> int | None:
    """Usable cores (``cores``, :func:`usable_cores` unless given) other processes leave free,
    or None where that is not known. (Under a container's CPU limit, what others do on the cores
    outside it does not take from it.)"""
    others = _load.others()
    if others is None:
        return None
    cores = usable_cores() if cores is None else cores
    return max(0, min(cores, _affinity() - round(others)))


def copy_threads(most: int | None = None, to_device: bool = True) -> int:
    """Threads for the next copy, at most ``most`` (a pool's size): :func:`default_threads` for
    the direction on an idle host, fewer (never below 2) on a busy one."""
    cores = usable_cores()  # read once: a container's limit takes a walk up its cgroups
    threads = default_threads(to_device, cores)
    most = threads if most is None else min(most, threads)
    free = free_cores(cores)
    if free is None:
        return most
    threads = max(2, min(most, free))
    if threads < most:
        log.debug("%d usable cores free: %d copy threads instead of %d", free, threads, most)
    return threads
