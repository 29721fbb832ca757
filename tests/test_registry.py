"""Registry files: owner-only on write; foreign, loose, malformed or dead entries are ignored."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gpudask_jupyter import registry


def _entry(kernel_id: str = "k1", pid: int | None = None) -> registry.Entry:
    return registry.Entry(kernel_id, pid or os.getpid(), "cpu", "tcp://127.0.0.1:8786")


def test_written_owner_only_and_read_back(tmp_path: Path) -> None:
    path = registry.write(_entry(), tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert registry.read_all(tmp_path)["k1"].scheduler_address == "tcp://127.0.0.1:8786"
    registry.remove("k1", tmp_path)
    assert not path.exists()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o606, 0o660])
def test_loose_permissions_are_ignored(tmp_path: Path, mode: int) -> None:
    path = registry.write(_entry(), tmp_path)
    path.chmod(mode)
    assert registry.read_all(tmp_path) == {}


def test_symlink_is_ignored(tmp_path: Path) -> None:
    target = registry.write(_entry("real"), tmp_path)
    (tmp_path / f"{registry.PREFIX}link.json").symlink_to(target)
    assert set(registry.read_all(tmp_path)) == {"real"}


@pytest.mark.skipif(os.getuid() != 0, reason="changing a file's owner needs root")
def test_foreign_owner_is_ignored(tmp_path: Path) -> None:
    path = registry.write(_entry(), tmp_path)
    os.chown(path, 65534, 65534)
    assert registry.read_all(tmp_path) == {}


def test_foreign_owner_check_without_root(tmp_path: Path) -> None:
    info = registry.write(_entry(), tmp_path).stat()
    assert registry.is_private(info)
    forged = os.stat_result(
        (
            info.st_mode,
            info.st_ino,
            info.st_dev,
            info.st_nlink,
            info.st_uid + 1,
            info.st_gid,
            info.st_size,
            0,
            0,
            0,
        )
    )
    assert not registry.is_private(forged)


def test_malformed_and_dead_entries_are_ignored(tmp_path: Path) -> None:
    bad = tmp_path / f"{registry.PREFIX}bad.json"
    bad.write_text("{not json")
    bad.chmod(0o600)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    registry.write(_entry("dead", int(dead.stdout)), tmp_path)
    registry.write(_entry("alive"), tmp_path)
    assert set(registry.read_all(tmp_path)) == {"alive"}


def test_tls_files_must_be_private_too(tmp_path: Path) -> None:
    files = registry.write_tls("k1", {"ca": "x", "cert": "y", "key": "z"}, tmp_path)
    assert stat.S_IMODE(Path(files["key_file"]).parent.stat().st_mode) == 0o700
    entry = _entry()
    entry.tls = files
    registry.write(entry, tmp_path)
    assert "k1" in registry.read_all(tmp_path)
    Path(files["key_file"]).chmod(0o644)
    assert registry.read_all(tmp_path) == {}


def test_entry_is_json_with_schema_version(tmp_path: Path) -> None:
    raw = json.loads(registry.write(_entry(), tmp_path).read_text())
    assert raw["version"] == registry.SCHEMA_VERSION
    assert raw["kernel_id"] == "k1"
