"""One process, named for as long as it lives: its pid and when it started, in a clock that
the wall clock cannot move.

A pid is reused once its process is gone; the pid with its start is not. Registry entries,
TLS folders and room leases are trusted only while the kernel that wrote them is that process,
and a cluster's worker processes are ended after a close only if they still are the ones it
started. The start is the one Linux keeps for the process, in clock ticks since boot
(``/proc/PID/stat``, field 22): an epoch time (psutil's ``create_time``) is that figure plus a
boot time read from the wall clock, so stepping the clock (NTP, a virtual machine resumed) moved
every live process's start and made a live kernel's files look left behind. Elsewhere (macOS)
the start is psutil's, in milliseconds, compared within :data:`START_TOLERANCE_MS`.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: where the start is not Linux's tick count: milliseconds two readings of one start may differ
START_TOLERANCE_MS = 1000
#: where ``/proc`` is read (a test seam, never changed by the package)
PROC = Path("/proc")


@dataclass(frozen=True)
class Stat:
    """What ``/proc/PID/stat`` says of a process: its parent, its start, whether it ended."""

    ppid: int
    start: int  # clock ticks since boot
    zombie: bool


def read_stat(pid: int) -> Stat | None:
    """``/proc/PID/stat`` of ``pid``; None where there is no such process (or no ``/proc``)."""
    try:
        text = (PROC / str(pid) / "stat").read_bytes().decode("ascii", "replace")
    except (OSError, ValueError):
        return None
    # the command name (field 2) is in parentheses and may itself hold spaces and parentheses
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return Stat(ppid=int(fields[1]), start=int(fields[19]), zombie=fields[0] in ("Z", "X"))
    except (IndexError, ValueError):
        log.debug("cannot read /proc/%s/stat: %r", pid, text[:200])
        return None


def _linux() -> bool:
    return sys.platform.startswith("linux")


def process_started(pid: int) -> int | None:
    """When process ``pid`` started, as an opaque whole number that, with the pid, names one
    process (see the module's docstring); None if there is no such process (or only a zombie)."""
    if _linux():
        found = read_stat(pid)
        return None if found is None or found.zombie else found.start
    import psutil  # distributed's own dependency; imported here, not by the package

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:  # ended, not yet reaped by its parent
            return None
        return round(float(process.create_time()) * 1000)
    except (psutil.Error, OSError, ValueError, OverflowError):
        log.debug("no process %s", pid, exc_info=True)
        return None


def same_start(first: int, second: int) -> bool:
    """Whether two readings of :func:`process_started` are the same start."""
    if _linux():
        return first == second
    return abs(first - second) <= START_TOLERANCE_MS


def same_process(pid: int, started: int) -> bool:
    """Whether ``pid`` is still the process that started at ``started``."""
    now = process_started(pid)
    return now is not None and same_start(now, started)


def parent_of(pid: int) -> int | None:
    """The parent of ``pid`` (None where there is no such process)."""
    if _linux():
        found = read_stat(pid)
        return None if found is None else found.ppid
    import psutil

    try:
        return int(psutil.Process(pid).ppid())
    except (psutil.Error, OSError):
        return None


def owner_uid(pid: int) -> int | None:
    """The account that owns process ``pid`` (None where there is no such process)."""
    import os

    try:
        return os.stat(PROC / str(pid)).st_uid if _linux() else _psutil_uid(pid)
    except OSError:
        return None


def _psutil_uid(pid: int) -> int | None:
    import psutil

    try:
        return int(psutil.Process(pid).uids().real)
    except (psutil.Error, OSError):
        return None


#: what Jupyter's server puts in a kernel's environment: the path of its notebook
SESSION_NAME = "JPY_SESSION_NAME"


def notebook_of(pid: int) -> str | None:
    """The notebook a kernel process of this user serves, by its file name, from the
    environment Jupyter's server started it with; None where it has none or it cannot be read
    (another user's process, a kernel started without a server, not Linux). Read from the
    process itself, so that no file another user can read names a notebook."""
    if not _linux():
        return None
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    prefix = SESSION_NAME.encode() + b"="
    for item in environ.split(b"\0"):
        if item.startswith(prefix):
            path = item[len(prefix) :].decode(errors="replace").strip()
            name = path.rstrip("/").rsplit("/", 1)[-1]
            return name[:80] or None
    return None


#: most generations :func:`descends_from` walks up (a kernel's workers are two or three below it)
MAX_GENERATIONS = 64


def descends_from(pid: int, ancestor: int) -> bool:
    """Whether ``ancestor`` is among the parents of ``pid``, at any depth (a worker forked from
    its kernel's fork server is the kernel's grandchild)."""
    for _ in range(MAX_GENERATIONS):
        parent = parent_of(pid)
        if parent is None or parent <= 0 or parent == pid:
            return False
        if parent == ancestor:
            return True
        pid = parent
    return False
