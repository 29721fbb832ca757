"""Per-kernel registry entries: how the server extension finds the clusters of running kernels.

An entry is a small JSON file in the Jupyter runtime directory, one per kernel that started or
attached a cluster, written on start/attach and removed on stop. Files are created owner-only
(0600, TLS material in a 0700 folder) and the reader ignores any file another user owns or whose
permissions let others read or write it: a scheduler address from such a file could point the
server at an attacker's endpoint.
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

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
PREFIX = "gpudask-kernel-"


def runtime_dir() -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    path = Path(jupyter_runtime_dir())
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


@dataclass
class Entry:
    kernel_id: str
    pid: int
    mode: str  # "gpu" or "cpu" (started by the kernel) or "attached"
    scheduler_address: str
    dashboard_link: str | None = None
    tls: dict[str, str] | None = None
    created: float = field(default_factory=time.time)
    version: int = SCHEMA_VERSION

    def security(self) -> Any:
        """A ``distributed.Security`` to connect to this entry's scheduler (None without TLS)."""
        if not self.tls:
            return None
        from distributed import Security

        return Security(
            tls_ca_file=self.tls["ca_file"],
            tls_client_cert=self.tls["cert_file"],
            tls_client_key=self.tls["key_file"],
            require_encryption=True,
        )


def path_for(kernel_id: str, directory: Path | None = None) -> Path:
    return (directory or runtime_dir()) / f"{PREFIX}{kernel_id}.json"


def _write_private(path: Path, text: str) -> None:
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
    path = path_for(entry.kernel_id, directory)
    _write_private(path, json.dumps(asdict(entry), indent=1))
    return path


def write_tls(kernel_id: str, pem: dict[str, str], directory: Path | None = None) -> dict[str, str]:
    """Write TLS material (PEM text by role) into an owner-only folder; return the file paths."""
    folder = (directory or runtime_dir()) / f"{PREFIX}{kernel_id}-tls"
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    paths = {}
    for role, text in pem.items():
        target = folder / f"{role}.pem"
        _write_private(target, text)
        paths[f"{role}_file"] = str(target)
    return paths


def remove(kernel_id: str, directory: Path | None = None) -> None:
    path = path_for(kernel_id, directory)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    tls = path.with_name(f"{PREFIX}{kernel_id}-tls")
    if tls.exists():
        try:
            shutil.rmtree(tls)
        except OSError:
            log.debug("removing the TLS folder %s failed", tls, exc_info=True)


def is_private(info: os.stat_result) -> bool:
    """Owned by this user, a regular file, and neither group nor others may read or write it."""
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    )


def _private_file(path: str) -> bool:
    try:
        return is_private(Path(path).stat())
    except OSError:
        log.debug("registry TLS file %s is unreadable", path, exc_info=True)
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_all(directory: Path | None = None) -> dict[str, Entry]:
    """Entries by kernel id, skipping foreign, loose, malformed and dead ones."""
    folder = directory or runtime_dir()
    found: dict[str, Entry] = {}
    for path in folder.glob(f"{PREFIX}*.json"):
        try:
            info = path.lstat()
            if not is_private(info):
                log.debug("skipping %s: not a private file of this user", path)
                continue
            raw = json.loads(path.read_text())
            entry = Entry(**{k: raw[k] for k in Entry.__dataclass_fields__ if k in raw})
        except (OSError, ValueError, TypeError):
            log.debug("skipping %s: unreadable or not an entry", path, exc_info=True)
            continue
        if entry.version != SCHEMA_VERSION or not _alive(entry.pid):
            log.debug("skipping %s: another version, or its kernel is gone", path)
            continue
        if entry.tls and not all(
            _private_file(entry.tls.get(k, "")) for k in ("ca_file", "cert_file", "key_file")
        ):
            log.debug("skipping %s: its TLS files are missing or not private", path)
            continue
        found[entry.kernel_id] = entry
    return found
