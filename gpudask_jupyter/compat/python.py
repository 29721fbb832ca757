"""The private parts of Python's standard library this package calls: multiprocessing's resource
tracker, ended before the kernel exits. (The workers' fork server, :mod:`..cluster.fork_server`,
uses multiprocessing's public means alone.)
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


#: what the command line of multiprocessing's fork server holds (``forkserver.ensure_running``
#: runs ``python -c "from multiprocessing.forkserver import main; main(...)"``; Python 3.11): how
#: a process tells its fork server among its children
FORK_SERVER_COMMAND = "from multiprocessing.forkserver import main"


def launch_fork_server() -> None:
    """Launch multiprocessing's fork server now, where none runs, without waiting for its
    preload: ``multiprocessing.forkserver.ensure_running`` (public in its module, not in the
    documentation; Python 3.11). The server takes this process's environment of this moment;
    the documented way, starting a process through it, would launch it whenever that thread got
    there and wait for its imports."""
    from multiprocessing import forkserver

    forkserver.ensure_running()
