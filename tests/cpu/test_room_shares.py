"""Elastic shares, where the instructor set no plan: the room follows the holders present, as
the machine shows them.

No start is refused while a GPU has memory that no holder holds; what a holder holds is never
taken back; a holder who leaves lends its memory back at the next look, whoever it was; no
figure in another student's lease counts; thirty kernels arriving at once on real leases (real
processes, the room's test seam for the GPUs) all get a share that fits.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import stand_in_room

from gpudask_jupyter.cluster.room import holding, measure, shares
from gpudask_jupyter.cluster.room.leases import Lease, RoomDir, Share
from gpudask_jupyter.cluster.room.placement import CONTEXT_RESERVE, CONTEXTS_PER_HOLDER, MIN_SHARE
from gpudask_jupyter.errors import ClusterError
from gpudask_jupyter.machine import nvml

GiB = 2**30
GPU = nvml.Device(0, "GPU-a", "test GPU", 140 * GiB)
OTHER = nvml.Device(1, "GPU-b", "test GPU", 140 * GiB)


def _lease(pid: int, taken: float = 1.0, held: int = 0) -> Lease:
    return Lease(
        1000 + pid, f"s{pid}", pid, 1, f"k{pid}", [Share(GPU.uuid, 0, 0)], taken, taken,
        held=held, elastic=True,
    )  # fmt: skip


def _usable(holders: int) -> int:
    return GPU.memory_total - CONTEXTS_PER_HOLDER * CONTEXT_RESERVE * holders


def _memory(
    processes: dict[int, int], used: int | None = None, device: nvml.Device = GPU
) -> dict[str, holding.GpuMemory]:
    """The machine as NVML would show it: each pid's bytes on the GPU (a context included)."""
    total = sum(processes.values()) if used is None else used
    return measure.traced(
        {device.uuid: holding.GpuMemory(device.uuid, device.memory_total, total, processes)}
    )


def _caps(leases: list[Lease], memory: dict[str, holding.GpuMemory]) -> dict[str, int]:
    return shares.caps(GPU.memory_total, shares.held_on(GPU.uuid, leases, memory))


def _holding(size: int) -> int:
    """What NVML shows of a process that holds ``size`` bytes: its context as well."""
    return size + CONTEXT_RESERVE


@pytest.mark.parametrize(
    ("memory", "held", "level"),
    [
        (138, [], 138),  # alone: the whole GPU
        (138, [0, 0], 69),  # equal parts of what nobody holds
        (138, [50, 0], 69),  # a holder below the level takes it
        (138, [100, 0], 38),  # a holder above keeps what it holds; the rest for the other
        (138, [150, 0], 0),  # what is held fills it: nothing left
        (138, [0] * 16, 8),
    ],
)
def test_the_level_fills_what_the_holders_do_not_hold(
    memory: int, held: list[int], level: int
) -> None:
    found = shares.level(memory, held)
    assert found == level
    if held and sum(held) < memory:
        assert sum(max(h, found) for h in held) <= memory  # never more than the GPU


def test_a_newcomer_gets_an_equal_part_of_what_is_not_held_and_others_keep_what_they_hold() -> None:
    first = _lease(11)
    assert _caps([first], _memory({})) == {first.key: _usable(1)}  # alone: the whole GPU
    memory = _memory({11: _holding(100 * GiB)})
    chosen = shares.choose_elastic([GPU], [first], 1, memory, uid=os.getuid())
    offered = chosen.shares[GPU.uuid]
    assert offered == _usable(2) - 100 * GiB
    second = _lease(12, 2.0)
    caps = _caps([first, second], memory)
    assert caps == {first.key: 100 * GiB, second.key: offered}  # never below what it holds
    assert sum(caps.values()) <= _usable(2)


def test_shares_shrink_as_students_arrive_and_grow_as_they_leave_whoever_leaves() -> None:
    holders = [_lease(11)]
    for n in range(2, 6):
        holders.append(_lease(10 + n, float(n)))
        assert set(_caps(holders, _memory({})).values()) == {_usable(n) // n}
    newest = holders.pop()  # the newest leaves: nothing of its making stays
    caps = _caps(holders, _memory({}))
    assert set(caps.values()) == {_usable(4) // 4} and newest.key not in caps
    holders.pop(1)  # an older one leaves: its memory is lent back to the others
    assert set(_caps(holders, _memory({})).values()) == {_usable(3) // 3}


def test_a_holder_is_above_the_level_where_its_hold_keeps_others_below_equal_parts() -> None:
    """Above the level, what a holder's pools keep cached keeps the others from an equal part:
    its kernel asks for it back (holder.this_process.follow_once); alone, or within an equal
    part, never."""
    a, b = _lease(11), _lease(12, 2.0)
    cached = _memory({11: _holding(100 * GiB)})  # freed by A, kept by its pool
    assert not shares.above_level(a, [a], cached)  # alone: nobody is kept from anything
    assert shares.above_level(a, [a, b], cached)
    assert not shares.above_level(b, [a, b], cached)
    half = _memory({11: _holding(_usable(2) // 2)})
    assert not shares.above_level(a, [a, b], half)  # an equal part is its own
    a_little = _memory({11: _holding(_usable(2) // 2 + 10 * 2**20)})
    assert shares.above_level(a, [a, b], a_little)
    assert not shares.above_level(a, [a, b], a_little, margin=64 * 2**20)
    assert not shares.above_level(a, [a, b], {})  # a GPU it cannot see: nothing measured


def test_the_newest_holder_leaving_leaves_caps_that_fit_what_is_free() -> None:
    """The issue's case on a 140 GiB GPU: B arrives while A holds nothing; A grows to 100 GiB;
    C arrives and leaves. A may still hold its 100 GiB, and B's cap is what A does not hold:
    never more than is free, so B's allocations up to its cap cannot fail for lack of memory."""
    a, b, c = _lease(11), _lease(12, 2.0), _lease(13, 3.0)
    assert _caps([a, b], _memory({})) == {a.key: _usable(2) // 2, b.key: _usable(2) // 2}
    grown = _memory({11: _holding(100 * GiB)})
    with_c = _caps([a, b, c], grown)
    assert with_c[a.key] == 100 * GiB and with_c[b.key] == with_c[c.key]
    caps = _caps([a, b], grown)  # C has left
    assert caps[a.key] == 100 * GiB
    free = GPU.memory_total - _holding(100 * GiB) - CONTEXT_RESERVE  # B's own context
    assert caps[b.key] == _usable(2) - 100 * GiB <= free


def test_no_figure_in_another_students_lease_changes_a_cap() -> None:
    """A forged lease (every field valid, taken far in the future, claiming to hold most of the
    GPU) is one more holder, holding what the machine shows its processes hold: nothing."""
    honest = [_lease(11), _lease(12, 2.0)]
    memory = _memory({11: _holding(30 * GiB), 12: _holding(30 * GiB)})
    forged = _lease(13, taken=4e9, held=139 * GiB)
    forged.gpus = [Share(GPU.uuid, 0, 139 * GiB)]
    innocent = _lease(13, taken=3.0)
    assert _caps([*honest, forged], memory) == _caps([*honest, innocent], memory)
    caps = _caps([*honest, forged], memory)
    assert caps[honest[0].key] == caps[honest[1].key] == (_usable(3) - 0) // 3 > 30 * GiB


def test_where_nvml_hides_the_processes_no_claim_counts_only_what_is_in_use() -> None:
    """A container that hides the others' processes: the holder who computes counts its own
    figure; the rest of what the GPU has in use is split among the other accounts, whatever
    their leases claim."""
    me = _lease(11, held=20 * GiB)
    forged = _lease(12, held=139 * GiB)
    in_use = 40 * GiB
    memory = _memory({}, used=in_use)
    held = shares.held_on(GPU.uuid, [me, forged], memory, own=me, own_held=20 * GiB)
    assert held.holders[me.key] == 20 * GiB
    assert held.holders[forged.key] == in_use - 20 * GiB - 2 * CONTEXTS_PER_HOLDER * CONTEXT_RESERVE
    modest = _lease(12, held=0)
    same = shares.held_on(GPU.uuid, [me, modest], memory, own=me, own_held=20 * GiB)
    assert same == held  # the figure written counts for nothing
    caps = shares.caps(GPU.memory_total, held)
    assert caps[me.key] >= (GPU.memory_total - in_use) // 2


def test_a_holders_own_figure_counts_for_itself_alone() -> None:
    me, other = _lease(11), _lease(12, 2.0)
    memory = _memory({11: _holding(GiB), 12: _holding(GiB)})
    seen_by_me = shares.held_on(GPU.uuid, [me, other], memory, own=me, own_held=10 * GiB)
    assert seen_by_me.holders[me.key] == 10 * GiB
    seen_by_other = shares.held_on(GPU.uuid, [me, other], memory, own=other)
    assert seen_by_other.holders[me.key] == GiB


def test_a_start_is_refused_only_where_every_gpu_is_held() -> None:
    holders = [_lease(11)]
    memory = {
        **_memory({11: _holding(_usable(2) - MIN_SHARE // 2)}),
        **_memory({}, device=OTHER),
    }
    with pytest.raises(ClusterError, match="Every GPU here is held by the students on it"):
        shares.choose_elastic([GPU], holders, 1, memory, uid=os.getuid())
    chosen = shares.choose_elastic([GPU, OTHER], holders, 1, memory, uid=os.getuid())
    assert [d.uuid for d in chosen.devices] == [OTHER.uuid]  # the empty one
    assert chosen.shares == {OTHER.uuid: _usable(1)}
    assert "the most memory its holders do not hold" in chosen.why


def test_memory_held_outside_the_room_is_counted_by_nobodys_cap() -> None:
    """A process on the GPU that holds no lease (a student alone there before others came, a
    job outside the notebooks): no cap counts on what it takes."""
    first, second = _lease(11), _lease(12, 2.0)
    memory = _memory({99_999_999: 40 * GiB})
    caps = _caps([first, second], memory)
    assert caps == {
        first.key: (_usable(2) - 40 * GiB) // 2,
        second.key: (_usable(2) - 40 * GiB) // 2,
    }


def test_what_is_held_is_measured_per_process_its_children_included() -> None:
    """NVML's per-process memory, less a context each, is what a holder holds, counting every
    process below its kernel; what the GPU has in use beyond the holders' processes is outside
    the room."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        lease = _lease(os.getpid())
        memory = _memory({os.getpid(): 3 * GiB, child.pid: 2 * GiB, 99_999_999: 5 * GiB}, 12 * GiB)
        held = shares.held_on(GPU.uuid, [lease], memory)
        assert held.holders == {lease.key: 5 * GiB - 2 * CONTEXT_RESERVE}
        assert held.outside == 7 * GiB
    finally:
        child.communicate(b"")


def test_the_reading_walks_up_to_the_nearest_kernel_and_reads_only_named_workers_accounts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every kernel reads the machine each second: a GPU process's parents are walked only up to
    the nearest kernel a lease names, and an account is read only for a process a lease names
    among its workers, where reading the whole ancestry and every account gave the same caps."""
    from gpudask_jupyter.machine import processes

    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        walked: list[int] = []
        accounts: list[int] = []
        parent_of, owner_uid = processes.parent_of, processes.owner_uid
        monkeypatch.setattr(processes, "parent_of", lambda p: walked.append(p) or parent_of(p))
        monkeypatch.setattr(processes, "owner_uid", lambda p: accounts.append(p) or owner_uid(p))
        stranger = dataclasses.replace(_lease(os.getpid() + 10**7), workers=[child.pid])
        mine = _lease(os.getpid())
        gpu = {GPU.uuid: holding.GpuMemory(GPU.uuid, GPU.memory_total, 3 * GiB, {child.pid: GiB})}

        lineage = measure.traced(gpu, [mine, stranger])[GPU.uuid].lineage[child.pid]
        assert lineage.ancestors == (child.pid, os.getpid())  # stopped at this kernel
        assert walked == [child.pid] and accounts == [child.pid]  # named by the stranger's lease
        # the stranger names a process below another holder's kernel: it is that kernel's
        held = shares.held_on(GPU.uuid, [mine, stranger], measure.traced(gpu, [mine, stranger]))
        assert held.holders == {mine.key: GiB - CONTEXT_RESERVE, stranger.key: 0}

        walked.clear()
        accounts.clear()
        lineage = measure.traced(gpu, [mine])[GPU.uuid].lineage[child.pid]
        assert (lineage.uid, accounts) == (None, [])  # named by nobody: no account read
        lineage = measure.traced(gpu, [])[GPU.uuid].lineage[child.pid]
        assert lineage.ancestors == (child.pid,)  # no kernel to find: no walk
        full = measure.traced(gpu)[GPU.uuid].lineage[child.pid]  # the whole machine's view
        assert full.ancestors[:2] == (child.pid, os.getpid()) and full.uid == os.getuid()
    finally:
        child.communicate(b"")


@pytest.fixture
def students() -> Iterator[list[subprocess.Popen[bytes]]]:
    made: list[subprocess.Popen[bytes]] = []
    yield made
    for process in made:
        if process.poll() is None:
            process.kill()
        process.wait()


TAKE = """
import json, os, sys
import dask.config
from gpudask_jupyter.cluster.room import holder
dask.config.set({"gpudask.room-dir": sys.argv[1], "gpudask.room-students": 0})
dask.config.set({"gpudask.room-kernels": int(sys.argv[2])})
devices = holder.room_devices()
print("ready", flush=True)
sys.stdin.readline()
try:
    held = holder.this_process.take(devices, None, None)
    share = held.lease.gpus[0]
    print(json.dumps({"gpu": share.uuid, "share": share.share}), flush=True)
except Exception as err:
    print(json.dumps({"error": str(err)}), flush=True)
sys.stdin.read()
"""


def test_thirty_kernels_arriving_at_once_all_get_a_share_that_fits(
    tmp_path: Path, students: list[Any]
) -> None:
    """Thirty processes take their place in the same second, on two 64 GiB GPUs of the seam,
    with no room-students: none is refused, the holders differ by at most one per GPU, and the
    caps every holder computes from what the machine shows fit each GPU. They are of one
    account (as on a server where the whole class shares one), so room-kernels is lifted."""
    room = tmp_path / "room"
    env = {**os.environ, **stand_in_room("2:64GiB")}
    for _ in range(30):
        students.append(
            subprocess.Popen(
                [sys.executable, "-c", TAKE, str(room), "0"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
        )
    for process in students:
        assert process.stdout.readline().strip() == b"ready"
    for process in students:  # go, all at once
        process.stdin.write(b"go\n")
        process.stdin.flush()
    said = [json.loads(p.stdout.readline()) for p in students]
    assert [s for s in said if "error" in s] == []
    per_gpu = [sum(1 for s in said if s["gpu"] == uuid) for uuid in {s["gpu"] for s in said}]
    assert sorted(per_gpu) == [15, 15]
    found = RoomDir(room).leases()
    assert len(found) == 30
    for uuid in {s["gpu"] for s in said}:
        memory = {uuid: holding.GpuMemory(uuid, 64 * GiB, 0, {})}
        caps = shares.caps(64 * GiB, shares.held_on(uuid, found, memory))
        assert len(caps) == 15
        assert min(caps.values()) >= MIN_SHARE
        held = shares.held_on(uuid, found, memory)
        assert held.contexts == CONTEXTS_PER_HOLDER  # one account, no process on the GPU yet
        assert sum(caps.values()) <= 64 * GiB - CONTEXTS_PER_HOLDER * CONTEXT_RESERVE
    for process in students:
        process.stdin.close()


def _take_one(room: Path, limit: int, students: list[Any]) -> dict[str, Any]:
    """One more kernel of this account takes its place (room-kernels ``limit``): what it said."""
    process = subprocess.Popen(
        [sys.executable, "-c", TAKE, str(room), str(limit)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **stand_in_room("1:64GiB")},
    )
    students.append(process)
    assert process.stdout.readline().strip() == b"ready"
    process.stdin.write(b"go\n")
    process.stdin.flush()
    said: dict[str, Any] = json.loads(process.stdout.readline())
    return said


def test_a_student_beyond_room_kernels_is_refused_naming_the_kernels_that_hold_the_room(
    tmp_path: Path, students: list[Any]
) -> None:
    """room-kernels 3: three kernels of this account take their place, the fourth is refused
    in one sentence naming the three; once one of them ends, the fourth is placed."""
    room = tmp_path / "room"
    said = [_take_one(room, 3, students) for _ in range(4)]
    assert ["error" in s for s in said] == [False, False, False, True]
    refusal = said[3]["error"]
    assert "from 3 kernels already" in refusal and "room-kernels" in refusal, refusal
    kernels = [lease.kernel for lease in RoomDir(room).leases()]
    assert len(kernels) == 3 and all(kernel in refusal for kernel in kernels), refusal
    students[0].kill()  # one of them ends: its lock goes with it
    students[0].wait()
    assert "gpu" in _take_one(room, 3, students)
