"""A room that holds against its own students, on real kernels and real accounts (CPU clusters,
the room's test seam for the GPUs and for what NVML would show of their memory):

- a student's forged lease (every field valid, figures of any size, taken far in the future,
  naming the others' kernels as its workers) changes nobody's share beyond one more holder;
- when the newest holder leaves, the others' shares follow what is held now, never an old plan;
- a clock step of an hour either way, as psutil and the wall clock would see it, leaves every
  live kernel's lease, registry entry and TLS folder in place;
- every start takes the room's lock with ``fs.protected_regular`` at 0, 1 and 2;
- a directory one student made is refused by the others in a sentence naming what the
  instructor runs; in the instructor's directory, no student can remove, replace or squat
  another's lease or folder.

The accounts need root (CI runs as root): elsewhere those cases skip, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_user import as_student, users
from room_locks import StandIn
from support import run_cell as run
from support import use_stand_in_room, wait_until

from gpudask_jupyter import registry
from gpudask_jupyter.cluster.room import leases
from gpudask_jupyter.cluster.room.leases import RoomDir
from gpudask_jupyter.cluster.room.placement import CONTEXT_RESERVE
from gpudask_jupyter.machine import processes

GiB = 2**30
GPU = "GPU-00000000-0000-0000-0000-000000000000"  # the seam's first GPU
START = "%load_ext gpudask_jupyter\n%gpu_cluster start --n-workers 1 --memory-limit 1GB"
SHARE = "from gpudask_jupyter.cluster.room import holder\n"


@pytest.fixture
def elastic(room_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The room an instructor who set nothing leaves, on one seam GPU of 140 GiB; returns the
    seam's memory file (what NVML shows), empty until a test writes it."""
    monkeypatch.setenv("DASK_GPUDASK__ROOM_STUDENTS", "0")
    memory = tmp_path / "nvml.json"
    memory.write_text("{}")
    use_stand_in_room(monkeypatch, "1:140GiB", memory)
    return memory


def _show(memory: Path, held: dict[int, int]) -> None:
    """What NVML shows of the seam GPU: each pid's bytes, a context included."""
    processes = {str(pid): size + CONTEXT_RESERVE for pid, size in held.items()}
    memory.write_text(json.dumps({GPU: {"processes": processes}}))


def _share_becomes(kc: Any, expected: int) -> int:
    """Wait (in the kernel, with a deadline far above its one-second look) until the kernel's
    share is ``expected``; the share it has then."""
    out = run(
        kc,
        SHARE + "import time\n"
        "end = time.monotonic() + 60\n"
        f"while holder.this_process.current_share() != {expected} and time.monotonic() < end:\n"
        "    time.sleep(0.1)\n"
        "print('SHARE', holder.this_process.current_share())",
    )["output"]
    return int(out.split("SHARE")[-1].split()[0])


def _usable(contexts: int) -> int:
    return 140 * GiB - contexts * CONTEXT_RESERVE


@pytest.fixture
def accounts() -> Iterator[list[Any]]:
    with users(2) as made:
        yield made


@pytest.fixture
def public_room(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A room directory as the instructor makes it (root's, sticky, open to all), where every
    account can reach it (a test's own folder is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="gpudask-room-test-", dir="/tmp"))
    os.chmod(path, 0o1777)
    monkeypatch.setenv("DASK_GPUDASK__ROOM_DIR", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


TAKE = """
held = holder.this_process.take(holder.room_devices(), None, None)
print(json.dumps({"share": held.lease.gpus[0].share, "path": str(held.lease.path)}), flush=True)
sys.stdin.readline()
"""


SWARM = 30


def test_another_students_swarm_forgeries_and_claims_cost_the_others_nothing(
    kernels: Any, elastic: Path, accounts: list[Any], public_room: Path
) -> None:
    """The hub's attacks, by mallory, on two kernels of another student: 30 processes of her
    own, each holding the lock of a well-formed lease (held 139 GiB, taken far in the future,
    naming the student's kernels as its workers); a lease naming the student's kernel pid;
    garbage, a link and folders named after others in her folder. The student's kernels keep
    what an honest second student holding nothing would leave them, the room shows mallory as
    one student, and nothing of hers reaches the student's cells."""
    _, a = kernels()
    _, b = kernels()
    for kc in (a, b):
        assert run(kc, START)["status"] == "ok"
    pids = [int(run(kc, "import os; print(os.getpid())")["output"]) for kc in (a, b)]
    _show(elastic, {pids[0]: 30 * GiB, pids[1]: 30 * GiB})
    alone = _usable(2) // 2  # one student: its part, the whole GPU, split among its kernels
    assert [_share_becomes(kc, alone) for kc in (a, b)] == [alone, alone]
    mallory = accounts[0]
    theirs = RoomDir(public_room, uid=mallory.pw_uid)
    folder = theirs.folder()
    os.chown(folder, mallory.pw_uid, mallory.pw_gid)
    swarm = [StandIn(uid=mallory.pw_uid) for _ in range(SWARM)]
    claimer = StandIn(uid=mallory.pw_uid)  # holds the lock of a lease naming a's kernel
    try:
        for process in [*swarm, claimer]:
            process.hold(folder)
        for i, process in enumerate(swarm):
            lease = leases.Lease(
                mallory.pw_uid, mallory.pw_name, process.pid,
                processes.process_started(process.pid) or 0, f"k-swarm-{i}",
                [leases.Share(GPU, 0, 139 * GiB)], 4e9, 4e9, workers=pids,
                held=139 * GiB, elastic=True,
            )  # fmt: skip
            os.chown(theirs.write(lease), mallory.pw_uid, mallory.pw_gid)
        claimed = leases.Lease(
            mallory.pw_uid, mallory.pw_name, pids[0], processes.process_started(pids[0]) or 0,
            "k-claimed", [leases.Share(GPU, 0, 139 * GiB)], 4e9, 4e9, held=139 * GiB,
            elastic=True,
        )  # fmt: skip
        claimed.path = folder / f"{claimer.pid}{leases.SUFFIX}"
        os.chown(theirs.write(claimed), mallory.pw_uid, mallory.pw_gid)
        for name, data in [("garbage", "{not json"), ("1", "[]")]:
            planted = folder / f"{name}{leases.SUFFIX}"
            planted.write_text(data)
            os.chown(planted, mallory.pw_uid, mallory.pw_gid)
        os.symlink("/etc/passwd", folder / f"link{leases.SUFFIX}")
        squat = public_room / f"gpudask-room-{os.getuid()}-0badf00d"  # named after the student
        squat.mkdir()
        os.chown(squat, mallory.pw_uid, mallory.pw_gid)
        # what one honest student holding nothing would leave: two accounts, contexts twice
        two = _usable(4) // 2 // 2
        assert two > 30 * GiB
        assert [_share_becomes(kc, two) for kc in (a, b)] == [two, two]
        cell = run(a, "%gpu_cluster room")
        out = cell["output"]
        assert f"2 student(s), {2 + SWARM} kernel(s)" in out, out
        assert f"1 other student(s), {SWARM} kernel(s)" in out, out
        # two rows of the student's own, a's and b's: the claim on a's pid is no "you" row
        assert out.count("you (kernel") == 1 and f"you (kernel {pids[0]})" not in out, out
        assert "5 file(s) of 1 account(s)" in out and "do not count" in out, out
        assert "ignoring" not in out and "room:" not in out.split("The room")[0], out
        said = run(a, "print('after')")["output"]
        assert said.strip() == "after", said  # nothing of hers in a later cell either
    finally:
        for process in [*swarm, claimer]:
            process.stop()
    assert [_share_becomes(kc, alone) for kc in (a, b)] == [alone, alone]  # her locks went


def test_the_newest_holder_leaving_leaves_shares_of_what_is_free(
    kernels: Any, elastic: Path
) -> None:
    """The issue's case, on three kernels of one student (the tests' kernels share an account,
    and a student's part is shared among its kernels as the room's is among students): B
    arrives while A holds nothing; A grows to 100 GiB; C arrives, then leaves: A may keep its
    100 GiB and B's share is what nobody holds, not an old plan's."""
    _, a = kernels()
    _, b = kernels()
    for kc in (a, b):
        assert run(kc, START)["status"] == "ok"
    a_pid = int(run(a, "import os; print(os.getpid())")["output"])
    _show(elastic, {a_pid: 100 * GiB})
    _, c = kernels()
    assert run(c, START)["status"] == "ok"
    third = (_usable(2) - 100 * GiB) // 2  # one account: its contexts set aside once
    assert _share_becomes(b, third) == third
    assert "Cluster stopped" in run(c, "%gpu_cluster stop")["output"]
    left = _usable(2) - 100 * GiB  # all that A does not hold, contexts set aside
    assert _share_becomes(b, left) == left
    assert _share_becomes(a, 100 * GiB) == 100 * GiB  # never below what it holds
    free = 140 * GiB - (100 * GiB + CONTEXT_RESERVE) - CONTEXT_RESERVE  # B's own context
    assert left <= free


def _asked_to_give_back(room: Path, pid: int) -> int:
    """How often the kernel ``pid`` asked its processes to give back cached memory, as its lease
    says; waits (deadline far above its one-second look) until it asked at least once."""

    def asked() -> int:
        own = [lease for lease in RoomDir(room).leases() if lease.pid == pid]
        return own[0].give_back if own else 0

    return wait_until(asked, 60, f"kernel {pid} to ask for cached memory back")


def test_a_holder_above_an_equal_part_gives_back_what_its_pools_keep(
    kernels: Any, elastic: Path, room_env: Path
) -> None:
    """The H200's case: A took 100 GiB alone and freed it, but its pools keep it, so NVML shows
    it held. Alone, A keeps it; when B comes (another kernel of the student: it is kept below
    an equal part of the student's share all the same), A's kernel asks its processes to give
    it back, and once the machine shows it given back, A and B have equal parts."""
    _, a = kernels()
    assert run(a, START)["status"] == "ok"
    a_pid = int(run(a, "import os; print(os.getpid())")["output"])
    _show(elastic, {a_pid: 100 * GiB})
    assert _share_becomes(a, _usable(2)) == _usable(2)  # alone: the whole GPU, nothing asked
    assert [lease.give_back for lease in RoomDir(room_env).leases()] == [0]
    _, b = kernels()
    assert run(b, START)["status"] == "ok"
    assert _asked_to_give_back(room_env, a_pid) >= 1
    _show(elastic, {a_pid: 0})  # what the GPU shows once A's pools went
    two = _usable(2) // 2
    assert [_share_becomes(kc, two) for kc in (a, b)] == [two, two]
    b_pid = int(run(b, "import os; print(os.getpid())")["output"])
    assert [lease.give_back for lease in RoomDir(room_env).leases() if lease.pid == b_pid] == [0]


def test_a_clock_step_leaves_every_live_kernels_files(
    kernels: Any, room_env: Path, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stepping the clock moves the boot time psutil computes every process's start from; the
    package names a process by its start in clock ticks since boot, which does not move."""
    import psutil

    from gpudask_jupyter.remains import leftovers

    km, kc = kernels()
    assert run(kc, START)["status"] == "ok"
    entries = registry.read_all(runtime_dir)
    assert list(entries) == [km.kernel_id]
    tls = runtime_dir / f"{registry.ENTRY_PREFIX}{km.kernel_id}-tls"
    lease_files = sorted(room_env.glob(f"*/*{leases.SUFFIX}"))
    assert tls.is_dir() and len(lease_files) == 1
    real_boot, real_create = psutil.boot_time, psutil.Process.create_time
    for step in (3600.0, -3600.0):
        monkeypatch.setattr(psutil, "boot_time", lambda step=step: real_boot() + step)
        monkeypatch.setattr(
            psutil.Process, "create_time", lambda self, step=step: real_create(self) + step
        )
        leftovers.remove()  # what the server extension runs every few seconds
        assert registry.prune(runtime_dir) == []
        assert RoomDir(room_env).prune() == 0
        assert list(registry.read_all(runtime_dir)) == [km.kernel_id]
        assert tls.is_dir() and sorted(room_env.glob(f"*/*{leases.SUFFIX}")) == lease_files
        assert len(RoomDir(room_env).leases()) == 1
    monkeypatch.undo()
    assert run(kc, "%gpu_cluster status")["status"] == "ok"


@pytest.fixture
def protected_regular() -> Iterator[Path]:
    path = Path("/proc/sys/fs/protected_regular")
    if not path.exists() or os.getuid() != 0:
        pytest.skip("setting fs.protected_regular needs root and /proc/sys")
    before = path.read_text().strip()
    try:
        path.write_text("0\n")
    except OSError as err:
        pytest.skip(f"fs.protected_regular cannot be set here ({err.strerror})")
    yield path
    path.write_text(f"{before}\n")


@pytest.mark.parametrize("level", ["0", "1", "2"])
def test_every_start_takes_the_rooms_lock_whatever_protected_regular_says(
    room_env: Path,
    accounts: list[Any],
    public_room: Path,
    protected_regular: Path,
    level: str,
) -> None:
    protected_regular.write_text(f"{level}\n")
    start = """
warned = []
leases.log.warning = lambda text, *args, **kw: warned.append(text % args)
directory = holder.this_process.room_dir()
assert directory.prepare(), directory.problem
with directory.locked(wait=60) as locked:
    pass
held = holder.this_process.take(holder.room_devices(), None, None)
print(json.dumps({"locked": locked, "share": held.lease.gpus[0].share, "warned": warned}))
sys.stdin.readline()
"""
    students = [as_student(user, start, room_students=0) for user in accounts]
    try:
        for student in students:
            said = json.loads(student.stdout.readline())  # type: ignore[union-attr]
            assert said["locked"] is True and said["warned"] == [], said
            assert said["share"] > 0
        assert len(RoomDir(public_room).leases()) == 2
    finally:
        for student in students:
            student.communicate("\n")


def test_a_directory_one_student_made_is_refused_by_the_others(
    room_env: Path, accounts: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    maker, other = accounts
    made = Path(tempfile.mkdtemp(prefix="gpudask-made-", dir="/tmp"))
    try:
        os.chmod(made, 0o1777)
        os.chown(made, maker.pw_uid, maker.pw_gid)  # as if the first student's kernel made it
        refused = """
try:
    holder.this_process.take(holder.room_devices(), None, None)
    print(json.dumps({"error": None}), flush=True)
except Exception as err:
    print(json.dumps({"error": str(err)}), flush=True)
"""
        student = as_student(other, refused, room_dir=str(made), room_students=0)
        said = json.loads(student.communicate()[0])
        assert said["error"].startswith("The room's directory cannot be used: ")
        assert f"belongs to {maker.pw_name}, who could remove or replace" in said["error"]
        assert "install -d -m 1777 -o root" in said["error"]
        assert "Nothing was started" in said["error"]
    finally:
        shutil.rmtree(made, ignore_errors=True)


def test_no_student_can_remove_replace_or_squat_anothers_lease(
    room_env: Path, accounts: list[Any], public_room: Path
) -> None:
    mallory, alice = accounts
    # mallory comes first and takes the name of alice's folder, and a lease file name in it
    squat = f"""
os.mkdir({str(public_room)!r} + "/gpudask-room-{alice.pw_uid}", 0o755)
print("squatted", flush=True)
"""
    squatter = as_student(mallory, squat, room_students=0)
    assert squatter.communicate()[0].strip() == "squatted"
    student = as_student(alice, TAKE, room_students=0)
    try:
        placed = json.loads(student.stdout.readline())  # type: ignore[union-attr]
        path = Path(placed["path"])
        assert path.parent.name.startswith(f"gpudask-room-{alice.pw_uid}-")  # avoided
        assert path.parent.stat().st_uid == alice.pw_uid
        tamper = f"""
path = {str(path)!r}
folder = os.path.dirname(path)
tried = {{}}
for name, attempt in [
    ("remove", lambda: os.unlink(path)),
    ("replace", lambda: open(path, "w").write("{{}}")),
    ("plant", lambda: open(folder + "/x.lease.json", "w").write("{{}}")),
    ("chmod folder", lambda: os.chmod(folder, 0o777)),
    ("rename folder", lambda: os.rename(folder, folder + "-gone")),
    ("remove folder", lambda: os.rmdir(folder)),
    ("chmod room", lambda: os.chmod({str(public_room)!r}, 0o700)),
]:
    try:
        attempt()
        tried[name] = "done"
    except OSError as err:
        tried[name] = type(err).__name__
print(json.dumps(tried), flush=True)
"""
        attacker = as_student(mallory, tamper, room_students=0)
        tried = json.loads(attacker.communicate()[0])
        assert set(tried.values()) == {"PermissionError"}, tried
        found = RoomDir(public_room).leases()
        assert [lease.uid for lease in found] == [alice.pw_uid]
        assert stat.S_IMODE(public_room.stat().st_mode) == 0o1777
    finally:
        student.communicate("\n")
    assert RoomDir(public_room).leases() == []  # her kernel ended: nothing counts


FAKE_CUPY = """
import os
SEEN = {"visible": os.environ.get("CUDA_VISIBLE_DEVICES")}


class _Pool:
    limit = None

    def set_limit(self, size):
        _Pool.limit = size

    def used_bytes(self):
        return 0


def get_default_memory_pool():
    return _Pool()
"""


@pytest.fixture
def fake_cupy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``cupy`` the kernels import: it notes the GPUs the kernel may see as it is imported,
    and keeps the pool limit set on it."""
    (tmp_path / "fake" / "cupy").mkdir(parents=True)
    (tmp_path / "fake" / "cupy" / "__init__.py").write_text(FAKE_CUPY)
    paths = [str(tmp_path / "fake"), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    return tmp_path / "fake"


def test_plain_cupy_in_a_cell_places_and_caps_the_kernel(
    kernels: Any, room_env: Path, fake_cupy: Path
) -> None:
    """No magic before it: the import itself takes the kernel's place, pins it to its GPU
    before the library runs, and caps it once it has."""
    _, kc = kernels()
    out = run(
        kc,
        "%load_ext gpudask_jupyter\n"
        "import importlib.util\n"
        "from gpudask_jupyter.cluster.room import caps, holder\n"
        "assert importlib.util.find_spec('cupy') is not None\n"
        # a look at what is installed places nothing
        "print('LOOKED', holder.this_process.current())\n"
        "import cupy\n"
        "lease = holder.this_process.current()\n"
        "print('SEEN', cupy.SEEN['visible'])\n"
        "print('LEASE', lease.gpus[0].uuid, lease.gpus[0].share)\n"
        "cap = caps.kernel_part(lease.gpus[0].share)\n"
        "print('LIMIT', cupy.get_default_memory_pool().limit, cap)",
    )
    assert out["status"] == "ok", out["output"]
    said = {line.split()[0]: line.split()[1:] for line in out["output"].splitlines() if line}
    assert said["LOOKED"] == ["None"]
    assert said["SEEN"] == [said["LEASE"][0]]  # pinned before the library ran
    assert said["LIMIT"][0] == said["LIMIT"][1]  # and capped once it had
    assert len(sorted(room_env.glob(f"*/*{leases.SUFFIX}"))) == 1


def test_plain_cupy_in_a_full_room_is_refused_in_a_sentence(
    kernels: Any, room_env: Path, fake_cupy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpudask_jupyter.cluster.room.leases import Lease, Share
    from gpudask_jupyter.machine import processes

    monkeypatch.setenv("DASK_GPUDASK__ROOM_SHARE", "15GiB")  # one student fills a GPU
    sleepers = [StandIn() for _ in range(2)]  # two other kernels, holding their leases' locks
    try:
        directory = RoomDir(room_env)
        assert directory.prepare(), directory.problem
        for i, sleeper in enumerate(sleepers):
            while (started := processes.process_started(sleeper.pid)) is None:
                pass
            uuid = f"GPU-00000000-0000-0000-0000-{i:012d}"
            sleeper.hold(directory.folder())
            directory.write(
                Lease(
                    os.getuid(), "me", sleeper.pid, started, f"k{i}", [Share(uuid, i, 15 * GiB)],
                    0.0, 0.0,
                )
            )  # fmt: skip
        _, kc = kernels()
        out = run(kc, "%load_ext gpudask_jupyter\nimport cupy")
        assert out["status"] == "error"
        assert "ImportError: No GPU here has room for another share" in out["output"], out
        assert "this kernel has no place on it" in out["output"]
    finally:
        for sleeper in sleepers:
            sleeper.stop()
