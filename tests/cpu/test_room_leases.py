"""The room's leases and placement, on real files and real processes: fair spreading, shares
that add up, and no planted, corrupt, huge, foreign or dead lease or folder that blocks a
start."""

from __future__ import annotations

import fcntl
import json
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from room_locks import write_held
from support import STAND_INS, stand_in_room

from gpudask_jupyter.cluster.room import caps, leases, placement, proof
from gpudask_jupyter.cluster.room.leases import Lease, RoomDir, Share
from gpudask_jupyter.errors import ClusterError
from gpudask_jupyter.machine import processes
from gpudask_jupyter.machine.nvml import Device

GiB = 2**30


def gpus(n: int, memory: int = 16 * GiB) -> list[Device]:
    return [Device(i, f"GPU-{i:08d}-0000-0000-0000-000000000000", "test", memory) for i in range(n)]


def lease_of(device: Device, share: int, pid: int | None = None) -> Lease:
    pid = os.getpid() if pid is None else pid
    started = processes.process_started(pid) or 0
    now = time.time()
    return Lease(
        os.getuid(),
        "me",
        pid,
        started,
        f"k{pid}",
        [Share(device.uuid, device.index, share)],
        now,
        now,
    )


@pytest.fixture
def room(tmp_path: Path) -> RoomDir:
    directory = RoomDir(tmp_path / "room")
    assert directory.prepare(), directory.problem
    return directory


def test_root_makes_the_directory_sticky_and_each_account_its_own_folder(room: RoomDir) -> None:
    assert os.stat(room.path).st_mode & 0o7777 == 0o1777
    folder = room.folder()
    assert folder == room.path / f"gpudask-room-{os.getuid()}"
    info = os.stat(folder)
    assert info.st_uid == os.getuid() and info.st_mode & 0o7777 == 0o755


def test_a_folder_name_taken_by_a_planted_file_is_avoided(tmp_path: Path) -> None:
    directory = RoomDir(tmp_path / "room")
    os.mkdir(directory.path, 0o1777)
    (directory.path / f"gpudask-room-{os.getuid()}").write_text("planted")
    assert directory.prepare(), directory.problem
    assert directory.folder().name.startswith(f"gpudask-room-{os.getuid()}-")
    lease = lease_of(gpus(1)[0], GiB)
    write_held(directory, lease)
    assert [x.pid for x in directory.leases()] == [lease.pid]


def test_a_directory_that_is_a_symlink_or_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "file").write_text("x")
    for name in ("link", "file"):
        directory = RoomDir(tmp_path / name)
        assert not directory.prepare()
        assert "not a directory" in directory.problem


def test_a_lease_round_trips_and_counts_while_its_kernel_lives(room: RoomDir) -> None:
    lease = lease_of(gpus(1)[0], 4 * GiB)
    write_held(room, lease)
    found = room.leases()
    assert [(x.pid, x.gpus) for x in found] == [(lease.pid, lease.gpus)]
    assert os.stat(lease.path).st_mode & 0o777 == 0o644  # type: ignore[arg-type]
    room.remove(lease)
    assert room.leases() == []


def test_planted_files_are_ignored_with_a_log_line_and_never_raise(
    room: RoomDir, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gpudask_jupyter.cluster.room.leases")
    good = lease_of(gpus(1)[0], GiB)
    write_held(room, good)
    suffix = leases.SUFFIX
    folder = room.folder()
    (folder / f"corrupt{suffix}").write_text("{not json")
    (folder / f"huge{suffix}").write_bytes(b" " * (leases.MAX_LEASE + 1))
    (folder / f"list{suffix}").write_text("[1, 2]")
    (folder / f"version{suffix}").write_text(json.dumps({"version": 99}))
    os.mkfifo(folder / f"fifo{suffix}")  # opening it for reading would wait for ever
    (folder / f"link{suffix}").symlink_to("/dev/zero")
    (folder / f"dir{suffix}").mkdir()
    data = json.loads(good.to_json())
    data["uid"] = os.getuid() + 1  # a lease in another user's name, in a file of ours
    (folder / f"foreign{suffix}").write_text(json.dumps(data))
    data = json.loads(good.to_json())
    data["gpus"] = [{"uuid": "GPU-x", "index": -1, "share": 1}]
    (folder / f"negative{suffix}").write_text(json.dumps(data))
    # folders that are no account's own: named for another uid, writable by others, a link
    other = room.path / f"gpudask-room-{os.getuid() + 1}"  # that account's, open to all
    other.mkdir()
    os.chown(other, os.getuid() + 1, -1)
    os.chmod(other, 0o777)
    (other / f"x{suffix}").write_text(good.to_json())
    loose = room.path / f"gpudask-room-{os.getuid()}-0badf00d"
    loose.mkdir(mode=0o777)
    os.chmod(loose, 0o777)
    (loose / f"y{suffix}").write_text(good.to_json())
    (room.path / f"gpudask-room-{os.getuid()}-feedf00d").symlink_to(folder)
    found = room.leases()
    assert [lease.pid for lease in found] == [good.pid]
    said = caplog.text
    for name in ("corrupt", "huge", "fifo", "link", "foreign", "negative", "version"):
        assert f"{name}{suffix}" in said, name
    assert "names uid" in said
    for name in (loose.name, f"gpudask-room-{os.getuid()}-feedf00d"):
        assert f"ignoring {name}" in said, name
    # another account's files never reach this account's log above debug; the view counts them
    assert other.name not in said
    assert room.skipped[os.getuid() + 1] == 1
    assert room.skipped[os.getuid()] == 11  # the 9 planted files, 2 folders of its uid


def test_a_dead_kernels_lease_no_longer_counts_and_its_owner_removes_it(room: RoomDir) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = lease_of(gpus(1)[0], GiB, pid=os.getpid())
    dead.pid = child.pid  # a pid whose process has ended
    dead.started = 5
    path = room.write(dead)
    assert room.leases() == []
    assert not path.exists()


def test_a_lease_written_after_the_lock_table_was_read_is_kept(
    room: RoomDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader outside the room's lock (a prune, a follower) reads the machine's locks, then a
    starting kernel of the same account takes its lock and writes its lease, then the reader
    lists the folder: the lease is not called dead (nor removed) on the stale table."""
    stale = proof.lock_table()
    lease = lease_of(gpus(1)[0], GiB)
    write_held(room, lease)
    real = proof.lock_table
    reads = iter([stale])
    monkeypatch.setattr(
        proof, "lock_table", lambda path=proof.LOCKS: next(reads, None) or real(path)
    )
    assert [x.pid for x in room.leases()] == [lease.pid]
    assert lease.path is not None and lease.path.exists()


def test_a_reused_pid_does_not_keep_a_lease(room: RoomDir) -> None:
    lease = lease_of(gpus(1)[0], GiB)
    lease.started -= 360_000  # the same pid, another start: the kernel that wrote it is gone
    write_held(room, lease)
    assert room.leases() == []


def test_temporaries_of_a_write_cut_short_are_pruned(room: RoomDir) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    folder = room.folder()
    left = folder / f".{child.pid}-{'0' * 32}.tmp"  # its writer is gone
    left.write_text('{"half": ')
    mine = folder / f".{os.getpid()}-{'1' * 32}.tmp"  # a write of a live process
    mine.write_text("{")
    old = folder / f".{os.getpid()}-{'2' * 32}.tmp"  # a live pid, but written long ago
    old.write_text("{")
    os.utime(old, (time.time() - 2 * leases.TEMPORARY_AGE,) * 2)
    assert room.prune() == 2
    assert not left.exists() and not old.exists() and mine.exists()


def _hold_lock(path: str, ready: multiprocessing.synchronize.Event) -> None:
    """Take the room's lock and hold it until this process is killed."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    ready.set()
    while True:
        signal.pause()


def test_a_lock_held_for_ever_delays_a_start_only_by_the_deadline(
    room: RoomDir, caplog: pytest.LogCaptureFixture
) -> None:
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    holder = context.Process(target=_hold_lock, args=(str(room.path), ready))
    holder.start()
    try:
        assert ready.wait(60)
        with room.locked(wait=0.5) as held:
            assert not held
        assert "held for more than" in caplog.text
    finally:
        holder.kill()
        holder.join()
    with room.locked(wait=0.5) as held:
        assert held


def test_a_room_that_cannot_be_opened_does_not_block(tmp_path: Path) -> None:
    directory = RoomDir(tmp_path / "missing")
    with directory.locked(wait=0.2) as held:
        assert not held


# -- placement ------------------------------------------------------------------------------------


def test_thirty_students_on_eight_gpus_differ_by_at_most_one_and_shares_fit() -> None:
    devices = gpus(8, 80 * GiB)
    held: list[Lease] = []
    for _ in range(30):
        chosen = placement.choose(devices, held, 1, "auto", 30)
        device = chosen.devices[0]
        held.append(lease_of(device, chosen.shares[device.uuid]))
    counts = Counter(lease.gpus[0].uuid for lease in held)
    assert max(counts.values()) - min(counts.values()) <= 1
    for device in devices:
        assert placement.promised(held, device.uuid) <= device.memory_total
    # planned for 4 holders a GPU (30 over 8): a quarter, the contexts set aside
    assert held[0].gpus[0].share == 20 * GiB - 2 * placement.CONTEXT_RESERVE


def test_more_students_than_planned_get_what_is_left_then_a_clear_refusal() -> None:
    devices = gpus(1, 8 * GiB)
    held: list[Lease] = []
    for _ in range(3):
        chosen = placement.choose(devices, held, 1, 0.25, 2)
        held.append(lease_of(devices[0], chosen.shares[devices[0].uuid]))
    assert placement.promised(held, devices[0].uuid) <= 8 * GiB
    # a quarter (2 GiB) and two contexts each: the third gets the 1 GiB left, the fourth none
    assert [lease.gpus[0].share for lease in held] == [2 * GiB, 2 * GiB, GiB]
    with pytest.raises(ClusterError, match=r"No GPU here has room for another share .*3 holders"):
        placement.choose(devices, held, 1, 0.25, 2)


def test_named_gpus_are_leased_and_a_crowded_one_is_said() -> None:
    devices = gpus(2)
    held = [lease_of(devices[0], GiB) for _ in range(2)]
    chosen = placement.choose([devices[0]], held, 1, "auto", 2, machine_gpus=2, named=True)
    assert chosen.devices == [devices[0]]
    assert chosen.holders[devices[0].uuid] == 2 and chosen.planned[devices[0].uuid] == 3
    assert chosen.spread == 1  # 2 students over 2 GPUs: one each, and GPU 0 has two already
    assert "as --gpus named it" in chosen.why


def test_worker_caps_hold_the_workers_half_and_refuse_a_larger_pool() -> None:
    share = 8 * GiB
    keywords = caps.worker_keywords(share, 140 * GiB, "0", None, None)
    assert keywords["device_memory_limit"] == int(4 * GiB * caps.SPILL_AT)
    with pytest.raises(ClusterError, match=r"your share of GPU 0 is 8 GiB.*Nothing was started"):
        caps.worker_keywords(share, 140 * GiB, "0", 0.9, None)
    with pytest.raises(ClusterError, match="--device-memory-limit"):
        caps.worker_keywords(share, 140 * GiB, "0", None, "6GiB")
    pooled = caps.worker_keywords(share, 140 * GiB, "0", "2GiB", None)
    assert pooled["rmm_pool_size"] is None  # the worker makes it, under its cap
    assert caps.worker_pool("2GiB", 140 * GiB) == 2 * GiB


# -- thirty starts in the same second, as processes ----------------------------------------------


def _take(
    room_dir: str, ready: object, go: multiprocessing.synchronize.Event, done: object, stay: object
) -> None:
    os.environ.update(stand_in_room("4:16GiB"))  # before dask reads the environment
    sys.path.insert(0, str(STAND_INS))
    os.environ["DASK_GPUDASK__ROOM_DIR"] = room_dir
    os.environ["DASK_GPUDASK__ROOM_STUDENTS"] = "12"
    from gpudask_jupyter.cluster.room import holder

    devices = holder.room_devices()
    ready.put(os.getpid())  # type: ignore[attr-defined]
    go.wait()
    held = holder.this_process.take(devices, None, None)
    done.put((held.devices[0].uuid, held.lease.gpus[0].share))  # type: ignore[attr-defined]
    stay.wait()  # type: ignore[attr-defined]


def test_starts_at_the_same_moment_spread_evenly(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    go, stay = context.Event(), context.Event()
    ready, done = context.Queue(), context.Queue()
    room_dir = str(tmp_path / "room")
    students = [
        context.Process(target=_take, args=(room_dir, ready, go, done, stay)) for _ in range(12)
    ]
    for student in students:
        student.start()
    try:
        for _ in students:  # every process imported what it needs
            ready.get(timeout=120)
        go.set()
        results = [done.get(timeout=120) for _ in students]
        counts = Counter(uuid for uuid, _ in results)
        assert len(counts) == 4 and set(counts.values()) == {3}, counts
        assert len({share for _, share in results}) == 1
        assert len(RoomDir(Path(room_dir)).leases()) == 12
    finally:
        stay.set()
        for student in students:
            student.join(30)
    assert RoomDir(Path(room_dir)).leases() == []  # their kernels ended: nothing counts


def test_a_room_nobody_made_is_empty_and_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker looks for its kernel's lease every second, also on a machine that is not shared
    (no room directory): that is no warning to show in a cell."""
    with caplog.at_level(logging.WARNING):
        assert RoomDir(tmp_path / "never-made").leases() == []
    assert caplog.records == []
    (tmp_path / "a-file").write_text("")
    with caplog.at_level(logging.WARNING):  # one that cannot be listed still says so
        assert RoomDir(tmp_path / "a-file").leases() == []
    assert "cannot list" in caplog.text


def test_a_reader_in_a_container_drops_an_unseen_lease_its_kernel_stopped_touching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader in a PID namespace below the machine's first cannot see another container's
    locks: it counts such a lease while its kernel touches the lock file, and not once the
    kernel has been silent for longer than STALE_AFTER (killed in its container, its lease
    left behind)."""
    from gpudask_jupyter.cluster.room import proof

    monkeypatch.setattr(proof, "pid_namespace", lambda: 4_026_532_999)  # a container's
    fd, lock = proof.hold(tmp_path, "4026533000-77")
    lease = tmp_path / "4026533000-77.lease.json"
    ask = (lease, ".lease.json", os.getuid(), 77, 1234, 4_026_533_000, {})  # no lock seen
    try:
        proof.heartbeat(fd)
        found = proof.prove(*ask)
        assert found.counts and found.pid == 0  # present, its processes unseen
        old = time.time() - proof.STALE_AFTER - 5
        os.utime(lock, (old, old))
        found = proof.prove(*ask)
        assert not found.counts and "has not shown itself" in found.why
        proof.heartbeat(fd)  # the kernel lives after all: it counts again
        assert proof.prove(*ask).counts
    finally:
        proof.let_go(fd, lock)
