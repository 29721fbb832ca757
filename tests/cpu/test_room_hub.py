"""The room on a real JupyterHub, one Linux account per student (its local-process spawner runs
each student's server as that student), with the room's test seams for two 16 GiB GPUs and for
what NVML shows of their memory. Four honest students start a cluster each; then the hub's
attacks, each with every honest student's share as numbers before and after:

- another student (mallory) holds one kernel's lease on GPU 0, then 29 more (a swarm of her own
  processes, each holding the lock of a well-formed lease that claims 139 GiB and names the
  honest kernels as its workers): the others pay for one more student, never for thirty;
- a lease of hers naming an honest student's kernel pid: nothing changes, and the student sees
  no second "you";
- garbage, a link and a folder named after the student in the room: nothing changes, and none
  of it reaches a student's cell;
- one student opens three more notebooks, each starting a cluster: the others keep their share.

One more honest student's server runs in a PID namespace of its own (``unshare --pid --fork
--mount-proc`` as root, then that student's uid, as container spawners run one): its lease
counts for the others (its lock, seen in ``/proc/locks`` with the pid they know it by), and the
share it computes from inside, where nobody else's processes can be seen, is theirs too.

``fs.protected_regular`` is 1, as the instructors' guide sets it. The servers need a Python that
every account can run: a virtual environment of the machine's own ``/usr/bin/python3`` with the
lock installed (made once, beside the checkout); where there is none, or the checkout cannot be
read by other accounts, the test skips saying so.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hub import ROOT, kernel_in, running_hub
from local_user import users
from room_locks import StandIn
from support import run_cell as run
from support import stand_in_room

from gpudask_jupyter.cluster.room import leases
from gpudask_jupyter.cluster.room.leases import Lease, RoomDir, Share
from gpudask_jupyter.cluster.room.placement import CONTEXT_RESERVE
from gpudask_jupyter.machine import processes

pytestmark = pytest.mark.timeout(900)

GiB = 2**30
SHARED = ROOT / ".venv-hub"
LOCK = ROOT / "requirements" / "test.lock"
GPUS = [f"GPU-00000000-0000-0000-0000-{i:012d}" for i in range(2)]  # the seam's
START = (
    "%load_ext gpudask_jupyter\n"
    "client = %gpu_cluster start --n-workers 1 --memory-limit 1GB\n"
    "import os\n"
    "from gpudask_jupyter.cluster.room import holder\n"
    "print('KERNEL', os.getpid(), holder.this_process.current().gpus[0].uuid)"
)
SWARM = 30
#: the hub's spawner for the student whose server runs in a PID namespace of its own
CONTAINED = """
import os, pwd
from jupyterhub.spawner import LocalProcessSpawner


class ContainedSpawner(LocalProcessSpawner):
    def make_preexec_fn(self, name):
        if name != {name!r}:
            return super().make_preexec_fn(name)
        home = {home!r}

        def preexec():  # root still: unshare needs it; setpriv then becomes the student
            os.chdir(home)

        return preexec

    async def start(self):
        if self.user.name == {name!r}:
            user = pwd.getpwnam({name!r})
            self.cmd = [
                "unshare", "--pid", "--fork", "--kill-child", "--mount-proc",
                "setpriv", f"--reuid={{user.pw_uid}}", f"--regid={{user.pw_gid}}", "--clear-groups",
                *self.cmd,
            ]
        return await super().start()


c.JupyterHub.spawner_class = ContainedSpawner
"""


@pytest.fixture(scope="module")
def shared_python() -> Path:
    """A Python with the lock installed that every account can run."""
    system = Path("/usr/bin/python3")
    if os.getuid() != 0:
        pytest.skip("servers of several accounts need root (CI runs the tests as root)")
    if not system.exists():
        pytest.skip("the machine has no /usr/bin/python3 that every account could run")
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    stamp = SHARED / "lock.sha256"
    if not stamp.exists() or stamp.read_text() != digest:
        shutil.rmtree(SHARED, ignore_errors=True)
        subprocess.run([str(system), "-m", "venv", str(SHARED)], check=True)
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "lock_install.sh"), str(SHARED), "sync"], check=True
        )
        stamp.write_text(digest)
    python = SHARED / "bin" / "python"
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    check = subprocess.run(
        [*nobody, str(python), "-c", "import gpudask_jupyter, jupyterhub"],
        cwd="/",
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        pytest.skip(f"other accounts cannot run {python} here: {check.stderr[-300:]}")
    return python


@pytest.fixture
def protected_regular() -> Iterator[None]:
    path = Path("/proc/sys/fs/protected_regular")
    before = path.read_text().strip()
    try:
        path.write_text("1\n")
    except OSError as err:
        pytest.skip(f"fs.protected_regular cannot be set here ({err.strerror})")
    yield
    path.write_text(f"{before}\n")


class Room:
    """The hub's room: its directory, the seam's memory file, the students' kernels."""

    def __init__(self, work: Path) -> None:
        self.path = work / "room"
        self.path.mkdir()
        os.chmod(self.path, 0o1777)
        self.memory = work / "nvml.json"
        self.memory.write_text("{}")
        os.chmod(self.memory, 0o644)
        self.held: dict[str, dict[int, int]] = {uuid: {} for uuid in GPUS}
        self.kernels: dict[str, tuple[Any, int, str]] = {}  # name: (client, pid, GPU uuid)

    def show(self, name: str, size: int) -> None:
        """NVML shows ``name``'s kernel holding ``size`` bytes (and its context)."""
        _, pid, uuid = self.kernels[name]
        self.held[uuid][pid] = size + CONTEXT_RESERVE
        data = {u: {"processes": {str(p): b for p, b in h.items()}} for u, h in self.held.items()}
        self.memory.write_text(json.dumps(data))

    def shares(self, names: list[str], expected: dict[str, int]) -> dict[str, int]:
        """Each named student's share, once each kernel found what ``expected`` says (its
        follower looks every second; waited for with a deadline far above that)."""
        found = {}
        for name in names:
            kc, _, _ = self.kernels[name]
            code = (
                "import time\n"
                "from gpudask_jupyter.cluster.room import holder\n"
                "end = time.monotonic() + 60\n"
                "while (holder.this_process.current_share() != "
                f"{expected[name]} and time.monotonic() < end):\n"
                "    time.sleep(0.1)\n"
                "print('SHARE', holder.this_process.current_share())"
            )
            out = run(kc, code)["output"]
            found[name] = int(out.split("SHARE")[-1].split()[0])
        return found


def _gib(shares: dict[str, int]) -> str:
    return ", ".join(f"{name} {size / GiB:.2f} GiB" for name, size in sorted(shares.items()))


def _level(usable: float, accounts: int) -> int:
    return int(usable * GiB) // accounts


def _mallory_lease(uid: int, user: str, pid: int, folder: Path, workers: list[int]) -> None:
    lease = Lease(
        uid, user, pid, processes.process_started(pid) or 0, f"k-{pid}",
        [Share(GPUS[0], 0, 139 * GiB)], 4e9, 4e9, workers=workers, held=139 * GiB, elastic=True,
    )  # fmt: skip
    path = RoomDir(folder.parent, uid=uid).write(lease)
    os.chown(path, uid, uid)


def test_the_hubs_attacks_cost_the_honest_students_nothing(
    shared_python: Path, protected_regular: None
) -> None:
    work = Path(tempfile.mkdtemp(prefix="gpudask-hub-room-", dir="/tmp"))
    os.chmod(work, 0o755)
    room = Room(work)
    said: list[str] = []
    try:
        with users(6) as accounts:
            names = [a.pw_name for a in accounts]
            honest, mallory, contained = names[:4], accounts[4], names[5]
            for account in accounts:
                for folder in (
                    work / f"home-{account.pw_name}",
                    work / f"runtime-{account.pw_name}",
                ):
                    folder.mkdir(exist_ok=True)
                    os.chown(folder, account.pw_uid, account.pw_gid)
                    os.chmod(folder, 0o700)
            environment = {
                "PATH": f"{shared_python.parent}:/usr/bin:/bin",
                **stand_in_room("2:16GiB", room.memory, path=""),
                "DASK_GPUDASK__ROOM_DIR": str(room.path),
                "DASK_GPUDASK__SHARED_MACHINE": "true",
                "DASK_GPUDASK__ROOM_STUDENTS": "0",
                "DASK_GPUDASK__ROOM_GPUS": "1",
            }
            extra = (
                f"\nc.Spawner.cmd = [{str(shared_python)!r}, '-m', 'jupyterhub.singleuser']\n"
                f'c.LocalProcessSpawner.home_dir_template = "{work}/home-{{username}}"\n'
                + CONTAINED.format(name=contained, home=str(work / f"home-{contained}"))
            )
            with running_hub(work, names, environment, extra) as hub:
                for name in honest:
                    hub.start_server(name)
                    kc = kernel_in(hub, name)
                    reply = run(kc, START)
                    assert reply["status"] == "ok", reply["output"]
                    pid, uuid = reply["output"].split("KERNEL")[1].split()[:2]
                    room.kernels[name] = (kc, int(pid), uuid)
                    assert processes.owner_uid(int(pid)) == pwd.getpwnam(name).pw_uid
                on = {uuid: [n for n in honest if room.kernels[n][2] == uuid] for uuid in GPUS}
                assert sorted(len(v) for v in on.values()) == [2, 2], on  # spread
                for name in honest:
                    room.show(name, 3 * GiB)
                # two students on each 16 GiB GPU, each holding 3 GiB: each account's two
                # contexts set aside, an equal part of the rest
                alone = _level(16 - 2 * 1.0, 2)
                before = room.shares(honest, dict.fromkeys(honest, alone))
                said.append(f"four students: {_gib(before)}")
                assert set(before.values()) == {alone}

                # mallory: one kernel of hers on GPU 0 (a stand-in holding its lease's lock)
                theirs = RoomDir(room.path, uid=mallory.pw_uid)
                folder = theirs.folder()
                os.chown(folder, mallory.pw_uid, mallory.pw_gid)
                pids = [room.kernels[n][1] for n in honest]
                swarm = [StandIn(uid=mallory.pw_uid) for _ in range(SWARM)]
                claimer = StandIn(uid=mallory.pw_uid)
                try:
                    swarm[0].hold(folder)
                    _mallory_lease(mallory.pw_uid, mallory.pw_name, swarm[0].pid, folder, pids)
                    three = _level(16 - 3 * 1.0, 3)
                    gpu0 = on[GPUS[0]]
                    expected = {n: (three if n in gpu0 else alone) for n in honest}
                    one = room.shares(honest, expected)
                    said.append(f"mallory with one kernel on GPU 0: {_gib(one)}")
                    assert one == expected
                    for process in swarm[1:]:
                        process.hold(folder)
                        _mallory_lease(mallory.pw_uid, mallory.pw_name, process.pid, folder, pids)
                    assert len(RoomDir(room.path).leases()) == 4 + SWARM
                    many = room.shares(honest, expected)
                    said.append(f"mallory with a swarm of {SWARM}: {_gib(many)}")
                    assert many == one

                    # a lease of hers naming the first student's kernel
                    victim = honest[0]
                    claimer.hold(folder)
                    claim = Lease(
                        mallory.pw_uid, mallory.pw_name, room.kernels[victim][1],
                        processes.process_started(room.kernels[victim][1]) or 0, "k-claim",
                        [Share(room.kernels[victim][2], 0, 139 * GiB)], 4e9, 4e9,
                        held=139 * GiB, elastic=True,
                    )  # fmt: skip
                    claim.path = folder / f"{claimer.pid}{leases.SUFFIX}"
                    os.chown(theirs.write(claim), mallory.pw_uid, mallory.pw_gid)
                    claimed = room.shares(honest, expected)
                    said.append(f"a lease claiming {victim}'s kernel: {_gib(claimed)}")
                    assert claimed == one
                    view = run(room.kernels[victim][0], "%gpu_cluster room")["output"]
                    assert "you (" not in view, view  # no second "you" holding its memory

                    # planted files and a folder named after a student
                    for name, data in [("1", "garbage"), ("2", "[]")]:
                        planted = folder / f"{name}{leases.SUFFIX}"
                        planted.write_text(data)
                        os.chown(planted, mallory.pw_uid, mallory.pw_gid)
                    os.symlink("/etc/shadow", folder / f"link{leases.SUFFIX}")
                    squat = room.path / f"gpudask-room-{pwd.getpwnam(victim).pw_uid}-0badf00d"
                    squat.mkdir()
                    os.chown(squat, mallory.pw_uid, mallory.pw_gid)
                    planted_shares = room.shares(honest, expected)
                    said.append(f"planted files: {_gib(planted_shares)}")
                    assert planted_shares == one
                    for name in honest:
                        cell = run(room.kernels[name][0], "%gpu_cluster status")["output"]
                        assert "ignoring" not in cell and "lease.json" not in cell, cell
                    view = run(room.kernels[victim][0], "%gpu_cluster room")["output"]
                    assert "ignoring" not in view and "do not count" in view, view
                finally:
                    for process in [*swarm, claimer]:
                        process.stop()

                # mallory gone; one student opens three more notebooks, each with a cluster
                back = room.shares(honest, dict.fromkeys(honest, alone))
                said.append(f"mallory gone: {_gib(back)}")
                assert set(back.values()) == {alone}
                busy = honest[3]
                extra_kernels = []
                for _ in range(3):
                    kc = kernel_in(hub, busy)
                    reply = run(kc, START)
                    assert reply["status"] == "ok", reply["output"]
                    extra_kernels.append(kc)
                others = [n for n in honest if n != busy]
                after = room.shares(others, dict.fromkeys(others, alone))
                said.append(f"{busy} with four notebooks: {_gib(after)}")
                assert set(after.values()) == {alone}

                # a fifth student, whose server runs in a PID namespace of its own
                hub.start_server(contained)
                kc = kernel_in(hub, contained)
                reply = run(kc, START)
                assert reply["status"] == "ok", reply["output"]
                inside, uuid = reply["output"].split("KERNEL")[1].split()[:2]
                uid = pwd.getpwnam(contained).pw_uid
                (lease,) = [x for x in RoomDir(room.path).leases() if x.uid == uid]
                assert lease.pid == int(inside) and lease.kernel_pid not in (0, int(inside))
                assert processes.owner_uid(lease.kernel_pid) == uid  # the pid we know it by
                room.kernels[contained] = (kc, lease.kernel_pid, uuid)
                room.show(contained, 3 * GiB)
                here = [n for n in honest if room.kernels[n][2] == uuid]
                assert busy not in here and len(here) == 2, (uuid, on)  # the emptier GPU
                three = _level(16 - 3 * 1.0, 3)
                expected = {n: (three if n in here else alone) for n in honest}
                # its part of its GPU divided among its four kernels: the first holds 3 GiB
                expected[busy] = 3 * GiB
                expected[contained] = three  # as it computes its share itself, from inside
                joined = room.shares([*honest, contained], expected)
                said.append(f"a fifth student in a PID namespace of its own: {_gib(joined)}")
                assert joined == expected
                view = run(kc, "%gpu_cluster room")["output"]
                assert "1 GPU" not in view and "3 student(s)" in view, view
                for kc in extra_kernels:
                    kc.stop_channels()
                for kc, _, _ in room.kernels.values():
                    kc.stop_channels()
                for name in [*honest, contained]:
                    hub.stop_server(name)
            # the contained server's namespace outlives the unshare the hub stopped (the test's
            # own wrapper, not a spawner's): every process of the test's accounts goes now
            for account in accounts:
                subprocess.run(["pkill", "-KILL", "-u", str(account.pw_uid)], check=False)
    finally:
        print("\n".join(said))
        shutil.rmtree(work, ignore_errors=True)
