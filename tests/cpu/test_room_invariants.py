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

from gpudask_jupyter.cluster.room import leases, measure, shares
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
        self._saved = (leases.kernel_alive, processes.parent_of, processes.owner_uid)
        leases.kernel_alive = lambda pid, started: pid in self.model.alive  # type: ignore[assignment]
        processes.parent_of = self.model.parent.get  # type: ignore[assignment]
        processes.owner_uid = self.model.owner.get  # type: ignore[assignment]

    def teardown(self) -> None:
        leases.kernel_alive, processes.parent_of, processes.owner_uid = self._saved  # type: ignore[misc]
        shutil.rmtree(self.path, ignore_errors=True)

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

    def nvml(self) -> dict[str, measure.GpuMemory]:
        out = {}
        for device in DEVICES:
            shown = {} if device.uuid in self.model.hidden else dict(self.model.memory[device.uuid])
            out[device.uuid] = measure.GpuMemory(
                device.uuid, device.memory_total, self._used(device.uuid), shown
            )
        return out

    def room(self, uid: int = ME) -> RoomDir:
        directory = RoomDir(self.path, uid=uid)
        folder = directory.folder()
        if os.stat(folder).st_uid != uid:
            os.chown(folder, uid, -1)
        return directory

    def write(self, lease: Lease) -> None:
        path = self.room(lease.uid).write(lease)
        if lease.uid != ME:
            os.chown(path, lease.uid, -1)

    def counted(self) -> list[Lease]:
        return RoomDir(self.path).leases()

    def cap(self, student: Student, found: list[Lease] | None = None) -> int:
        """The cap ``student``'s own kernel computes (its own figure counted for itself)."""
        own_held = max(0, self.model.memory[student.uuid].get(student.kernel, 0) - CONTEXT_RESERVE)
        found = self.counted() if found is None else found
        return shares.cap_of(student.lease, found, self.nvml(), own_held)

    # -- what happens in a room -------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        self.room().prepare()

    @rule(target=students, workers=st.integers(0, 3), account=st.sampled_from([ME, OTHER]))
    def arrive(self, workers: int, account: int) -> Student:
        found = self.counted()
        memory = self.nvml()
        try:
            chosen = shares.choose_elastic(DEVICES, found, 1, memory)
        except ClusterError:
            event("a start refused")
            for device in DEVICES:  # refused only where no GPU has memory nobody holds
                held = shares.held_on(device.uuid, found, memory)
                contexts = held.contexts + CONTEXTS_PER_HOLDER
                unheld = (
                    shares.usable(device.memory_total, len(held.holders) + 1, contexts)
                    - held.outside
                    - sum(held.holders.values())
                )
                assert unheld < MIN_SHARE * (len(held.holders) + 1), (device.uuid, unheld)
            return None  # type: ignore[return-value]
        device = chosen.devices[0]
        kernel = self._pid(account)
        lease = Lease(
            account, f"u{account}", kernel, kernel * 7, f"k{kernel}",
            [Share(device.uuid, device.index, chosen.shares[device.uuid])],
            time.time(), time.time(), elastic=True,
        )  # fmt: skip
        self.write(lease)
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

    @rule()
    def a_corrupt_file(self) -> None:
        folder = self.room(OTHER).folder()
        path = folder / f"corrupt-{self.next_pid}{leases.SUFFIX}"
        path.write_text(json.dumps({"version": leases.VERSION, "gpus": "all of them"}))
        if OTHER != ME:
            os.chown(path, OTHER, -1)

    @rule(step=st.sampled_from([-3600.0, 3600.0, -86400.0]))
    def the_clock_is_stepped(self, step: float) -> None:
        before = {s.lease.key: self.cap(s) for s in self.live}
        for student in self.live:
            student.lease.taken += step
            student.lease.active += step
            self.write(student.lease)
        assert {s.lease.key: self.cap(s) for s in self.live} == before

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
            for s in here:
                assert caps[s.lease.key] >= held.holders[s.lease.key], "a cap below what it holds"
            if device.uuid in self.model.hidden:
                # claims stand in for measurements, bounded by what the GPU has in use
                assert sum(held.holders.values()) + held.outside <= self._used(device.uuid)
                continue
            usable = shares.usable(device.memory_total, len(here), held.contexts)
            taken = sum(max(caps[k], held.holders[k]) for k in caps) + held.outside
            assert taken <= max(usable, sum(held.holders.values()) + held.outside)
            missing = sum(max(0, CONTEXTS_PER_HOLDER - held.processes[s.lease.key]) for s in here)
            free = self._free(device.uuid) - CONTEXT_RESERVE * missing
            for s in here:
                assert caps[s.lease.key] - held.holders[s.lease.key] <= max(0, free), (
                    "a cap beyond the free memory"
                )


TestRoomInvariants = Room.TestCase
TestRoomInvariants.settings = settings(
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
