"""The private parts of Python's standard library this package calls: multiprocessing's resource
tracker, ended before the kernel exits.

(The workers launched ahead, :mod:`..cluster.worker_spawn`, still take spawn's own steps from
multiprocessing's modules; they are to be moved to public means.)
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

#: the library (its name on PyPI) and the releases these calls were checked on, lowest and
#: newest (:class:`.releases.Checked`)
CHECKED = ("python", "3.11", "3.11")


def detach_resource_tracker() -> int | None:
    """Let go of this process's end of multiprocessing's resource tracker, as the tracker's own
    ``_stop`` does (closing that pipe tells the tracker to finish: it removes what was left
    registered, then exits): the tracker's pid, for the caller to wait on; None where none runs.
    Relies on ``resource_tracker._resource_tracker``'s ``_lock``, ``_fd`` and ``_pid``
    (private; Python 3.11)."""
    from multiprocessing import resource_tracker

    tracker: Any = resource_tracker._resource_tracker  # type: ignore[attr-defined]
    with tracker._lock:
        fd, pid = tracker._fd, tracker._pid
        if fd is None or pid is None:
            return None
        tracker._fd = tracker._pid = None
        with contextlib.suppress(OSError):
            os.close(fd)
    return int(pid)
