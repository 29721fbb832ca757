"""Reading a small file that someone else may have named: never blocks, never reads much.

A path given by a user (``--scheduler-file``) or found in a shared directory (a registry entry)
may be a FIFO (opening it for reading waits for a writer, forever), a device (``/dev/zero`` never
ends), a directory or a huge file. The file is therefore opened without blocking and without
following a last symlink where asked, checked with ``fstat`` to be a regular file, and read up
to a limit; anything else is a :class:`NotReadable` whose message says what the path is.
"""

from __future__ import annotations

import os
import stat

MIB = 2**20


class NotReadable(OSError):
    """The path is not a regular file of at most the limit; the message says what it is."""


def kind(mode: int) -> str:
    """What a file of ``mode`` is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_regular(
    path: str | os.PathLike[str], limit: int, follow: bool = True
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` (at most ``limit`` of them) and its ``fstat``.

    ``FileNotFoundError`` and ``PermissionError`` pass through; :class:`NotReadable` for a
    directory, FIFO, device, socket, a symlink when ``follow`` is False, or a larger file.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if not follow and err.errno == getattr(os, "ELOOP", -1):
            raise NotReadable(f"{os.fspath(path)} is a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable(f"{os.fspath(path)} is {kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise NotReadable(
                f"{os.fspath(path)} has {info.st_size} bytes, more than the {limit} expected"
            )
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # grew after the fstat
            raise NotReadable(f"{os.fspath(path)} has more than the {limit} bytes expected")
        return data, info
    finally:
        os.close(fd)


def is_private(info: os.stat_result) -> bool:
    """Owned by this user, a regular file, and neither group nor others may read or write it."""
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    )
