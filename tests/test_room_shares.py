"""Elastic shares, where the instructor set no plan: the room follows the holders present.

No start is refused while a GPU has memory that no holder holds; what a holder holds is never
taken back; a holder who leaves lends its memory back; thirty kernels arriving at once on real
leases (real processes, the room's test seam for the GPUs) all get a share, and every holder's
processes compute the same caps from the leases alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpudask_jupyter.cluster.room import leases, shares
from gpudask_jupyter.cluster.room.leases import Lease, RoomDir, Share
from gpudask_jupyter.cluster.room.placement import CONTEXT_RESERVE, CONTEXTS_PER_HOLDER, MIN_SHARE
from gpudask_jupyter.errors import ClusterError
from gpudask_jupyter.machine import nvml, processes

GiB = 2**30
GPU = nvml.Device(0, "GPU-a", "test GPU", 140 * GiB)
OTHER = nvml.Device(1, "GPU-b", "test GPU", 140 * GiB)


def _lease(pid: int, taken: float, plan: dict[str, dict[str, int]] | None = None) -> Lease:
    return Lease(
        1000 + pid, f"s{pid}", pid, 1.0, f"k{pid}", [Share(GPU.uuid, 0, 0)], taken, taken,
        plan=plan if plan is not None else {GPU.uuid: {}},
    )  # fmt: skip


def _usable(holders: int) -> int:
    return GPU.memory_total - CONTEXTS_PER_HOLDER * CONTEXT_RESERVE * holders


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
    first = _lease(1, 1.0)
    alone = shares.caps_on(GPU.uuid, GPU.memory_total, [first])
    assert alone == {first.key: _usable(1)}  # the whole GPU, its contexts set aside
    # the second measures what the first holds (100 GiB) and writes it into its plan
    cap, plan = shares.plan_for(GPU, [first], {first.key: 100 * GiB})
    assert plan == {first.key: 100 * GiB}
    second = _lease(2, 2.0, {GPU.uuid: plan})
    caps = shares.caps_on(GPU.uuid, GPU.memory_total, [first, second])
    assert caps[first.key] == 100 * GiB  # never below what it holds
    assert caps[second.key] == cap == _usable(2) - 100 * GiB
    assert sum(caps.values()) <= _usable(2)


def test_shares_shrink_as_students_arrive_and_grow_as_they_leave() -> None:
    holders = [_lease(1, 1.0)]
    for n in range(2, 6):
        _, plan = shares.plan_for(GPU, holders, {})
        holders.append(_lease(n, float(n), {GPU.uuid: plan}))
        caps = shares.caps_on(GPU.uuid, GPU.memory_total, holders)
        assert set(caps.values()) == {_usable(n) // n}  # equal parts, nobody holds anything
    gone = holders.pop()  # the newest leaves: the plan of the one before applies again
    caps = shares.caps_on(GPU.uuid, GPU.memory_total, holders)
    assert set(caps.values()) == {_usable(4) // 4}
    assert gone.key not in caps
    holders.pop(1)  # an older one leaves: its memory is lent back to the others
    caps = shares.caps_on(GPU.uuid, GPU.memory_total, holders)
    assert set(caps.values()) == {_usable(3) // 3}


def test_a_lease_of_an_older_package_counts_as_holding_its_share() -> None:
    old = Lease(2000, "old", 7, 1.0, "k", [Share(GPU.uuid, 0, 30 * GiB)], 1.0, 1.0)
    new = _lease(8, 2.0, {GPU.uuid: {}})
    caps = shares.caps_on(GPU.uuid, GPU.memory_total, [old, new])
    assert caps[old.key] == 30 * GiB
    assert caps[new.key] == _usable(2) - 30 * GiB


def test_a_start_is_refused_only_where_every_gpu_is_held() -> None:
    holders = [_lease(1, 1.0)]
    held = {GPU.uuid: {holders[0].key: _usable(2) - MIN_SHARE // 2}}
    with pytest.raises(ClusterError, match="Every GPU here is held by the students on it"):
        shares.choose_elastic([GPU], holders, 1, held)
    chosen = shares.choose_elastic([GPU, OTHER], holders, 1, held)
    assert [d.uuid for d in chosen.devices] == [OTHER.uuid]  # the empty one
    assert chosen.shares == {OTHER.uuid: _usable(1)}
    assert "the most memory its holders do not hold" in chosen.why


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    made: list[subprocess.Popen[bytes]] = []
    yield made
    for process in made:
        process.kill()
        process.wait()


def _started(pid: int) -> float:
    deadline = time.monotonic() + 10
    while (started := processes.process_started(pid)) is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return started


TAKE = """
import json, os, sys, time
import dask.config
from gpudask_jupyter.cluster.room import holder
dask.config.set({"gpudask.room-dir": sys.argv[1], "gpudask.room-students": 0})
devices = holder.room_devices()
go = float(sys.argv[2])
time.sleep(max(0, go - time.time()))
try:
    held = holder.take(devices, None, None)
    print(json.dumps({"gpu": held.lease.gpus[0].uuid, "share": held.lease.gpus[0].share}))
except Exception as err:
    print(json.dumps({"error": str(err)}))
time.sleep(float(sys.argv[3]))
"""


def test_thirty_kernels_arriving_at_once_all_get_a_share_that_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sleepers: list[Any]
) -> None:
    """Thirty processes take their place in the same second, on two 64 GiB GPUs of the seam,
    with no room-students: none is refused, the holders differ by at most one per GPU, and the
    caps that every process would compute from the leases fit each GPU."""
    import json

    monkeypatch.setenv("GPUDASK_ROOM_TEST_GPUS", "2:64GiB")
    room = tmp_path / "room"
    go = time.time() + 3
    for _ in range(30):
        sleepers.append(
            subprocess.Popen(
                [sys.executable, "-c", TAKE, str(room), str(go), "20"],
                stdout=subprocess.PIPE,
                env={**os.environ, "GPUDASK_ROOM_TEST_GPUS": "2:64GiB"},
            )
        )
    said = [json.loads(p.stdout.readline()) for p in sleepers]
    assert [s for s in said if "error" in s] == []
    per_gpu = [sum(1 for s in said if s["gpu"] == uuid) for uuid in {s["gpu"] for s in said}]
    assert sorted(per_gpu) == [15, 15]
    found = RoomDir(room).leases()
    assert len(found) == 30
    for uuid in {s["gpu"] for s in said}:
        caps = shares.caps_on(uuid, 64 * GiB, found)
        assert len(caps) == 15
        assert min(caps.values()) >= MIN_SHARE
        assert sum(caps.values()) <= 64 * GiB - CONTEXTS_PER_HOLDER * CONTEXT_RESERVE * 15


def test_the_plan_names_what_each_holder_holds(tmp_path: Path, sleepers: list[Any]) -> None:
    """A holder whose kernel says it holds memory (its lease's ``held``) keeps it in the next
    newcomer's plan, and its cap never falls below it."""
    import dask.config

    from gpudask_jupyter.cluster.room import holder

    room = RoomDir(tmp_path / "room")
    assert room.prepare()
    sleepers.append(subprocess.Popen(["sleep", "60"]))
    pid = sleepers[0].pid
    devices = [nvml.Device(0, "GPU-00000000-0000-0000-0000-000000000000", "seam", 16 * GiB)]
    busy = Lease(
        os.getuid(), "me", pid, _started(pid), "k", [Share(devices[0].uuid, 0, 12 * GiB)],
        1.0, 1.0, plan={devices[0].uuid: {}}, held=10 * GiB,
    )  # fmt: skip
    room.write(busy)
    with dask.config.set({"gpudask.room-dir": str(room.path), "gpudask.room-students": 0}):
        held = holder.take(devices, None, None)
        try:
            assert held.lease.plan == {devices[0].uuid: {busy.key: 10 * GiB}}
            caps = shares.caps_on(devices[0].uuid, 16 * GiB, room.leases())
            assert caps[busy.key] == 10 * GiB
            assert caps[held.lease.key] == held.lease.gpus[0].share
            assert held.lease.gpus[0].share == 16 * GiB - 4 * CONTEXT_RESERVE - 10 * GiB
            said = holder.describe(held)
            assert "It is an equal part of what the GPU's holders do not hold" in said, said
        finally:
            holder.release()


def test_a_plan_in_a_lease_file_is_checked_field_by_field(tmp_path: Path) -> None:
    import json

    good = _lease(3, 1.0, {GPU.uuid: {"1000:1:1.00": 5}})
    raw = json.loads(good.to_json())
    assert leases.lease_from_json(json.dumps(raw).encode()).plan == good.plan
    for bad in ({"x": []}, {"x": {"k": -1}}, {"x": {"k": "5"}}, ["x"], {"x" * 200: {}}):
        with pytest.raises(leases.BadLease):
            leases.lease_from_json(json.dumps({**raw, "plan": bad}).encode())


def test_memory_held_outside_the_room_is_counted_by_nobodys_cap() -> None:
    """A process on the GPU that holds no lease (a student alone there before others came, a
    job outside the notebooks): what it takes is in the plan, and no cap counts on it."""
    first = _lease(1, 1.0)
    held = {first.key: 0, shares.OUTSIDE: 40 * GiB}
    cap, plan = shares.plan_for(GPU, [first], held)
    assert plan == {first.key: 0, shares.OUTSIDE: 40 * GiB}
    second = _lease(2, 2.0, {GPU.uuid: plan})
    caps = shares.caps_on(GPU.uuid, GPU.memory_total, [first, second])
    assert caps == {first.key: cap, second.key: cap}
    assert cap == (_usable(2) - 40 * GiB) // 2


def test_what_is_held_is_measured_per_process_and_for_the_gpu() -> None:
    """NVML's per-process memory, less a context each, is what a holder holds; what the GPU
    has in use beyond the holders' processes is outside the room."""
    lease = _lease(os.getpid(), 1.0)
    per_process = [
        nvml.GpuProcess(GPU.uuid, os.getpid(), 3 * GiB, True),
        nvml.GpuProcess(GPU.uuid, 999_999, 5 * GiB, False),  # nobody's lease
    ]
    held = shares.held_now([lease], [GPU.uuid], per_process, {GPU.uuid: 9 * GiB})
    assert held == {GPU.uuid: {lease.key: 3 * GiB - CONTEXT_RESERVE, shares.OUTSIDE: 6 * GiB}}
