"""The room's leases: one small JSON file per kernel that holds a share of this machine's GPUs.

The leases live in one directory every local user can write (``room-dir``, sticky like ``/tmp``
so nobody can remove another's file, except its owner or root), so that every student's kernel
sees every other's. Nothing in it is trusted: a lease counts only if it is a regular file of at
most :data:`MAX_LEASE` bytes, parses field by field, is owned by the uid it names (nobody can
make a lease in another user's name), and its kernel is still the process that wrote it (pid and
start time, as the registry checks). Anything else is ignored with a log line; a dead lease of
this user is removed. So no planted, corrupt, huge or foreign file blocks a start.

Choosing and writing happen under an advisory lock (``room.lock``) so that thirty starts in the
same second see each other's leases. The lock is taken with a deadline: a user who holds it for
ever delays the others by :data:`LOCK_WAIT` seconds, then they choose without it (logged).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import pwd
import stat
import time
import uuid as uuidlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...machine import processes
from ...machine.small_files import NotReadable, read_regular

log = logging.getLogger(__name__)

#: the lease format; a file of another version is ignored
VERSION = 1
#: holders of one GPU a plan names (a lease stays far below :data:`MAX_LEASE`)
MAX_PLANNED = 256
#: bytes a lease file may have: a few GPUs and worker pids fit many times over
MAX_LEASE = 16 * 1024
#: seconds a start waits for the room's lock before it chooses without it
LOCK_WAIT = 5.0
#: what every user may do in the room's directory: write, not remove others' files
ROOM_MODE = 0o1777
LOCK_NAME = "room.lock"
SUFFIX = ".lease.json"


@dataclass(frozen=True)
class Share:
    """One GPU of a lease and the bytes of its memory the holder may take on it."""

    uuid: str
    index: int
    share: int


@dataclass
class Lease:
    """A kernel's hold on GPUs of this machine, as written to its file."""

    uid: int
    user: str
    pid: int
    started: float  # the kernel process's start time: with ``pid``, that one process
    kernel: str  # the kernel's id, as the registry names it
    gpus: list[Share]
    taken: float
    active: float  # when the holder last worked (a magic, a transfer, a task)
    workers: list[int] = field(default_factory=list)  # pids of the holder's worker processes
    # by GPU uuid, what each holder there held (by key) when this lease was taken: the plan
    # every holder's elastic cap follows while this is the GPU's newest lease (.shares)
    plan: dict[str, dict[str, int]] = field(default_factory=dict)
    held: int = 0  # bytes the kernel's own capped allocations hold (it rewrites it now and then)
    version: int = VERSION
    path: Path | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> str:
        """This lease among others in a plan: its user, its kernel process and when it started."""
        return f"{self.uid}:{self.pid}:{self.started:.2f}"

    def to_json(self) -> str:
        data = asdict(self)
        data.pop("path")
        return json.dumps(data, sort_keys=True)

    def on(self, uuid: str) -> Share | None:
        """This lease's share of GPU ``uuid``, if it holds one."""
        return next((share for share in self.gpus if share.uuid == uuid), None)

    @property
    def smallest(self) -> Share:
        """Its smallest share: what a cap of one process holds on each of its GPUs."""
        return min(self.gpus, key=lambda share: share.share)


class BadLease(ValueError):
    """A lease file that does not hold a lease; the message says what is wrong."""


def _int(raw: dict[str, object], name: str, low: int = 0) -> int:
    value = raw.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise BadLease(f"{name} is not a whole number from {low} on: {value!r}")
    return value


def _float(raw: dict[str, object], name: str) -> float:
    value = raw.get(name)
    if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
        raise BadLease(f"{name} is not a number: {value!r}")
    return float(value)


def _text(raw: dict[str, object], name: str, limit: int = 256) -> str:
    value = raw.get(name)
    if not isinstance(value, str) or len(value) > limit:
        raise BadLease(f"{name} is not a short text")
    return value


def lease_from_json(data: bytes) -> Lease:
    """A :class:`Lease` from a file's bytes, each field checked; :class:`BadLease` otherwise."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as err:
        raise BadLease(f"not JSON ({err})") from None
    if not isinstance(raw, dict):
        raise BadLease("not a JSON object")
    if raw.get("version") != VERSION:
        raise BadLease(f"version {raw.get('version')!r}, not {VERSION}")
    gpus_raw = raw.get("gpus")
    if not isinstance(gpus_raw, list) or not 1 <= len(gpus_raw) <= 64:
        raise BadLease("gpus is not a list of 1 to 64 GPUs")
    gpus = []
    for item in gpus_raw:
        if not isinstance(item, dict):
            raise BadLease("a GPU is not an object")
        gpus.append(Share(_text(item, "uuid", 96), _int(item, "index"), _int(item, "share")))
    workers = raw.get("workers", [])
    if not isinstance(workers, list) or len(workers) > 256:
        raise BadLease("workers is not a list of pids")
    if not all(isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 for pid in workers):
        raise BadLease("workers is not a list of pids")
    plan = _plan(raw.get("plan", {}))
    return Lease(
        uid=_int(raw, "uid"),
        user=_text(raw, "user", 64),
        pid=_int(raw, "pid", 1),
        started=_float(raw, "started"),
        kernel=_text(raw, "kernel", 128),
        gpus=gpus,
        taken=_float(raw, "taken"),
        active=_float(raw, "active"),
        workers=list(workers),
        plan=plan,
        held=_int({"held": raw.get("held", 0)}, "held"),
    )


def _plan(raw: object) -> dict[str, dict[str, int]]:
    """A lease's plan, each part checked: at most 64 GPUs of at most :data:`MAX_PLANNED`
    holders, each a short key and a whole number of bytes."""
    if not isinstance(raw, dict) or len(raw) > 64:
        raise BadLease("plan is not an object of GPUs")
    plan = {}
    for uuid, held in raw.items():
        if not isinstance(uuid, str) or len(uuid) > 96:
            raise BadLease("plan names a GPU that is not a short text")
        if not isinstance(held, dict) or len(held) > MAX_PLANNED:
            raise BadLease("plan of a GPU is not an object of holders")
        plan[uuid] = {_text({"key": key}, "key", 128): _int(held, key) for key in held}
    return plan


def user_name(uid: int) -> str:
    """The account name of ``uid`` (``uid N`` when it has none)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def kernel_alive(pid: int, started: float) -> bool:
    """Whether ``pid`` is still the process that started at ``started``. Where ``/proc`` hides
    other users' processes, a process that exists (``kill`` answers "not permitted") counts as
    alive: a lease is never taken away from a kernel this user cannot see."""
    if processes.same_process(pid, started):
        return True
    try:
        os.kill(pid, 0)
    except PermissionError:
        return processes.process_started(pid) is None  # hidden from us: trust it
    except OSError:
        return False
    return False  # ours to see, and another process (or another start) now


class RoomDir:
    """The room's directory: its leases read and checked, ours written and removed."""

    def __init__(self, path: Path, uid: int | None = None) -> None:
        self.path = path
        self.uid = os.getuid() if uid is None else uid
        self.problem = ""  # why the directory cannot be shared with others ("" when it can)

    # -- the directory ------------------------------------------------------------------------

    def prepare(self) -> bool:
        """Make the directory (sticky, writable by all) or check the one found; False, with
        :attr:`problem` saying why, when leases cannot be written there."""
        try:
            os.mkdir(self.path, 0o700)
        except FileExistsError:
            pass
        except OSError as err:
            self.problem = f"{self.path} cannot be made ({err.strerror})"
            return False
        else:
            try:
                os.chmod(self.path, ROOM_MODE)  # mkdir's mode passes through the umask
            except OSError as err:
                self.problem = f"{self.path} cannot be shared ({err.strerror})"
                return False
        try:
            info = os.lstat(self.path)
        except OSError as err:
            self.problem = f"{self.path}: {err.strerror}"
            return False
        if not stat.S_ISDIR(info.st_mode):
            self.problem = f"{self.path} is not a directory"
            return False
        shared = info.st_mode & 0o1002 == 0o1002  # sticky and writable by others
        if info.st_uid not in (0, self.uid) and not shared:
            self.problem = f"{self.path} belongs to {user_name(info.st_uid)} and is not shared"
            return False
        if not os.access(self.path, os.W_OK | os.X_OK):
            self.problem = f"{self.path} is not writable"
            return False
        return True

    # -- the lock -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, wait: float = LOCK_WAIT) -> Iterator[bool]:
        """Hold the room's lock within ``wait`` seconds; yields whether it is held (a lock file
        that cannot be opened, or is held too long, is logged and the block runs without it)."""
        flags = os.O_RDONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path / LOCK_NAME, flags, 0o644)
        except OSError as err:
            log.warning("the room's lock %s cannot be opened (%s)", self.path / LOCK_NAME, err)
            yield False
            return
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                log.warning("the room's lock %s is not a regular file", self.path / LOCK_NAME)
                yield False
                return
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        log.warning(
                            "the room's lock was held for more than %.0f s; choosing without it",
                            wait,
                        )
                        yield False
                        return
                    time.sleep(0.01)
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- the leases ---------------------------------------------------------------------------

    def _load(self, path: Path) -> Lease | None:
        try:
            data, info = read_regular(path, MAX_LEASE, follow=False)
        except FileNotFoundError:
            return None  # removed meanwhile
        except (NotReadable, OSError) as err:
            log.info("room: ignoring %s (%s)", path.name, err)
            return None
        try:
            lease = lease_from_json(data)
        except BadLease as err:
            log.info("room: ignoring %s (%s)", path.name, err)
            self._remove_own(path, info.st_uid)
            return None
        if info.st_uid != lease.uid:
            log.warning(
                "room: ignoring %s: it names uid %s but belongs to %s",
                path.name,
                lease.uid,
                info.st_uid,
            )
            return None
        if not kernel_alive(lease.pid, lease.started):
            log.info("room: the kernel of %s has ended; its lease no longer counts", path.name)
            self._remove_own(path, info.st_uid)
            return None
        lease.path = path
        return lease

    def _remove_own(self, path: Path, owner: int) -> None:
        if owner == self.uid:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def leases(self) -> list[Lease]:
        """Every lease that counts, oldest first."""
        try:
            names = sorted(entry.name for entry in os.scandir(self.path))
        except OSError as err:
            log.warning("room: cannot list %s (%s)", self.path, err)
            return []
        found = []
        for name in names:
            if name.endswith(SUFFIX) and not name.startswith("."):
                lease = self._load(self.path / name)
                if lease is not None:
                    found.append(lease)
        return sorted(found, key=lambda lease: (lease.taken, lease.pid))

    def prune(self) -> int:
        """Remove this user's leases whose kernel is gone (what a SIGKILL left) and this user's
        files that hold no lease; how many. Nothing is made when the directory is missing."""
        try:
            entries = list(os.scandir(self.path))
        except OSError:
            return 0
        removed = 0
        for entry in entries:
            if not entry.name.endswith(SUFFIX) or entry.name.startswith("."):
                continue
            try:
                if entry.stat(follow_symlinks=False).st_uid != self.uid:
                    continue
            except OSError:
                continue
            if self._load(Path(entry.path)) is None and not os.path.lexists(entry.path):
                removed += 1
        return removed

    def write(self, lease: Lease) -> Path:
        """Write ``lease`` whole (a reader never sees half of it), readable by all, writable by
        its owner; a name taken by someone else's planted file is avoided, not fought."""
        target = lease.path or self.path / f"{lease.uid}-{lease.pid}{SUFFIX}"
        temporary = self.path / f".{lease.uid}-{lease.pid}-{uuidlib.uuid4().hex}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(lease.to_json())
            os.chmod(temporary, 0o644)
            try:
                os.replace(temporary, target)
            except PermissionError:  # another user's file holds the name (sticky directory)
                target = self.path / f"{lease.uid}-{lease.pid}-{uuidlib.uuid4().hex[:8]}{SUFFIX}"
                os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        lease.path = target
        return target

    def remove(self, lease: Lease) -> None:
        if lease.path is None:
            return
        try:
            lease.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as err:
            if err.errno != errno.ENOENT:
                log.warning("room: cannot remove %s (%s)", lease.path, err)
        lease.path = None
