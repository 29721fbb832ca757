"""Owner-only shared memory between the kernel and the Dask workers of this machine.

A segment is a file in :data:`DIRECTORY` (``/dev/shm``, a tmpfs: the bytes never touch a disk),
created with ``O_EXCL`` and mode 0600, so only this user's processes can open it. Its name says
who made it: ``gpudask-shm-<pid>-<process start>-<random token>-<n>``. The process that creates
a segment removes it when the transfer ends, on success, failure or Ctrl-C (:class:`Segments`);
a kernel that was killed cannot, so every use first removes the segments of processes that no
longer run (:func:`remove_stale`). A pid alone could have been reused by another process since,
so the start time of the process is part of the name and is compared too.

Bytes go in and out with ``pwrite`` / ``preadv`` rather than through a mapping: a write through a
mapping of a tmpfs that has run out of space kills the process with SIGBUS, a ``pwrite`` fails
with ``ENOSPC``, which becomes an error the user can read. Only a GPU worker maps a segment
(read-only, once it is complete), to feed its pinned pipeline without a copy.

Containers often give ``/dev/shm`` only 64 MiB: :func:`budget` says how much one transfer may
use at once, from the space free there and the ``distribute-shm-limit`` option.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import secrets
import threading
from collections.abc import Iterator
from typing import Any

from ... import config, lifecycle

log = logging.getLogger(__name__)

DIRECTORY = "/dev/shm"
SEGMENT_PREFIX = "gpudask-shm-"
ROUTE = "shared memory"  # the route's name in the transfer report
_LARGEST_IO = 1 << 30  # Linux moves at most about 2 GiB per read or write call
_FREE_SHARE = 0.75  # of the free space: the rest is left to the other users of /dev/shm


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks after boot, from /proc), or None if none runs."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: fields follow the last ')'
    fields = text[text.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def owner_tag(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{process_start(pid) or 0}"


def usable(directory: str | None = None) -> str | None:
    """Why shared memory cannot be used here, or None."""
    directory = directory or DIRECTORY
    if not os.path.isdir(directory):
        return f"{directory} does not exist"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"{directory} is not writable"
    if process_start(os.getpid()) is None:
        return "/proc is not readable (needed to find segments left by a killed kernel)"
    return None


def budget(directory: str | None = None) -> int:
    """Bytes one transfer may keep in shared memory at once: three quarters of what is free,
    at most the ``distribute-shm-limit`` option (0: no limit of its own)."""
    stats = os.statvfs(directory or DIRECTORY)
    free = int(stats.f_bavail * stats.f_frsize * _FREE_SHARE)
    limit = int(config.get("distribute-shm-limit"))
    return min(free, limit) if limit else free


def _is_stale(name: str) -> bool:
    """Whether segment ``name`` belongs to a process that no longer runs."""
    parts = name[len(SEGMENT_PREFIX) :].split("-")
    if len(parts) < 3 or not parts[0].isdigit():
        return False
    return process_start(int(parts[0])) != parts[1]


def remove_stale(directory: str | None = None) -> list[str]:
    """Remove this user's segments whose kernel was killed; returns their names."""
    directory = directory or DIRECTORY
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        log.debug("cannot list %s", directory, exc_info=True)
        return removed
    uid = os.getuid()
    for entry in entries:
        if not entry.name.startswith(SEGMENT_PREFIX) or not _is_stale(entry.name):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            os.unlink(entry.path)
        except FileNotFoundError:
            continue
        except OSError:
            log.debug("could not remove the stale segment %s", entry.path, exc_info=True)
            continue
        removed.append(entry.name)
    if removed:
        log.info("removed %d shared-memory segments of a killed kernel", len(removed))
    return removed


def _exactly(call: Any, fd: int, view: memoryview, offset: int, what: str) -> None:
    """Run ``pwrite``/``preadv``-like ``call`` until all of ``view`` has moved."""
    done = 0
    while done < len(view):
        part = view[done : done + _LARGEST_IO]
        moved = call(fd, part, offset + done)
        if moved <= 0:
            raise OSError(f"{what} moved no bytes at offset {offset + done}")
        done += moved


def _pread(fd: int, view: memoryview, offset: int) -> int:
    return os.preadv(fd, [view], offset)


def write_at(fd: int, data: Any, offset: int) -> None:
    """Write the bytes of the contiguous array ``data`` at ``offset`` of file ``fd``."""
    _exactly(os.pwrite, fd, memoryview(data).cast("B"), offset, "writing shared memory")


def read_at(fd: int, into: Any, offset: int) -> None:
    """Fill the contiguous, writable array ``into`` from ``offset`` of file ``fd``."""
    _exactly(_pread, fd, memoryview(into).cast("B"), offset, "reading shared memory")


def unlink(path: str) -> None:
    """Remove a segment that may be gone already (the kernel and a worker may both try)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def open_fd(path: str, writable: bool) -> int:
    """A descriptor of a segment, closed on exec; the caller closes it."""
    return os.open(path, (os.O_WRONLY if writable else os.O_RDONLY) | os.O_CLOEXEC)


@contextlib.contextmanager
def opened(path: str, writable: bool) -> Iterator[int]:
    fd = open_fd(path, writable)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def mapped(path: str, size: int) -> Iterator[mmap.mmap]:
    """A read-only mapping of a complete segment. Its pages are mapped as they are first read,
    by the threads of the pinned pipeline in parallel (``MAP_POPULATE`` would do it in one)."""
    with opened(path, writable=False) as fd:
        mapping = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    try:
        yield mapping
    finally:
        try:
            mapping.close()
        except BufferError:  # a view is still alive: the mapping goes when it does
            log.debug("a view of %s outlived its use", path, exc_info=True)


class Segments:
    """The segments of one transfer; every one is removed when the ``with`` block exits."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory or DIRECTORY
        self._stem = f"{SEGMENT_PREFIX}{owner_tag()}-{secrets.token_hex(8)}"
        self._count = 0
        self._paths: set[str] = set()
        self._lock = threading.Lock()

    def __enter__(self) -> Segments:
        remove_stale(self.directory)
        # a SIGTERM in the middle of a transfer ends the process before __exit__ runs
        lifecycle.on_unload(remove_own, lifecycle.MEMORY)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create(self, suffix: str = "") -> str:
        """A new empty segment's path; written with :func:`write_at` (by its owner or a worker)."""
        with self._lock:
            self._count += 1
            path = os.path.join(self.directory, f"{self._stem}-{self._count}{suffix}")
            self._paths.add(path)
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600))
        return path

    def remove(self, path: str) -> None:
        with self._lock:
            self._paths.discard(path)
        unlink(path)

    def close(self) -> None:
        with self._lock:
            paths, self._paths = list(self._paths), set()
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError:
                log.warning("could not remove the shared-memory segment %s", path, exc_info=True)


def remove_own(directory: str | None = None) -> list[str]:
    """Remove every segment this process made, without waiting for the transfers that use them
    (for the closers of ``%unload_ext`` and SIGTERM, which may interrupt one on this thread:
    an open descriptor stays valid, and the space is given back once the last one is closed)."""
    directory = directory or DIRECTORY
    mine = f"{SEGMENT_PREFIX}{owner_tag()}-"
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(mine)]
    except OSError:
        log.debug("cannot list %s", directory, exc_info=True)
        return removed
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, name))
            removed.append(name)
    return removed


def ours(directory: str | None = None) -> list[str]:
    """Names of the segments of this package present now (for tests and diagnostics)."""
    try:
        return sorted(n for n in os.listdir(directory or DIRECTORY) if n.startswith(SEGMENT_PREFIX))
    except OSError:
        log.debug("cannot list %s", directory or DIRECTORY, exc_info=True)
        return []
