"""Whether a lease is its kernel's own: a lock the kernel holds for its lifetime.

A kernel that takes a lease first takes an exclusive ``flock`` on a lock file beside it, in its
account's folder, readable and writable by that account alone (mode 0600), and keeps the lock
until it ends. Whatever ends the kernel (its shutdown, SIGTERM, SIGKILL, the hub stopping the
server) the machine's kernel drops the lock with it; no other account can open the file, so no
other account can take the lock, or keep it held for a kernel that has gone.

Everyone else sees the lock in ``/proc/locks``: the machine's whole table of locks, readable by
every account where ``/proc`` hides other users' processes (``hidepid``), and listing the
holder's pid as the reader's PID namespace numbers it (0 where the holder is not visible). So
liveness is that lock, not ``/proc/PID`` or ``kill``: it holds under ``hidepid``, across PID
namespaces and after the kernel's pid went to another process.

A lease counts only where, besides its lock being held:

* in the reader's own PID namespace, the lock's holder is the pid the lease names (so a lock
  held by a ``sleep`` of the account makes no lease for somebody else's kernel), and where
  ``/proc`` shows that pid, it belongs to the lease's account and started when the lease says;
* in another namespace (a server in a container of its own), the holder's pid as the reader
  sees it is where its processes are found (:attr:`Proof.pid`), 0 where it cannot be seen.

A reader that is itself in a PID namespace below the machine's first sees in ``/proc/locks``
only the locks of processes of its own namespace (Linux filters the table). There a lease of
another namespace whose lock it cannot see counts as present, its processes unseen
(:mod:`.holding` splits among such holders what no known holder holds), while its kernel shows
itself: it touches its lock file every :data:`HEARTBEAT_EVERY` seconds, and a lock untouched for
:data:`STALE_AFTER` is a kernel gone (killed in its container, its lease left behind). A lease is
only ever one more kernel of its own account, so what a reader cannot verify costs the others at
most one more student, and a reader of the machine's first namespace (the host, another
student's server) still sees the truth.

Where ``/proc/locks`` cannot be read (not Linux, a sandbox), :func:`fallback_alive` says
whether the kernel lives from the process table, as before locks were used (logged once).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ...machine import processes

log = logging.getLogger(__name__)

#: the machine's table of file locks
LOCKS = "/proc/locks"
#: a lock file's mode: its account alone may open it, so no other account can hold its lock
LOCK_MODE = 0o600
LOCK_SUFFIX = ".lock"
#: where a process's PID namespace is named
PID_NAMESPACE = "/proc/self/ns/pid"
#: the machine's first PID namespace (the kernel's fixed PROC_PID_INIT_INO)
FIRST_NAMESPACE = 0xEFFFFFFC
#: seconds between a kernel's touches of its lock file (:func:`heartbeat`)
HEARTBEAT_EVERY = 30.0
#: a lock not touched for this long whose holder a reader cannot see is taken as a kernel gone:
#: a reader in a container cannot see another container's locks, and a kernel killed there
#: leaves its lease behind until its account's next kernel prunes it
STALE_AFTER = 4 * HEARTBEAT_EVERY

# per process: warned once per process
_warned = False


def pid_namespace() -> int:
    """This process's PID namespace (its inode number; 0 where it cannot be read)."""
    try:
        return os.stat(PID_NAMESPACE).st_ino
    except OSError:
        return 0


LockId = tuple[int, int, int]  # a file's device major, minor, and inode


def lock_table(path: str = LOCKS) -> dict[LockId, int] | None:
    """Every ``flock`` held on the machine: the locked file's (major, minor, inode) and its
    holder's pid in this namespace (0: not visible here); None where the table cannot be read."""
    try:
        with open(path, "rb") as handle:
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError as err:
        global _warned
        if not _warned:
            _warned = True
            log.info("room: %s cannot be read (%s); liveness comes from the processes", path, err)
        return None
    table: dict[LockId, int] = {}
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a request waiting for a lock, not a lock held
            continue
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue
        try:
            pid = int(fields[4])
            major, minor, inode = fields[5].split(":")
            table[(int(major, 16), int(minor, 16), int(inode))] = max(pid, 0)
        except ValueError:
            continue
    return table


def lock_path(lease_path: Path, suffix: str) -> Path:
    """The lock file of the lease at ``lease_path`` (whose name ends with ``suffix``)."""
    return lease_path.with_name(lease_path.name[: -len(suffix)] + LOCK_SUFFIX)


def lock_id(path: Path, uid: int) -> LockId | None:
    """The identity of the lock file ``path``, if it is one of ``uid`` alone: a regular file
    (not a link), owned by ``uid``, that no other account can open."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_uid != uid:
        return None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return None
    return (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)


@dataclass(frozen=True)
class Proof:
    """What the lock says of a lease: ``pid`` is its kernel as this process numbers it (0: in a
    namespace this process cannot see into); ``why`` says why the lease does not count ("":
    it counts)."""

    pid: int
    why: str = ""

    @property
    def counts(self) -> bool:
        return not self.why


def prove(
    lease_path: Path,
    suffix: str,
    uid: int,
    pid: int,
    started: int,
    namespace: int,
    table: dict[LockId, int],
) -> Proof:
    """Whether the lease at ``lease_path`` of account ``uid`` naming kernel ``pid`` (started at
    ``started``, in PID namespace ``namespace``) is its live kernel's (see the module)."""
    lock = lock_path(lease_path, suffix)
    ident = lock_id(lock, uid)
    if ident is None:
        if not os.path.lexists(lock):
            return Proof(0, "its kernel has ended (its lock file is gone)")
        return Proof(0, "its lock file is not a file of its own account alone")
    holder = table.get(ident)
    here = pid_namespace()
    elsewhere = bool(namespace and here and namespace != here)  # 0: taken for the reader's own
    if holder is None:
        if elsewhere and here != FIRST_NAMESPACE:  # its lock cannot be seen from here
            quiet = _quiet_for(lock)
            if quiet > STALE_AFTER:
                return Proof(0, f"its kernel has not shown itself for {quiet:.0f} s")
            return Proof(0)
        return Proof(0, "its kernel has ended (nothing holds its lock)")
    if elsewhere:
        return Proof(holder)
    if holder != pid:
        return Proof(0, f"its lock is held by process {holder}, not by the kernel {pid} it names")
    if not _exists(pid):  # a child forked from the kernel (the notebook's own) keeps the lock
        return Proof(0, f"its kernel has ended (process {pid} is gone)")
    owner = processes.owner_uid(pid)
    if owner is not None and owner != uid:
        return Proof(0, f"process {pid} belongs to uid {owner}")
    seen = processes.process_started(pid)
    if seen is not None and seen != started:
        return Proof(0, f"process {pid} is not the kernel that wrote it (started {seen})")
    return Proof(pid)


def _quiet_for(lock: Path) -> float:
    """Seconds since the kernel holding ``lock`` last touched it (:func:`heartbeat`)."""
    try:
        return time.time() - os.stat(lock).st_mtime
    except OSError:
        return float("inf")


def heartbeat(fd: int) -> None:
    """The kernel holding the lock open as ``fd`` shows it lives to readers that cannot see its
    lock: the lock file's time, now (every :data:`HEARTBEAT_EVERY` seconds)."""
    os.utime(fd)


def _exists(pid: int) -> bool:
    """Whether a process ``pid`` exists, even where ``/proc`` hides it (``kill`` answers "not
    permitted" for another account's process, "no such process" only for none)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fallback_alive(pid: int, started: int) -> bool:
    """Whether ``pid`` is still the process that started at ``started``, where no lock table can
    be read: a process ``/proc`` hides counts as alive (a lease is not taken from a kernel
    this user cannot see)."""
    if processes.same_process(pid, started):
        return True
    try:
        os.kill(pid, 0)
    except PermissionError:
        return processes.process_started(pid) is None
    except OSError:
        return False
    return False


def hold(folder: Path, stem: str) -> tuple[int, Path]:
    """Take this process's lock for the lease named ``stem`` in ``folder`` (this account's):
    made under a temporary name, locked, then renamed into place, so that no reader ever sees
    the lock file unlocked. Returns the descriptor (kept open for the kernel's lifetime; closed
    on exec) and the lock file's path."""
    final = folder / f"{stem}{LOCK_SUFFIX}"
    temporary = folder / f".{os.getpid()}-{secrets.token_hex(16)}.tmp"
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, LOCK_MODE)
    try:
        os.fchmod(fd, LOCK_MODE)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(temporary, final)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return fd, final


def let_go(fd: int, path: Path) -> None:
    """End a lock taken by :func:`hold`: its file removed, then the lock released."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    os.close(fd)


def held_here(path: Path) -> bool:
    """Whether some process holds the lock of the file ``path`` of this account (tried with a
    lock of our own, released at once)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
