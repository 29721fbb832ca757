"""The cores this process may use, and how busy other processes keep them.

The cores it may use are its affinity, capped by its cgroup's CPU quota (a container's CPU
limit): a worker count or a thread count taken from ``os.cpu_count()`` would oversubscribe a
container. How busy they are comes from their busy time in ``/proc/stat`` minus this process's
own CPU time, between two :func:`sample` calls: what the other processes did, not this one. Small
files only, no sampling thread.
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

STAT = "/proc/stat"
CGROUPS = Path("/sys/fs/cgroup")


def affinity() -> int:
    """The cores this process may run on, by its affinity mask."""
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
    cores = affinity()
    limit = quota_cores()
    if limit is not None:
        cores = min(cores, max(1, math.ceil(limit)))
    return cores


@dataclass(frozen=True)
class CpuTimes:
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


def sample() -> CpuTimes | None:
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
    return CpuTimes(time.monotonic(), busy, own.user + own.system, _running(text))


def others_busy(before: CpuTimes, after: CpuTimes) -> float:
    """Cores kept busy by other processes between two samples, on average."""
    elapsed = after.when - before.when
    if elapsed <= 0:
        return 0.0
    return max(0.0, ((after.busy - before.busy) - (after.ours - before.ours)) / elapsed)
