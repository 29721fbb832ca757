"""The private parts of Python's standard library this package calls: multiprocessing's resource
tracker, ended before the kernel exits, and what the workers' fork server
(:mod:`..cluster.fork_server`) relies on beyond multiprocessing's documented means.

Seen working on CPython 3.11 to 3.14 (3.14 makes ``forkserver`` Linux's default start method;
distributed names its own, so the workers' start is unchanged).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

from .probes import usable
from .probing import NeedTuple, has_path, source_holds, takes

DISTRIBUTION = "python"

TRACKER = "multiprocessing.resource_tracker._resource_tracker's _lock, _fd and _pid"
LAUNCH = "multiprocessing.forkserver.ensure_running()"
COMMAND = "the fork server's command line (from multiprocessing.forkserver import main)"
ORIGINAL_DIR = "multiprocessing.process.ORIGINAL_DIR"
ACTIONS = "argparse.ArgumentParser._actions"
#: what launching the workers' fork server ahead needs of Python
FORK_SERVER = (LAUNCH, COMMAND, ORIGINAL_DIR)


def needs() -> list[NeedTuple]:
    """What this module calls, each with a check and what is done without it."""
    import argparse
    from multiprocessing import forkserver, process, resource_tracker

    def tracker() -> None:
        for name in ("_lock", "_fd", "_pid"):
            getattr(resource_tracker._resource_tracker, name)  # type: ignore[attr-defined]

    spawned = "a start's workers are spawned, as they were before the fork server"
    return [
        (
            TRACKER,
            tracker,
            "the resource tracker is left to end after the kernel, which can hold a kernel's "
            "shutdown for a few seconds",
        ),
        (LAUNCH, lambda: takes(forkserver.ensure_running), spawned),
        (
            COMMAND,
            lambda: source_holds(forkserver.ForkServer.ensure_running, FORK_SERVER_COMMAND),
            spawned,
        ),
        (ORIGINAL_DIR, lambda: has_path(process, "ORIGINAL_DIR"), spawned),
        (
            ACTIONS,
            lambda: has_path(argparse.ArgumentParser(add_help=False), "_actions"),
            "tab completion offers the subcommands, not their options",
        ),
    ]


def detach_resource_tracker() -> int | None:
    """Let go of this process's end of multiprocessing's resource tracker, as the tracker's own
    ``_stop`` does (closing that pipe tells the tracker to finish: it removes what was left
    registered, then exits): the tracker's pid, for the caller to wait on; None where none runs.
    Relies on ``resource_tracker._resource_tracker``'s ``_lock``, ``_fd`` and ``_pid``
    (private; probed): None where they are not there, and the tracker ends by itself."""
    from multiprocessing import resource_tracker

    if not usable(DISTRIBUTION, TRACKER):
        return None

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
#: runs ``python -c "from multiprocessing.forkserver import main; main(...)"``, after an
#: ``import sys`` from 3.14 on; probed): how a process tells its fork server among its children
FORK_SERVER_COMMAND = "from multiprocessing.forkserver import main"


def launch_fork_server() -> None:
    """Launch multiprocessing's fork server now, where none runs, without waiting for its
    preload: ``multiprocessing.forkserver.ensure_running`` (public in its module, not in the
    documentation; probed). The server takes this process's environment of this moment;
    the documented way, starting a process through it, would launch it whenever that thread got
    there and wait for its imports."""
    from multiprocessing import forkserver

    forkserver.ensure_running()


def original_dir() -> str | None:
    """The directory this process started in, as spawn hands it to a child
    (``multiprocessing.process.ORIGINAL_DIR``, not documented; probed); None where unknown."""
    from multiprocessing import process

    return getattr(process, "ORIGINAL_DIR", None)


def parser_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options and positionals ``parser`` knows, for tab completion: argparse keeps them in
    ``_actions`` (private; probed) and offers no public list; empty where it is gone."""
    if not usable(DISTRIBUTION, ACTIONS):
        return []
    return list(parser._actions)
