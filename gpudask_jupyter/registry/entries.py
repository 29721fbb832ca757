"""Per-kernel registry entries: how the server extension finds the clusters of running kernels.

An entry is a small JSON file in the Jupyter runtime directory, one per kernel that started or
attached a cluster, written on start/attach and removed on stop, on the kernel's shutdown and on
SIGTERM (:mod:`..lifecycle.shutdown`). Files are created owner-only (0600, TLS material in a 0700
folder) and the reader ignores any file another user owns or whose permissions let others read or
write it: a scheduler address from such a file could point the server at an attacker's endpoint.

An entry is trusted only while its kernel lives: it records the kernel's pid *and* the start time
of that process, so that an entry left by a killed kernel is ignored even once its pid is reused
(the server would otherwise connect wherever the stale entry points); the next ``start`` or
``attach`` deletes such entries with their TLS keys (:func:`prune`), and so does the kernel's
undertaker as soon as the kernel has ended (:mod:`..lifecycle.undertaker`). Every field is checked
(:mod:`.fields`), files are read without blocking and up to a size limit: one bad file
never breaks the reader.

A ``stop`` also leaves a note of when it began (:func:`note_stopped`), beside where the entry
was, so that the server's sidebar gives a stopped cluster the same stop time as the kernel's
panel, not the moment it next read the registry. The note names its kernel like an entry and
goes with the next entry of that kernel, or once the kernel has ended (:func:`prune`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import stat
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..lifecycle import undertaker
from ..machine import small_files
from ..machine.processes import process_started, same_process
from ..machine.small_files import is_private as is_private
from .fields import InvalidEntry, check_fields

log = logging.getLogger(__name__)

#: 3: ``started`` is the kernel process's start in clock ticks since boot, which a step of the
#: wall clock does not move (:mod:`..machine.processes`); entries of earlier versions are ignored
SCHEMA_VERSION = 3
ENTRY_PREFIX = "gpudask-kernel-"
#: the suffix of a kernel's note of when its last cluster was stopped (:func:`note_stopped`)
STOPPED_SUFFIX = ".stopped"
#: an entry is a few hundred bytes; a larger file is not one
MAX_ENTRY_BYTES = 64 * 1024
#: seconds two readings of one process's start time may differ by
#: TLS folders without an entry are removed after this long (a kernel killed while starting)
LOOSE_TLS_SECONDS = 600.0
OWNER = "owner.json"  # in a TLS folder: who wrote it


def runtime_dir() -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    path = Path(jupyter_runtime_dir())
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


@dataclass
class Entry:
    kernel_id: str
    pid: int
    mode: str  # "gpu" or "cpu" (started by the kernel), "attached", "joined" or "gateway"
    scheduler_address: str
    dashboard_link: str | None = None
    tls: dict[str, str] | None = None
    created: float = field(default_factory=time.time)
    version: int = SCHEMA_VERSION
    #: when the kernel's process started (:func:`..machine.processes.process_started`): with
    #: ``pid``, it names that one process
    started: int | None = None
    #: a joined cluster: the addresses of the kernel's own workers (the others are others');
    #: written again when they change
    workers: list[str] | None = None

    def security(self) -> Any:
        """A ``distributed.Security`` to connect to this entry's scheduler (None without TLS)."""
        if not self.tls:
            return None
        if self.scheduler_address.startswith("gateway://"):
            return _gateway_security(self.tls)
        from distributed import Security

        return Security(
            tls_ca_file=self.tls["ca_file"],
            tls_client_cert=self.tls["cert_file"],
            tls_client_key=self.tls["key_file"],
            require_encryption=True,
        )


def _gateway_security(tls: dict[str, str]) -> Any:
    """A dask-gateway cluster's own credentials (its certificate is its own authority), and
    the ``gateway://`` comm dask-gateway registers as it is imported."""
    from dask_gateway.client import GatewaySecurity

    texts = {}
    for role in ("cert_file", "key_file"):
        data, _ = small_files.read_regular(tls[role], MAX_ENTRY_BYTES)
        texts[role] = data.decode()
    return GatewaySecurity(tls_key=texts["key_file"], tls_cert=texts["cert_file"])


def entry_from_json(raw: object, file_name: str) -> Entry:
    """An entry from a file's parsed JSON, each field checked (:mod:`.fields`);
    :class:`InvalidEntry` names the first field that is wrong."""
    fields = check_fields(raw, SCHEMA_VERSION)
    if file_name != f"{ENTRY_PREFIX}{fields['kernel_id']}.json":
        raise InvalidEntry(f"kernel_id {fields['kernel_id']!r} is not the file's name")
    return Entry(**fields)


def path_for(kernel_id: str, directory: Path | None = None) -> Path:
    return (directory or runtime_dir()) / f"{ENTRY_PREFIX}{kernel_id}.json"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as an owner-only file, atomically."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gpudask-", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write(entry: Entry, directory: Path | None = None) -> Path:
    """Write ``entry`` owner-only; its ``started`` is filled in from its pid when missing."""
    if entry.started is None:
        entry.started = process_started(entry.pid)
    undertaker.tell("runtime", directory or runtime_dir())
    path = path_for(entry.kernel_id, directory)
    write_private(path, json.dumps(asdict(entry), indent=1))
    forget_stopped(entry.kernel_id, directory)  # a new cluster: the last one's stop is history
    return path


def _stopped_path(kernel_id: str, directory: Path | None = None) -> Path:
    return (directory or runtime_dir()) / f"{ENTRY_PREFIX}{kernel_id}{STOPPED_SUFFIX}"


def note_stopped(
    kernel_id: str, created: float, when: float, directory: Path | None = None
) -> None:
    """Note, owner-only, that the cluster of the entry ``kernel_id`` made at ``created`` began to
    stop at ``when`` (seconds since the epoch), before its entry is removed."""
    undertaker.tell("runtime", directory or runtime_dir())
    note = {
        "created": created,
        "stopped": when,
        "pid": os.getpid(),
        "started": process_started(os.getpid()),
    }
    write_private(_stopped_path(kernel_id, directory), json.dumps(note))


def stopped_at(kernel_id: str, created: float, directory: Path | None = None) -> float | None:
    """When the cluster of the entry ``kernel_id`` made at ``created`` began to stop, as its
    kernel noted; None where no such note of this user is there."""
    try:
        data, info = small_files.read_regular(
            _stopped_path(kernel_id, directory), MAX_ENTRY_BYTES, follow=False
        )
        raw = json.loads(data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError):
        log.debug("the stop note of %s is unreadable", kernel_id, exc_info=True)
        return None
    if not is_private(info) or not isinstance(raw, dict) or raw.get("created") != created:
        return None
    when = raw.get("stopped")
    return float(when) if isinstance(when, int | float) and not isinstance(when, bool) else None


def forget_stopped(kernel_id: str, directory: Path | None = None) -> None:
    with contextlib.suppress(FileNotFoundError):
        _stopped_path(kernel_id, directory).unlink()


def write_tls(kernel_id: str, pem: dict[str, str], directory: Path | None = None) -> dict[str, str]:
    """Write TLS material (PEM text by role) into an owner-only folder; return the file paths.

    The folder also names the process that wrote it (``owner``: pid and start time), so that a
    kernel killed before it wrote its entry leaves a folder the next prune removes at once."""
    undertaker.tell("runtime", directory or runtime_dir())
    folder = (directory or runtime_dir()) / f"{ENTRY_PREFIX}{kernel_id}-tls"
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    owner = {"pid": os.getpid(), "started": process_started(os.getpid())}
    write_private(folder / OWNER, json.dumps(owner))
    paths = {}
    for role, text in pem.items():
        target = folder / f"{role}.pem"
        write_private(target, text)
        paths[f"{role}_file"] = str(target)
    return paths


def remove(kernel_id: str, directory: Path | None = None) -> None:
    """Remove the entry of ``kernel_id``, its TLS folder and its note of a stop."""
    remove_entry(kernel_id, directory)
    remove_tls(kernel_id, directory)
    forget_stopped(kernel_id, directory)


def remove_entry(kernel_id: str, directory: Path | None = None) -> None:
    """Remove the entry only: the server stops following the cluster at once, while its
    processes may still read the TLS files until they are closed."""
    with contextlib.suppress(FileNotFoundError):
        path_for(kernel_id, directory).unlink()


def remove_tls(kernel_id: str, directory: Path | None = None) -> None:
    tls = path_for(kernel_id, directory).with_name(f"{ENTRY_PREFIX}{kernel_id}-tls")
    if tls.exists():
        try:
            shutil.rmtree(tls)
        except OSError:
            log.debug("removing the TLS folder %s failed", tls, exc_info=True)


def _private_file(path: str) -> bool:
    try:
        return is_private(Path(path).stat())
    except OSError:
        log.debug("registry TLS file %s is unreadable", path, exc_info=True)
        return False


def _load(path: Path) -> Entry | None:
    """The entry in ``path`` if it is a private file of this user, a well-formed entry of this
    version, and its kernel's process still runs; None (with the reason logged) otherwise."""
    try:
        data, info = small_files.read_regular(path, MAX_ENTRY_BYTES, follow=False)
        if not is_private(info):
            log.debug("skipping %s: not a private file of this user", path)
            return None
        raw = json.loads(data)
    except (OSError, ValueError, RecursionError):
        log.debug("skipping %s: unreadable or not JSON", path, exc_info=True)
        return None
    try:
        entry = entry_from_json(raw, path.name)
    except InvalidEntry as err:
        log.debug("skipping %s: %s", path, err)
        return None
    if entry.started is None or not same_process(entry.pid, entry.started):
        log.debug("skipping %s: its kernel (pid %s) is gone", path, entry.pid)
        return None
    if entry.tls and not all(_private_file(p) for p in entry.tls.values()):
        log.debug("skipping %s: its TLS files are missing or not private", path)
        return None
    return entry


def read_all(directory: Path | None = None) -> dict[str, Entry]:
    """Entries by kernel id, skipping foreign, loose, malformed and dead ones. Never raises for
    what a file holds: one bad file must not hide the others."""
    folder = directory or runtime_dir()
    found: dict[str, Entry] = {}
    for path in folder.glob(f"{ENTRY_PREFIX}*.json"):
        entry = _load(path)
        if entry is not None:
            found[entry.kernel_id] = entry
    return found


def prune(directory: Path | None = None) -> list[str]:
    """Remove this user's entries whose kernel is gone (or whose pid now belongs to another
    process), with their TLS folders, and TLS folders left without an entry for a while.
    Entries of another schema version are left alone: a newer package may have written them.
    Returns the kernel ids removed."""
    folder = directory or runtime_dir()
    removed = []
    for path in folder.glob(f"{ENTRY_PREFIX}*.json"):
        kernel = path.name[len(ENTRY_PREFIX) : -len(".json")]
        try:
            data, info = small_files.read_regular(path, MAX_ENTRY_BYTES, follow=False)
            raw = json.loads(data)
            if not is_private(info) or not isinstance(raw, dict):
                continue
            if raw.get("version") != SCHEMA_VERSION:
                continue
            entry = entry_from_json(raw, path.name)
        except (OSError, ValueError, RecursionError, InvalidEntry):
            log.debug("not pruning %s: not an entry of this version", path, exc_info=True)
            continue
        if entry.started is None or not same_process(entry.pid, entry.started):
            remove(kernel, folder)
            removed.append(kernel)
    _prune_loose_tls(folder)
    _prune_stop_notes(folder)
    if removed:
        log.info("removed the registry entries of gone kernels: %s", ", ".join(removed))
    return removed


def _prune_loose_tls(folder: Path) -> None:
    """TLS folders of this user with no entry whose writer is gone (a kernel killed between
    writing its keys and its entry, or while closing), or, where the folder does not say who
    wrote it (an older package), older than :data:`LOOSE_TLS_SECONDS`."""
    for tls in folder.glob(f"{ENTRY_PREFIX}*-tls"):
        try:
            info = tls.lstat()
        except OSError:
            continue
        entry = tls.with_name(tls.name.removesuffix("-tls") + ".json")
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or entry.exists():
            continue
        owner = _tls_owner(tls)
        if owner is None:
            gone = time.time() - info.st_mtime > LOOSE_TLS_SECONDS
        else:
            gone = not same_process(*owner)
        if gone:
            shutil.rmtree(tls, ignore_errors=True)


def _prune_stop_notes(folder: Path) -> None:
    """This user's notes of a stop whose kernel has ended."""
    for note in folder.glob(f"{ENTRY_PREFIX}*{STOPPED_SUFFIX}"):
        writer = _writer(note)
        if writer is None:
            log.debug("not pruning %s: not a stop note of this user", note)
        elif not same_process(*writer):
            with contextlib.suppress(FileNotFoundError):
                note.unlink()


def _tls_owner(tls: Path) -> tuple[int, int] | None:
    """(pid, start time) of the process that wrote a TLS folder, None where it does not say."""
    return _writer(tls / OWNER)


def _writer(path: Path) -> tuple[int, int] | None:
    """(pid, start time) of the process a private file of this user names as its writer (a TLS
    folder's owner, a stop's note), None where it names none."""
    try:
        data, info = small_files.read_regular(path, MAX_ENTRY_BYTES, follow=False)
        raw = json.loads(data)
        pid, started = raw["pid"], raw["started"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    if not is_private(info) or not isinstance(pid, int) or not isinstance(started, int):
        return None
    return pid, started
