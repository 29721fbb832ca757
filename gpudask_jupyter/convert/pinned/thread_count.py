"""How many copy threads the next pinned transfer takes: one per free core, at least two.

The pinned copy is bound by the host's memcpy, so it wants one thread per core; on a shared
workshop server the cores are not free, and a copy thread that is preempted while it holds a
pinned buffer stalls its DMA queue, so the copy takes the cores other processes leave free.
How busy they are is averaged over the time since the last transfer ended
(:func:`transfer_done`): what the other users' processes did between this kernel's transfers,
not what this kernel's own workers did during them. Without such a window (the first transfer,
or more than :data:`MAX_WINDOW` ago), the count of processes running at this instant answers
instead.
"""

from __future__ import annotations

import logging
import threading

from ...machine import cores as machine_cores
from ...machine.cores import CpuTimes

log = logging.getLogger(__name__)

MIN_WINDOW = 0.2  # seconds: /proc/stat counts in clock ticks (USER_HZ), so shorter is noise
MAX_WINDOW = 600.0  # seconds: older load says little about now


def default_threads(to_device: bool = True, cores: int | None = None) -> int:
    """Copy threads on an idle host, 2 to 16: all but two of the cores this process may run on
    (``cores``, :func:`~...machine.cores.usable_cores` unless given) host→device, all of them
    device→host, where each thread also faults its destination in. A transfer is short and
    memcpy is its bottleneck, so it may take the machine while it lasts."""
    cores = machine_cores.usable_cores() if cores is None else cores
    return max(2, min(16, cores - (2 if to_device else 0)))


class Load:
    """The load since the last transfer ended (see the module's docstring)."""

    def __init__(self) -> None:
        self._since: CpuTimes | None = None  # when the last transfer ended
        self._last: float | None = None  # the last answer measured over a window
        self._lock = threading.Lock()

    def others(self) -> float | None:
        """Cores other processes keep busy, or None where this cannot be read."""
        now = machine_cores.sample()
        if now is None:
            return None
        with self._lock:
            since = self._since
            window = None if since is None else now.when - since.when
            if window is not None and MIN_WINDOW <= window <= MAX_WINDOW:
                assert since is not None
                self._last = machine_cores.others_busy(since, now)
                return self._last
            if window is not None and window < MIN_WINDOW and self._last is not None:
                return self._last  # transfers back to back: the last measure stands
        return float(max(0, now.running - 1))  # this instant; the asking thread is one of them

    def transfer_done(self) -> None:
        now = machine_cores.sample()
        with self._lock:
            self._since = now


# per process: the cores this process's copies keep busy
_load = Load()


def transfer_done() -> None:
    """A transfer has ended: the next question measures the load from here."""
    _load.transfer_done()


def free_cores(cores: int | None = None) -> int | None:
    """Usable cores (``cores``, :func:`~...machine.cores.usable_cores` unless given) that other
    processes leave free, or None where that is not known. (Under a container's CPU limit, what
    others do on the cores outside it does not take from it.)"""
    others = _load.others()
    if others is None:
        return None
    cores = machine_cores.usable_cores() if cores is None else cores
    return max(0, min(cores, machine_cores.affinity() - round(others)))


def copy_threads(most: int | None = None, to_device: bool = True) -> int:
    """Threads for the next copy, at most ``most`` (a pool's size): :func:`default_threads` for
    the direction on an idle host, fewer (never below 2) on a busy one."""
    cores = (
        machine_cores.usable_cores()
    )  # read once: a container's limit takes a walk up its cgroups
    threads = default_threads(to_device, cores)
    most = threads if most is None else min(most, threads)
    free = free_cores(cores)
    if free is None:
        return most
    threads = max(2, min(most, free))
    if threads < most:
        log.debug("%d usable cores free: %d copy threads instead of %d", free, threads, most)
    return threads
