"""The room's invariants at every moment, as a state machine (Hypothesis's stateful testing).

A model machine of two GPUs: students arrive (placed by the package's own choice, on what the
model's NVML shows), leave, are killed with -9, grow and release memory within the cap their
own kernel computes (or beyond it, as CUDA outside RMM would), processes outside the room take
memory, other students forge leases (every field valid, any figures, taken far in the future,
naming others' workers) or plant corrupt files, the clock is stepped, and NVML hides the
processes of a GPU now and then (a container). The lease files are real, in a room directory
of the test's own, read by the package's own reader; only whether a kernel still lives, a
process's parent and its account come from the model.

After every step, on every GPU, for every holder, its cap as its own kernel computes it:

1. is at least what it holds;
2. leaves no more to take than is free on the GPU, once the contexts its holders have yet to
   make are set aside (so that an allocation up to one's cap never fails for lack of memory):
   the caps, with what each holds beyond its cap and what outside processes hold, never exceed
   the GPU's usable memory;
3. a start is refused only where no GPU has memory that nobody holds;
4. no figure in another student's lease changes it (the same lease with every figure zeroed
   gives the same caps), and a clock step changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from gpudask_jupyter.cluster.room import holding, leases, measure, proof, shares
from gpudask_jupyter.cluster.room.leases import Lease, RoomDir, Share
from gpudask_jupyter.cluster.room.placement import CONTEXT_RESERVE, CONTEXTS_PER_HOLDER, MIN_SHARE
from gpudask_jupyter.errors import ClusterError
from gpudask_jupyter.machine import nvml, processes

GiB = 2**30
MiB = 2**20
DEVICES = [nvml.Device(i, f"GPU-model-{i}", "model GPU", 16 * GiB) for i in range(2)]
ME = os.getuid()
#: other students' accounts: their own folders need root to make; otherwise one account for all
OTHER = 4_243_000 if ME == 0 else ME


@dataclass
class Student:
    lease: Lease
    uuid: str
    kernel: int
    workers: list[int]  # each below a nanny below the kernel, as dask's are
    nannies: list[int]
    forged: bool = False


@dataclass
class Model:
    alive: set[int] = field(default_factory=set)
    parent: dict[int, int] = field(default_factory=dict)
    owner: dict[int, int] = field(default_factory=dict)
    memory: dict[str, dict[int, int]] = field(default_factory=dict)  # uuid: pid: bytes
    hidden: set[str] = field(default_factory=set)


class Room(RuleBasedStateMachine):
    students = Bundle("students")

    def __init__(self) -> None:
        super().__init__()
        self.path = Path(tempfile.mkdtemp(prefix="gpudask-room-model-"))
        os.chmod(self.path, 0o1777)
        self.model = Model(memory={d.uuid: {} for d in DEVICES})
        self.next_pid = 100_000
        self.live: list[Student] = []
        self.reused: dict[int, int] = {}  # pid: the start of the process that has it now
        self.hidden_pids: set[int] = set()  # pids /proc hides (hidepid)
        self.holders: dict[str, int] = {}  # a lock file's name: the pid (here) that holds it
        self.namespaces = 0
        self._saved = (
            proof.lock_table,
            proof._exists,
            processes.parent_of,
            processes.owner_uid,
            processes.process_started,
        )
        proof.lock_table = self.lock_table  # type: ignore[assignment]
        proof._exists = self.model.alive.__contains__  # type: ignore[assignment]
        processes.parent_of = self.model.parent.get  # type: ignore[assignment]
        processes.owner_uid = self.owner  # type: ignore[assignment]
        processes.process_started = self.started  # type: ignore[assignment]

    def teardown(self) -> None:
        (
            proof.lock_table,
            proof._exists,
            processes.parent_of,
            processes.owner_uid,
            processes.process_started,
        ) = self._saved  # type: ignore[misc]
        shutil.rmtree(self.path, ignore_errors=True)

    def started(self, pid: int) -> int | None:
        """A model process's start (a lease names its kernel's as ``pid * 7``; a reused pid's
        is another), None where ``/proc`` hides it."""
        if pid not in self.model.alive or pid in self.hidden_pids:
            return None
        return self.reused.get(pid, pid * 7)

    def owner(self, pid: int) -> int | None:
        return None if pid in self.hidden_pids else self.model.owner.get(pid)

    def lock_table(self, path: str = proof.LOCKS) -> dict[proof.LockId, int]:
        """The machine's locks: every live model kernel holds the lock beside its lease (the
        lock files are real, the holders the model's; a reused pid holds none)."""
        table = {}
        for lock in self.path.glob(f"*/*{proof.LOCK_SUFFIX}"):
            pid = self.holders.get(lock.name, 0)
            if pid in self.model.alive and pid not in self.reused:
                info = os.stat(lock)
                table[(os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)] = pid
        return table

    # -- the machine as NVML shows it -------------------------------------------------------

    def _pid(self, uid: int, parent: int = 1) -> int:
        self.next_pid += 1
        self.model.alive.add(self.next_pid)
        self.model.parent[self.next_pid] = parent
        self.model.owner[self.next_pid] = uid
        return self.next_pid

    def _used(self, uuid: str) -> int:
        return sum(self.model.memory[uuid].values())

    def _free(self, uuid: str) -> int:
        return DEVICES[0].memory_total - self._used(uuid)

    def nvml(self) -> dict[str, holding.GpuMemory]:
        out = {}
        for device in DEVICES:
            shown = {} if device.uuid in self.model.hidden else dict(self.model.memory[device.uuid])
            out[device.uuid] = holding.GpuMemory(
                device.uuid, device.memory_total, self._used(device.uuid), shown
            )
        return measure.traced(out)  # the lineages as the model's process table shows them

    def room(self, uid: int = ME) -> RoomDir:
        directory = RoomDir(self.path, uid=uid)
        folder = directory.folder()
        if os.stat(folder).st_uid != uid:
            os.chown(folder, uid, -1)
        return directory

    def write(self, lease: Lease, holder: int | None = None) -> None:
        """Write ``lease`` and its lock file, held by ``holder`` (by default its kernel, as
        this process numbers it)."""
        path = self.room(lease.uid).write(lease)
        lock = path.with_name(path.name[: -len(leases.SUFFIX)] + proof.LOCK_SUFFIX)
        self.holders.setdefault(lock.name, lease.pid if holder is None else holder)
        if not lock.exists():
            lock.touch(mode=proof.LOCK_MODE)
            os.chmod(lock, proof.LOCK_MODE)
        if lease.uid != ME:
            os.chown(path, lease.uid, -1)
            os.chown(lock, lease.uid, -1)

    def counted(self) -> list[Lease]:
        return RoomDir(self.path).leases()

    def cap(self, student: Student, found: list[Lease] | None = None) -> int:
        """The cap ``student``'s own kernel computes (its own figure counted for itself)."""
        own_held = max(0, self.model.memory[student.uuid].get(student.kernel, 0) - CONTEXT_RESERVE)
        found = self.counted() if found is None else found
        return shares.cap_of(student.lease, found, self.nvml(), own_held)

    def expected(self, uuid: str, newcomer: int | None = None) -> dict[str, int] | None:
        """Every holder's cap on GPU ``uuid`` as the room's rule gives it, computed here from
        the model alone (who owns which process, what each holds): water-filled among the
        accounts present, then among each account's kernels; contexts set aside per account,
        as many as its processes on the GPU and at least two. ``newcomer``: a new kernel of
        that account, under the key "new". None where NVML hides the GPU's processes."""
        if uuid in self.model.hidden:
            return None
        memory = self.model.memory[uuid]
        here = [s for s in self.live if s.uuid == uuid]
        held = {}
        processes_of: dict[int, int] = {}
        account = {}
        raw = 0
        for s in here:
            own = [p for p in (s.kernel, *s.workers) if p in memory]
            held[s.lease.key] = sum(max(0, memory[p] - CONTEXT_RESERVE) for p in own)
            raw += sum(memory[p] for p in own)
            account[s.lease.key] = s.lease.uid
            processes_of[s.lease.uid] = processes_of.get(s.lease.uid, 0) + len(own)
        contexts = sum(max(CONTEXTS_PER_HOLDER, n) for n in processes_of.values())
        if newcomer is not None:
            contexts += CONTEXTS_PER_HOLDER
            held["new"], account["new"] = 0, newcomer
        outside = sum(memory.values()) - raw
        total = DEVICES[0].memory_total - CONTEXT_RESERVE * contexts - outside
        uids = sorted(set(account.values()))
        part_held = {u: sum(h for k, h in held.items() if account[k] == u) for u in uids}
        level = _water(total, list(part_held.values()))
        out = {}
        for u in uids:
            keys = [k for k in held if account[k] == u]
            inner = _water(max(part_held[u], level), [held[k] for k in keys])
            out.update({k: max(held[k], inner) for k in keys})
        return out

    # -- what happens in a room -------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        self.room().prepare()

    @rule(
        target=students,
        workers=st.integers(0, 3),
        account=st.sampled_from([ME, OTHER]),
        contained=st.booleans(),
    )
    def arrive(self, workers: int, account: int, contained: bool) -> Student:
        """A kernel takes its place (``contained``: from a server in a PID namespace of its
        own, whose lease names its pid there, 7, and its namespace; the lock table shows the
        pid this process sees)."""
        found = self.counted()
        memory = self.nvml()
        try:
            chosen = shares.choose_elastic(DEVICES, found, 1, memory, uid=account)
        except ClusterError:
            event("a start refused")
            for device in DEVICES:  # refused only where the account's part is held already
                if device.uuid not in self.model.hidden:
                    offered = self.expected(device.uuid, newcomer=account)
                    assert offered is not None and offered["new"] < MIN_SHARE, (device, offered)
            return None  # type: ignore[return-value]
        device = chosen.devices[0]
        kernel = self._pid(account)
        lease = Lease(
            account, f"u{account}", kernel, kernel * 7, f"k{kernel}",
            [Share(device.uuid, device.index, chosen.shares[device.uuid])],
            time.time(), time.time(), elastic=True,
        )  # fmt: skip
        if contained:
            self.namespaces += 1
            lease.pid, lease.started, lease.pidns = 7, 7, 1_000_000 + self.namespaces
            event("a kernel in a PID namespace of its own")
        self.write(lease, holder=kernel)
        self.model.memory[device.uuid][kernel] = CONTEXT_RESERVE  # the kernel's context
        nannies = [self._pid(account, kernel) for _ in range(workers)]
        pids = [self._pid(account, nanny) for nanny in nannies]
        for pid in pids:
            self.model.memory[device.uuid][pid] = CONTEXT_RESERVE
        student = Student(lease, device.uuid, kernel, pids, nannies)
        self.live.append(student)
        event(
            f"{len(self.live)} holders",
        )
        return student

    def _gone(self, student: Student) -> None:
        for pid in (student.kernel, *student.workers, *student.nannies):
            self.model.alive.discard(pid)
            self.model.memory[student.uuid].pop(pid, None)
        if student in self.live:
            self.live.remove(student)

    @rule(student=consumes(students))
    def leave(self, student: Student | None) -> None:
        if student is None or student not in self.live:
            return
        self.room(student.lease.uid).remove(student.lease)
        self._gone(student)

    @rule(student=consumes(students))
    def killed_with_9(self, student: Student | None) -> None:
        """Its file stays; its kernel is gone, and with it what its processes held."""
        if student is None or student not in self.live:
            return
        self._gone(student)

    @rule(student=students, part=st.floats(0.01, 1.0), where=st.integers(0, 3))
    def grow_within_the_cap(self, student: Student | None, part: float, where: int) -> None:
        if student is None or student not in self.live or student.forged:
            return
        held = sum(
            size - CONTEXT_RESERVE
            for pid, size in self.model.memory[student.uuid].items()
            if pid in (student.kernel, *student.workers)
        )
        room = self.cap(student) - held
        amount = int(max(0, room) * part)
        assert amount <= self._free(student.uuid), "an allocation within the cap would not fit"
        pids = [student.kernel, *student.workers]
        self.model.memory[student.uuid][pids[where % len(pids)]] += amount

    @rule(student=students, size=st.integers(0, 8 * GiB))
    def grow_beyond_the_cap(self, student: Student | None, size: int) -> None:
        """CUDA outside RMM: seen, not capped; it takes only what is free on the GPU."""
        if student is None or student not in self.live or student.forged:
            return
        self.model.memory[student.uuid][student.kernel] += min(size, self._free(student.uuid))

    @rule(student=students, part=st.floats(0.0, 1.0))
    def release(self, student: Student | None, part: float) -> None:
        if student is None or student not in self.live:
            return
        for pid in (student.kernel, *student.workers):
            if pid in self.model.memory[student.uuid]:
                extra = self.model.memory[student.uuid][pid] - CONTEXT_RESERVE
                self.model.memory[student.uuid][pid] -= int(extra * part)

    @rule(gpu=st.sampled_from(DEVICES), size=st.integers(0, 6 * GiB))
    def a_process_outside_the_room(self, gpu: nvml.Device, size: int) -> None:
        pid = self._pid(OTHER)
        self.model.memory[gpu.uuid][pid] = min(size, self._free(gpu.uuid))

    @rule(
        target=students,
        gpu=st.sampled_from(DEVICES),
        share=st.integers(0, 2**50),
        held=st.integers(0, 2**50),
        later=st.floats(0, 1e9),
        steal=st.booleans(),
    )
    def forge_a_lease(
        self, gpu: nvml.Device, share: int, held: int, later: float, steal: bool
    ) -> Student:
        """Another student's own lease, every field valid: their live (sleeping) process, any
        share and held figure, taken far in the future, naming others' workers as its own."""
        sleeper = self._pid(OTHER)
        workers = [w for s in self.live for w in s.workers] if steal else []
        lease = Lease(
            OTHER, "mallory", sleeper, sleeper * 7, "k-forged",
            [Share(gpu.uuid, gpu.index, share)], time.time() + later, time.time() + later,
            workers=workers, held=held, elastic=True,
        )  # fmt: skip
        self.write(lease)
        forger = Student(lease, gpu.uuid, sleeper, [], [], forged=True)
        event("a lease forged")
        self.live.append(forger)
        # the same lease with no figure at all gives the same caps to everybody else
        plain = Lease(**{**vars(lease), "held": 0, "workers": [], "taken": 0.0, "active": 0.0})
        plain.gpus = [Share(gpu.uuid, gpu.index, 0)]
        found = self.counted()
        neutral = [plain if x.key == lease.key else x for x in found]
        if gpu.uuid not in self.model.hidden:
            for s in self.live:
                if s is not forger:
                    assert self.cap(s, found) == self.cap(s, neutral), "a forged figure counted"
        return forger

    @rule(gpu=st.sampled_from(DEVICES), count=st.integers(1, 8))
    def a_swarm(self, gpu: nvml.Device, count: int) -> None:
        """Another account starts ``count`` processes of its own, each holding the lock of a
        well-formed lease on ``gpu``: the others' caps are what one holder of that account
        (holding nothing) leaves them."""
        before = None  # a new account there: it costs what one honest student costs
        if any(s.lease.uid == OTHER and s.uuid == gpu.uuid for s in self.live):
            found = self.counted()
            before = {s.lease.key: self.cap(s, found) for s in self.live if s.lease.uid != OTHER}
        for _ in range(count):
            sleeper = self._pid(OTHER)
            lease = Lease(
                OTHER, "mallory", sleeper, sleeper * 7, "k-swarm",
                [Share(gpu.uuid, gpu.index, 2**40)], 4e9, 4e9, held=2**40, elastic=True,
            )  # fmt: skip
            self.write(lease)
            self.live.append(Student(lease, gpu.uuid, sleeper, [], [], forged=True))
        event("a swarm")
        if before is not None and gpu.uuid not in self.model.hidden:
            found = self.counted()
            after = {s.lease.key: self.cap(s, found) for s in self.live if s.lease.uid != OTHER}
            assert after == before, "a swarm of an account present changed another's cap"

    @rule(victim=students)
    def claim_a_pid(self, victim: Student | None) -> None:
        """A lease of another account naming ``victim``'s kernel, its lock held by a process
        of the claimer: it never counts, and changes no cap."""
        if victim is None or victim not in self.live:
            return
        claimer = self._pid(OTHER)
        lease = Lease(
            OTHER, "mallory", victim.kernel, victim.kernel * 7, "k-claim",
            [Share(victim.uuid, 0, 2**40)], 4e9, 4e9, held=2**40, elastic=True,
        )  # fmt: skip
        lease.path = self.room(OTHER).folder() / f"{claimer}{leases.SUFFIX}"
        self.write(lease, holder=claimer)
        lock = lease.path.with_name(f"{claimer}{proof.LOCK_SUFFIX}")
        assert lock.exists()
        event("a pid claimed")

    @rule(student=consumes(students), owner=st.sampled_from([ME, OTHER]))
    def its_pid_is_reused(self, student: Student | None, owner: int) -> None:
        """Killed with -9, and its pid given to a new process (of any account): the lease of
        the kernel that wrote it does not count again."""
        if student is None or student not in self.live:
            return
        self._gone(student)
        self.model.alive.add(student.kernel)
        self.model.owner[student.kernel] = owner
        self.model.parent[student.kernel] = 1
        self.reused[student.kernel] = student.kernel * 11  # another start

    @rule(student=students)
    def proc_hides_it(self, student: Student | None) -> None:
        """``hidepid``: its owner and start can no longer be read; its lock still says it lives."""
        if student is None or student not in self.live:
            return
        self.hidden_pids.add(student.kernel)

    @rule()
    def a_corrupt_file(self) -> None:
        folder = self.room(OTHER).folder()
        path = folder / f"corrupt-{self.next_pid}{leases.SUFFIX}"
        path.write_text(json.dumps({"version": leases.VERSION, "gpus": "all of them"}))
        if OTHER != ME:
            os.chown(path, OTHER, -1)

    @rule(step=st.sampled_from([-3600.0, 3600.0, -86400.0]))
    def the_clock_is_stepped(self, step: float) -> None:
        found = self.counted()
        before = {s.lease.key: self.cap(s, found) for s in self.live}
        for student in self.live:
            student.lease.taken += step
            student.lease.active += step
            self.write(student.lease)
        found = self.counted()
        assert {s.lease.key: self.cap(s, found) for s in self.live} == before

    @rule(gpu=st.sampled_from(DEVICES))
    def nvml_hides_the_processes_of(self, gpu: nvml.Device) -> None:
        self.model.hidden ^= {gpu.uuid}

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def caps_hold(self) -> None:
        found = self.counted()
        assert {x.key for x in found} == {s.lease.key for s in self.live}
        memory = self.nvml()
        for device in DEVICES:
            here = [s for s in self.live if s.uuid == device.uuid]
            if not here:
                continue
            held = shares.held_on(device.uuid, found, memory)
            caps = {s.lease.key: self.cap(s, found) for s in here}
            if device.uuid in self.model.hidden:
                # what it can see: its own figure, never below; nothing claimed counts
                for s in here:
                    own = max(0, self.model.memory[s.uuid].get(s.kernel, 0) - CONTEXT_RESERVE)
                    assert caps[s.lease.key] >= own, "a cap below its own figure"
                continue
            model = self.expected(device.uuid)
            assert model is not None
            assert caps == model, "a cap the room's rule, computed apart, does not give"
            for s in here:
                assert caps[s.lease.key] >= held.holders[s.lease.key], "a cap below what it holds"
            accounts: dict[int, int] = {}
            for s in here:
                accounts[s.lease.uid] = accounts.get(s.lease.uid, 0) + held.processes[s.lease.key]
            missing = sum(max(0, CONTEXTS_PER_HOLDER - n) for n in accounts.values())
            free = self._free(device.uuid) - CONTEXT_RESERVE * missing
            for s in here:
                assert caps[s.lease.key] - held.holders[s.lease.key] <= max(0, free), (
                    "a cap beyond the free memory"
                )


def _water(memory: int, held: list[int]) -> int:
    """The level ``λ`` with ``Σ max(h, λ) == memory``, by bisection (not the package's walk)."""
    if not held:
        return max(0, memory)
    if sum(held) >= memory:
        return 0
    low, high = 0, memory
    while low < high:
        middle = (low + high + 1) // 2
        if sum(max(h, middle) for h in held) <= memory:
            low = middle
        else:
            high = middle - 1
    return low


TestRoomInvariants = Room.TestCase
TestRoomInvariants.settings = settings(
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
