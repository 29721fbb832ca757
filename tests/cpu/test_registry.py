"""Registry files: owner-only on write; foreign, loose, malformed or dead entries are ignored."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import gone_pid

from gpudask_jupyter import registry
from gpudask_jupyter.machine import processes


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
    (tmp_path / f"{registry.ENTRY_PREFIX}link.json").symlink_to(target)
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
    bad = tmp_path / f"{registry.ENTRY_PREFIX}bad.json"
    bad.write_text("{not json")
    bad.chmod(0o600)
    registry.write(_entry("dead", gone_pid()), tmp_path)
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


# -- each field checked on its own: nothing a file holds raises -----------------------------------


def _raw(**changes: object) -> dict[str, object]:
    raw = json.loads(
        json.dumps(
            {
                "kernel_id": "k1",
                "pid": os.getpid(),
                "mode": "cpu",
                "scheduler_address": "tls://127.0.0.1:8786",
                "dashboard_link": None,
                "tls": None,
                "created": 1.0,
                "version": registry.SCHEMA_VERSION,
                "started": processes.process_started(os.getpid()),
            }
        )
    )
    raw.update(changes)
    return raw


def _write_raw(folder: Path, raw: object, name: str = "k1") -> Path:
    path = folder / f"{registry.ENTRY_PREFIX}{name}.json"
    path.write_text(json.dumps(raw))
    path.chmod(0o600)
    return path


def test_a_well_formed_entry_is_read(tmp_path: Path) -> None:
    _write_raw(tmp_path, _raw())
    assert set(registry.read_all(tmp_path)) == {"k1"}


@pytest.mark.parametrize(
    "changes",
    [
        {"tls": "not a dict"},
        {"tls": ["ca", "cert", "key"]},
        {"tls": {"ca": "/a", "cert": "/b", "key": "/c"}},  # wrong keys
        {"tls": {"ca_file": 1, "cert_file": "/b", "key_file": "/c"}},
        {"tls": {"ca_file": "relative", "cert_file": "/b", "key_file": "/c"}},
        {"pid": "123"},
        {"pid": 1.5},
        {"pid": None},
        {"pid": True},
        {"pid": 2**70},
        {"pid": -1},
        {"kernel_id": ["k1"]},
        {"kernel_id": "../k1"},
        {"version": 99},
        {"version": "2"},
        {"mode": "root"},
        {"scheduler_address": 8786},
        {"scheduler_address": "http://evil.example/"},
        {"started": "yesterday"},
        {"started": None},
    ],
    ids=repr,
)
def test_a_malformed_field_skips_the_entry_without_raising(
    tmp_path: Path, changes: dict[str, object]
) -> None:
    _write_raw(tmp_path, _raw(**changes))
    _write_raw(tmp_path, _raw(kernel_id="good"), name="good")
    assert set(registry.read_all(tmp_path)) == {"good"}


@pytest.mark.parametrize("raw", [[1, 2], "text", 3, None, True], ids=repr)
def test_json_that_is_not_an_object_is_skipped(tmp_path: Path, raw: object) -> None:
    _write_raw(tmp_path, raw)
    assert registry.read_all(tmp_path) == {}


def test_decorations_that_are_wrong_are_dropped_not_fatal(tmp_path: Path) -> None:
    _write_raw(tmp_path, _raw(dashboard_link=["x"], created="now"))
    entry = registry.read_all(tmp_path)["k1"]
    assert entry.dashboard_link is None and entry.created == 0.0


def test_a_huge_or_deep_file_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / f"{registry.ENTRY_PREFIX}k1.json"
    path.write_text(json.dumps(_raw(padding="x" * (registry.MAX_ENTRY_BYTES + 1))))
    path.chmod(0o600)
    deep = tmp_path / f"{registry.ENTRY_PREFIX}deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    deep.chmod(0o600)
    assert registry.read_all(tmp_path) == {}


def test_a_fifo_in_the_registry_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / f"{registry.ENTRY_PREFIX}fifo.json"
    os.mkfifo(fifo, 0o600)
    _write_raw(tmp_path, _raw())
    assert set(registry.read_all(tmp_path)) == {"k1"}


def test_kernel_id_must_be_the_files_own(tmp_path: Path) -> None:
    _write_raw(tmp_path, _raw(kernel_id="other"), name="k1")
    assert registry.read_all(tmp_path) == {}


# -- an entry lives as long as its kernel's process, not its pid ----------------------------------


def test_a_reused_pid_does_not_revive_an_entry(tmp_path: Path) -> None:
    """Same pid (ours), another start time: the process that wrote it is gone."""
    started = processes.process_started(os.getpid())
    assert started is not None
    _write_raw(tmp_path, _raw(started=started - 360_000))
    assert registry.read_all(tmp_path) == {}


def test_prune_removes_dead_entries_and_their_tls_keys_only(tmp_path: Path) -> None:
    files = registry.write_tls("dead", {"ca": "x", "cert": "y", "key": "z"}, tmp_path)
    gone = registry.Entry("dead", gone_pid(), "cpu", "tls://127.0.0.1:1", tls=files)
    gone.started = 12345
    registry.write(gone, tmp_path)
    registry.write(_entry("alive"), tmp_path)
    reused = _raw(kernel_id="reused", started=1)
    _write_raw(tmp_path, reused, name="reused")
    newer = _raw(kernel_id="newer", version=registry.SCHEMA_VERSION + 1, started=1)
    _write_raw(tmp_path, newer, name="newer")
    assert sorted(registry.prune(tmp_path)) == ["dead", "reused"]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [f"{registry.ENTRY_PREFIX}alive.json", f"{registry.ENTRY_PREFIX}newer.json"]


def test_prune_removes_loose_tls_folders_of_gone_writers(tmp_path: Path) -> None:
    """A TLS folder without an entry goes as soon as the process that wrote it is gone (a
    kernel killed during its start); one of a live process stays, however old; one that does
    not say who wrote it (an older package's) goes once it is old."""
    mine = Path(registry.write_tls("mine", {"ca": "x"}, tmp_path)["ca_file"]).parent
    past = time.time() - registry.LOOSE_TLS_SECONDS - 60
    os.utime(mine, (past, past))
    dead = subprocess.run([sys.executable, "-c", _WRITE_TLS.format(path=str(tmp_path))], check=True)
    assert dead.returncode == 0
    killed = tmp_path / f"{registry.ENTRY_PREFIX}killed-tls"
    assert killed.exists()
    anonymous = Path(registry.write_tls("anonymous", {"ca": "x"}, tmp_path)["ca_file"]).parent
    (anonymous / registry.OWNER).unlink()
    young = Path(registry.write_tls("young", {"ca": "x"}, tmp_path)["ca_file"]).parent
    (young / registry.OWNER).unlink()
    os.utime(anonymous, (past, past))
    registry.prune(tmp_path)
    assert mine.exists() and young.exists()
    assert not killed.exists() and not anonymous.exists()


_WRITE_TLS = (
    "from pathlib import Path\n"
    "from gpudask_jupyter import registry\n"
    "registry.write_tls('killed', {{'ca': 'x'}}, Path({path!r}))\n"
)


def test_a_stop_is_noted_for_its_cluster_alone_and_goes_with_the_next_entry(tmp_path: Path) -> None:
    """The kernel's ``stop`` notes when it began where the entry was: the sidebar reads that
    time (the panel's), for the cluster it followed only; a new cluster's entry ends the note."""
    entry = _entry()
    registry.write(entry, tmp_path)
    registry.note_stopped("k1", entry.created, 1234.5, tmp_path)
    registry.remove_entry("k1", tmp_path)
    note = tmp_path / f"{registry.ENTRY_PREFIX}k1{registry.STOPPED_SUFFIX}"
    assert stat.S_IMODE(note.stat().st_mode) == 0o600
    assert registry.stopped_at("k1", entry.created, tmp_path) == 1234.5
    assert registry.stopped_at("k1", entry.created + 1, tmp_path) is None  # another cluster's
    assert registry.stopped_at("k2", entry.created, tmp_path) is None
    assert registry.read_all(tmp_path) == {}  # a note is no entry
    note.chmod(0o644)
    assert registry.stopped_at("k1", entry.created, tmp_path) is None  # not private: not read
    note.chmod(0o600)
    registry.write(_entry(), tmp_path)  # the kernel's next cluster
    assert not note.exists()


_NOTE_STOP = (
    "from pathlib import Path\n"
    "from gpudask_jupyter import registry\n"
    "registry.note_stopped('ended', 1.0, 2.0, Path({path!r}))\n"
)


def test_prune_removes_the_stop_notes_of_ended_kernels_only(tmp_path: Path) -> None:
    registry.note_stopped("alive", 1.0, 2.0, tmp_path)
    subprocess.run([sys.executable, "-c", _NOTE_STOP.format(path=str(tmp_path))], check=True)
    ended = tmp_path / f"{registry.ENTRY_PREFIX}ended{registry.STOPPED_SUFFIX}"
    assert ended.exists()
    registry.prune(tmp_path)
    assert not ended.exists()
    assert registry.stopped_at("alive", 1.0, tmp_path) == 2.0
