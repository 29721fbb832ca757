"""The room's leases: one small JSON file per kernel that holds a share of this machine's GPUs.

The room's directory (``room-dir``, by default ``/tmp``) must belong to root (or to this user):
whoever owns a directory may remove or replace anything in it, sticky bit or not, so a room in a
directory one student made would be at that student's mercy. In it, each account keeps its
leases in a folder of its own (``gpudask-room-UID``, writable by that account alone), so that
nobody but the account itself (and root) can remove, replace or add a lease of it, and nobody
needs to create a file in a directory another user owns (which ``fs.protected_regular`` refuses).
A folder whose name is taken by someone else's is avoided, not fought (``gpudask-room-UID-XXXX``).

Nothing read is trusted: a lease counts only if its folder is a directory owned by the uid its
name gives and writable by that uid alone, the file is a regular file of at most
:data:`MAX_LEASE` bytes owned by that uid, it parses field by field and names that uid, and its
kernel holds the lock beside it and is the process it names (:mod:`.proof`); one lease per
kernel process. Anything else is ignored: logged where it is this account's own file, at debug
level where it is another account's (a student's planted files never reach another student's
cells), and counted for the room's view (:attr:`RoomDir.skipped`). A dead lease of this user is
removed with its lock file, and so are the temporaries of an interrupted write. So no planted,
corrupt, huge or foreign file blocks a start, and what a lease says of memory counts for its own
holder alone (:mod:`.holding`).

Choosing and writing happen under an advisory lock on the room's directory itself (``flock``,
which needs no file anyone owns), so that thirty starts in the same second see each other's
leases. The lock is taken with a deadline: a user who holds it for ever delays the others by
:data:`LOCK_WAIT` seconds, then they choose without it (logged).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import pwd
import re
import stat
import time
import uuid as uuidlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...machine import processes
from ...machine.small_files import NotReadable, read_regular
from . import proof

log = logging.getLogger(__name__)

#: the lease format; a file of another version is ignored. 2: no plan (caps come from what the
#: machine measures), ``started`` in clock ticks since boot, a folder per account; 3: a lock
#: file held by the kernel beside each lease, and the kernel's PID namespace
VERSION = 3
#: bytes a lease file may have: a few GPUs and worker pids fit many times over
MAX_LEASE = 16 * 1024
#: seconds a start waits for the room's lock before it chooses without it
LOCK_WAIT = 5.0
#: the mode of a room's directory made by root: every account may make its folder there, and
#: none may remove another's
ROOM_MODE = 0o1777
#: an account's folder: writable by the account alone
FOLDER_MODE = 0o755
FOLDER_PREFIX = "gpudask-room-"
_FOLDER = re.compile(r"gpudask-room-(\d{1,10})(-[0-9a-f]{8})?")
SUFFIX = ".lease.json"
_TEMPORARY = re.compile(r"\.(\d{1,10})-[0-9a-f]{32}\.tmp")
#: seconds after which a temporary whose writer cannot be named is removed
TEMPORARY_AGE = 3600.0
#: the command an instructor runs once to make a room's directory
MAKE_IT = "install -d -m 1777 -o root"


@dataclass(frozen=True)
class Share:
    """One GPU of a lease and the bytes of its memory the holder may take on it (a planned
    share; with elastic shares, what the holder last found its share to be)."""

    uuid: str
    index: int
    share: int


@dataclass
class Lease:
    """A kernel's hold on GPUs of this machine, as written to its file."""

    uid: int
    user: str
    pid: int
    started: int  # the kernel process's start (processes.process_started): with ``pid``, it
    kernel: str  # the kernel's id, as the registry names it
    gpus: list[Share]
    taken: float
    active: float  # when the holder last worked (a magic, a transfer, a task)
    workers: list[int] = field(default_factory=list)  # pids of the holder's worker processes
    held: int = 0  # bytes the kernel's own capped allocations hold: counts for itself alone
    elastic: bool = False  # its share follows the holders present (.shares)
    pool: int = 0  # bytes of the RMM pool its workers make under their cap (--rmm-pool-size)
    give_back: int = 0  # how often its kernel asked its processes to give back cached memory
    pidns: int = 0  # the kernel's PID namespace (proof.pid_namespace; 0: unknown)
    version: int = VERSION
    path: Path | None = field(default=None, compare=False, repr=False)
    #: the kernel's pid as this process numbers it, where a reader found it in another PID
    #: namespace (0: not visible from here); None: ``pid`` (the reader's own namespace)
    local: int | None = field(default=None, compare=False, repr=False)

    @property
    def stem(self) -> str:
        """Its file's name before the suffix (its lock's too): the kernel's pid, and its PID
        namespace where known (two containers' kernels may have the same pid)."""
        return f"{self.pidns}-{self.pid}" if self.pidns else str(self.pid)

    @property
    def kernel_pid(self) -> int:
        """The kernel's pid in this process's namespace (0 where it cannot be seen from here)."""
        return self.pid if self.local is None else self.local

    @property
    def key(self) -> str:
        """This lease among others: its user, its kernel process and when it started (and the
        kernel's PID namespace, where known: two containers' kernels may share pid and start)."""
        key = f"{self.uid}:{self.pid}:{self.started}"
        return f"{key}@{self.pidns}" if self.pidns else key

    def to_json(self) -> str:
        data = asdict(self)
        data.pop("path")
        data.pop("local")
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
        raise BadLease(f"{name} is not a whole number from {low} on: {value!r:.40}")
    return value


def _float(raw: dict[str, object], name: str) -> float:
    value = raw.get(name)
    if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
        raise BadLease(f"{name} is not a number: {value!r:.40}")
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
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise BadLease(f"not JSON ({err})") from None
    if not isinstance(raw, dict):
        raise BadLease("not a JSON object")
    if raw.get("version") != VERSION:
        raise BadLease(f"version {raw.get('version')!r:.40}, not {VERSION}")
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
    elastic = raw.get("elastic", False)
    if not isinstance(elastic, bool):
        raise BadLease("elastic is not true or false")
    return Lease(
        uid=_int(raw, "uid"),
        user=_text(raw, "user", 64),
        pid=_int(raw, "pid", 1),
        started=_int(raw, "started"),
        kernel=_text(raw, "kernel", 128),
        gpus=gpus,
        taken=_float(raw, "taken"),
        active=_float(raw, "active"),
        workers=list(workers),
        held=_int({"held": raw.get("held", 0)}, "held"),
        elastic=elastic,
        pool=_int({"pool": raw.get("pool", 0)}, "pool"),
        give_back=_int({"give_back": raw.get("give_back", 0)}, "give_back"),
        pidns=_int({"pidns": raw.get("pidns", 0)}, "pidns"),
    )


def user_name(uid: int) -> str:
    """The account name of ``uid`` (``uid N`` when it has none)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _owner_only(info: os.stat_result) -> bool:
    """A directory no group or other account may write into."""
    return stat.S_ISDIR(info.st_mode) and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


class RoomDir:
    """The room's directory: every account's leases read and checked, ours written and
    removed in this account's folder."""

    def __init__(self, path: Path, uid: int | None = None) -> None:
        self.path = path
        self.uid = os.getuid() if uid is None else uid
        self.problem = ""  # why the directory cannot be shared with others ("" when it can)
        self._folder: Path | None = None
        #: files the last reading skipped, by account (the room's view counts them)
        self.skipped: dict[int, int] = {}

    # -- the directory ------------------------------------------------------------------------

    def trusted(self) -> bool:
        """Whether the directory is one nobody but root (or this user) can tamper with: a
        directory, not a link, owned by root or by this user, sticky where others may write;
        :attr:`problem` says why not."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            self.problem = (
                f"{self.path} does not exist; the instructor makes it once, as root: "
                f"{MAKE_IT} {self.path} (or leave room-dir at its default, /tmp)"
            )
            return False
        except OSError as err:
            self.problem = f"{self.path}: {err.strerror}"
            return False
        if not stat.S_ISDIR(info.st_mode):
            self.problem = f"{self.path} is not a directory"
            return False
        if info.st_uid not in (0, self.uid):
            self.problem = (
                f"{self.path} belongs to {user_name(info.st_uid)}, who could remove or replace "
                "every other student's lease in it; the instructor makes the room's directory "
                f"as root: {MAKE_IT} DIR, and sets room-dir to it (or leaves it at /tmp)"
            )
            return False
        if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
            self.problem = (
                f"{self.path} lets every account remove the others' files (it is not sticky); "
                f"the instructor makes it with {MAKE_IT} {self.path}"
            )
            return False
        self.problem = ""
        return True

    def prepare(self) -> bool:
        """Check the directory (root makes a missing one) and make this account's folder in
        it; False, with :attr:`problem` saying why, when leases cannot be written there."""
        if os.geteuid() == 0 and not os.path.lexists(self.path):
            try:
                os.mkdir(self.path, 0o700)
                os.chmod(self.path, ROOM_MODE)  # mkdir's mode passes through the umask
            except FileExistsError:
                pass
            except OSError as err:
                self.problem = f"{self.path} cannot be made ({err.strerror})"
                return False
        if not self.trusted():
            return False
        try:
            self.folder()
        except OSError as err:
            self.problem = f"{self.path} has no room for this account's folder ({err.strerror})"
            return False
        return True

    def folder(self) -> Path:
        """This account's folder, made where missing; a name another account took is avoided."""
        if self._folder is not None and self._own(self._folder):
            return self._folder
        names = [f"{FOLDER_PREFIX}{self.uid}"]
        with contextlib.suppress(OSError):
            names += sorted(
                e.name for e in os.scandir(self.path) if e.name.startswith(f"{names[0]}-")
            )
        for name in names:
            if self._own(self.path / name):
                self._folder = self.path / name
                return self._folder
        for name in [names[0], f"{names[0]}-{uuidlib.uuid4().hex[:8]}"]:
            try:
                os.mkdir(self.path / name, FOLDER_MODE)
            except FileExistsError:
                log.warning("room: %s is taken by another account's file", self.path / name)
                continue
            os.chmod(self.path / name, FOLDER_MODE)
            self._folder = self.path / name
            return self._folder
        raise OSError(errno.EEXIST, "every name tried for this account's folder is taken")

    def _own(self, path: Path) -> bool:
        try:
            info = os.lstat(path)
        except OSError:
            return False
        return info.st_uid == self.uid and _owner_only(info)

    # -- the lock -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, wait: float = LOCK_WAIT) -> Iterator[bool]:
        """Hold the room's lock within ``wait`` seconds; yields whether it is held (a directory
        that cannot be opened, or a lock held too long, is logged and the block runs without)."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags)
        except OSError as err:
            log.warning("the room's directory %s cannot be locked (%s)", self.path, err)
            yield False
            return
        try:
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

    def folders(self) -> list[tuple[int, Path]]:
        """Every account's folder that counts: (its uid, its path)."""
        try:
            entries = sorted(os.scandir(self.path), key=lambda e: e.name)
        except FileNotFoundError:  # nobody has held a GPU here yet (or the machine is not shared)
            log.debug("room: %s does not exist", self.path)
            return []
        except OSError as err:
            log.warning("room: cannot list %s (%s)", self.path, err)
            return []
        found = []
        for entry in entries:
            match = _FOLDER.fullmatch(entry.name)
            if match is None:
                continue
            uid = int(match.group(1))
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid != uid or not _owner_only(info):
                # whoever made it answers for it: a folder named after another student is
                # its maker's file, never a line in that student's cells
                self._skip(info.st_uid, "%s is not a folder of uid %s alone", entry.name, uid)
                continue
            found.append((uid, Path(entry.path)))
        return found

    def _skip(self, uid: int, message: str, *args: object) -> None:
        """Note a file of account ``uid`` that does not count: logged where it is this account's
        own, at debug level where it is another's; counted for the room's view either way."""
        self.skipped[uid] = self.skipped.get(uid, 0) + 1
        level = logging.INFO if uid == self.uid else logging.DEBUG
        log.log(level, "room: ignoring " + message, *args)

    def _load(self, path: Path, uid: int, table: dict[proof.LockId, int] | None) -> Lease | None:
        try:
            data, info = read_regular(path, MAX_LEASE, follow=False)
        except FileNotFoundError:
            return None  # removed meanwhile
        except (NotReadable, OSError) as err:
            self._skip(uid, "%s (%s)", path, err)
            return None
        if info.st_uid != uid:
            self._skip(uid, "%s: it belongs to uid %s", path, info.st_uid)
            return None
        try:
            lease = lease_from_json(data)
        except BadLease as err:
            self._skip(uid, "%s (%s)", path, err)
            self._remove_own(path, uid)
            return None
        if lease.uid != uid:
            self._skip(uid, "%s: it names uid %s in uid %s's folder", path, lease.uid, uid)
            return None
        why, local = _proven(path, lease, table)
        if why and uid == self.uid and why.startswith("its kernel has ended") and table is not None:
            # the table was read before this lease's kernel took its lock and wrote it (a start
            # outside this reader's room lock): read it again before calling the kernel dead
            why, local = _proven(path, lease, proof.lock_table())
        if why:
            if uid == self.uid and why.startswith("its kernel has ended"):
                log.info("room: the kernel of %s has ended; its lease no longer counts", path.name)
                self._remove_own(path, uid)
            else:
                self._skip(uid, "%s: %s", path, why)
            return None
        lease.path = path
        lease.local = local
        return lease

    def _remove_own(self, path: Path, owner: int) -> None:
        """Remove this account's dead lease ``path`` and its lock file (which nothing holds)."""
        if owner == self.uid:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            lock = proof.lock_path(path, SUFFIX)
            if not proof.held_here(lock):
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()

    def leases(self) -> list[Lease]:
        """Every lease that counts, oldest first; one per kernel process (a second lease naming
        the same kernel is skipped). :attr:`skipped` counts what did not count, by account."""
        self.skipped = {}
        table = proof.lock_table()
        found = []
        for uid, folder in self.folders():
            try:
                names = sorted(entry.name for entry in os.scandir(folder))
            except OSError as err:
                self._skip(uid, "%s (cannot list it: %s)", folder, err)
                continue
            for name in names:
                if name.endswith(SUFFIX) and not name.startswith("."):
                    lease = self._load(folder / name, uid, table)
                    if lease is not None:
                        found.append(lease)
        found.sort(key=lambda lease: (lease.taken, lease.pid, str(lease.path)))
        kept: dict[tuple[int, int], Lease] = {}
        for lease in found:
            kernel = (lease.pidns, lease.pid)
            if kernel in kept:
                self._skip(lease.uid, "%s: a second lease of kernel %s", lease.path, lease.pid)
                continue
            kept[kernel] = lease
        return list(kept.values())

    def files(self) -> list[Path]:
        """The lease files of every account's folder (counting or not)."""
        return sorted(
            folder / name
            for _, folder in self.folders()
            for name in os.listdir(folder)
            if name.endswith(SUFFIX)
        )

    def prune(self) -> int:
        """Remove this account's leases whose kernel is gone (what a SIGKILL left), its files
        that hold no lease, lock files nothing holds and no lease needs, and the temporaries of
        writes cut short; how many. Nothing is made where the directory or the folder is
        missing."""
        removed = 0
        table = proof.lock_table()
        for uid, folder in self.folders():
            if uid != self.uid:
                continue
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name.endswith(SUFFIX) and not entry.name.startswith("."):
                    if self._load(Path(entry.path), uid, table) is None and not os.path.lexists(
                        entry.path
                    ):
                        removed += 1
                elif _temporary_left(entry):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)
                        removed += 1
            for entry in os.scandir(folder):
                if entry.name.endswith(proof.LOCK_SUFFIX) and _lock_left(Path(entry.path)):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)
                        removed += 1
        return removed

    def hold(self, lease: Lease) -> tuple[int, Path]:
        """Take the lock of ``lease`` (before its file is written: no reader ever sees it
        without): the descriptor, for its kernel to keep until it ends, and the lock's path."""
        return proof.hold(self.folder(), lease.stem)

    def write(self, lease: Lease) -> Path:
        """Write ``lease`` whole (a reader never sees half of it) into this account's folder,
        readable by all, writable by its owner."""
        folder = self.folder()
        target = lease.path or folder / f"{lease.stem}{SUFFIX}"
        temporary = folder / f".{lease.pid}-{uuidlib.uuid4().hex}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(lease.to_json())
            os.chmod(temporary, 0o644)
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


def _proven(
    path: Path, lease: Lease, table: dict[proof.LockId, int] | None
) -> tuple[str, int | None]:
    """Why the lease at ``path`` does not count ("" when it does), and its kernel's pid as this
    process numbers it where that is not ``lease.pid`` (:class:`Lease.local`); from the lock
    ``table``, or from the processes where there is none."""
    if table is None:
        alive = proof.fallback_alive(lease.pid, lease.started)
        return ("" if alive else "its kernel has ended"), None
    found = proof.prove(path, SUFFIX, lease.uid, lease.pid, lease.started, lease.pidns, table)
    return found.why, (None if found.pid == lease.pid else found.pid)


def _lock_left(path: Path) -> bool:
    """A lock file whose lease is gone and whose lock nothing holds (its kernel ended)."""
    lease = path.with_name(path.name[: -len(proof.LOCK_SUFFIX)] + SUFFIX)
    return not os.path.lexists(lease) and not proof.held_here(path)


def _temporary_left(entry: os.DirEntry[str]) -> bool:
    """A temporary of a lease write whose writer is gone (it names its pid), or, where that
    pid is a new process, one older than :data:`TEMPORARY_AGE`."""
    match = _TEMPORARY.fullmatch(entry.name)
    if match is None:
        return False
    try:
        age = time.time() - entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return False
    return processes.process_started(int(match.group(1))) is None or age > TEMPORARY_AGE
