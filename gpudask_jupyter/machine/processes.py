"""One process, named for as long as it lives: its pid and its start time.

A pid is reused once its process is gone; the pid with the start time is not. Registry entries
are trusted only while the kernel that wrote them is that process, and a cluster's worker
processes are ended after a close only if they still are the ones it started.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

#: seconds within which two readings of a process's start time are the same start
START_TOLERANCE = 1.0


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), None if there is no such process.

    With the pid, this names one process: a pid is reused once its process is gone, the start
    time with it is not.
    """
    import psutil  # distributed's own dependency; imported here, not by the package

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:  # ended, not yet reaped by its parent
            return None
        return float(process.create_time())
    except (psutil.Error, OSError, ValueError, OverflowError):
        log.debug("no process %s", pid, exc_info=True)
        return None


def same_process(pid: int, started: float) -> bool:
    """Whether ``pid`` is still the process that started at ``started``."""
    now = process_started(pid)
    return now is not None and abs(now - started) < START_TOLERANCE
