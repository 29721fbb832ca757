"""Every GPU allocation a student's processes make is under their share: the cap that moves
(room/allocator.py), the blocks ``--distribute`` allocates outside RMM counted against it, a pool
made under the cap, a resource made current over the cap (dask-cuda's set-up) capped again, and
a worker that cannot hold itself to its share refusing to run. RMM is the stand-in of
``tests/fake_gpu`` here, with the real one's accounting; the GPU tier runs the real one."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from room_locks import pretend_held

from gpudask_jupyter.cluster.room import leases
from gpudask_jupyter.cluster.room.leases import SUFFIX, Lease, RoomDir, Share
from gpudask_jupyter.machine import processes

FAKE = str(Path(__file__).parents[1] / "fake_gpu")
MiB = 2**20


@pytest.fixture
def rmm(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(FAKE)
    for name in [n for n in sys.modules if n == "rmm" or n.startswith("rmm.")]:
        monkeypatch.delitem(sys.modules, name)
    import rmm

    from gpudask_jupyter.cluster.room import allocator

    monkeypatch.setattr(allocator.process_cap, "_capped", None)
    rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())
    return rmm


def test_a_cap_holds_and_moves_while_allocations_stand(rmm: Any) -> None:
    from gpudask_jupyter.cluster.room.allocator import Capped

    capped = Capped(200 * MiB)
    first = rmm.mr.allocate(120 * MiB)
    with pytest.raises(MemoryError, match="Exceeded memory limit"):
        rmm.mr.allocate(100 * MiB)
    capped.set(160 * MiB)  # a newcomer arrived: what is held stays, the rest is held to the cap
    rmm.mr.allocate(40 * MiB)
    with pytest.raises(MemoryError):
        rmm.mr.allocate(MiB)
    assert capped.held() == 160 * MiB
    rmm.mr.deallocate(first)
    capped.refresh()  # what the earlier adaptor freed comes back
    rmm.mr.allocate(100 * MiB)


def test_memory_allocated_outside_rmm_is_counted_against_the_cap(rmm: Any) -> None:
    from gpudask_jupyter.cluster.room.allocator import Capped

    capped = Capped(100 * MiB)
    assert capped.reserve(70 * MiB)
    with pytest.raises(MemoryError):
        rmm.mr.allocate(40 * MiB)  # RMM's allocations see the block
    assert not capped.reserve(40 * MiB)  # nor does a second block fit
    assert capped.held() == 70 * MiB
    capped.release(70 * MiB)
    rmm.mr.allocate(90 * MiB)


def test_a_distribute_block_beyond_the_workers_share_is_refused_before_any_allocation(
    rmm: Any,
) -> None:
    from gpudask_jupyter.cluster.room.allocator import Capped
    from gpudask_jupyter.convert.distribute import device_blocks

    capped = Capped(10 * MiB)
    refused = device_blocks.allocate(20 * MiB)
    assert isinstance(refused, device_blocks.Unavailable)
    assert "does not fit in what this worker's share of the shared GPU (10 MiB) leaves" in (
        refused.why
    ), refused.why
    assert capped.reserved == 0
    if "cupy" not in sys.modules:  # no GPU here: the allocation itself fails, the count is undone
        assert isinstance(device_blocks.allocate(MiB), device_blocks.Unavailable)
        assert capped.reserved == 0


def test_memory_kept_for_reuse_is_given_back_once_nothing_made_from_it_is_held(
    rmm: Any,
) -> None:
    """CUDA's asynchronous pool keeps what was freed, and NVML shows it held: a holder above an
    equal part gives it back, and the old pool goes with the last buffer made from it."""
    from gpudask_jupyter.cluster.room.allocator import Capped

    capped = Capped(200 * MiB)
    big = rmm.mr.allocate(150 * MiB)
    rmm.mr.deallocate(big)
    del big
    assert rmm.mr.device_memory() == 150 * MiB  # freed, yet held as far as NVML can tell
    kept = rmm.mr.allocate(10 * MiB)  # a frame the student keeps
    assert capped.give_back()
    after = rmm.mr.allocate(20 * MiB)  # from the new pool
    assert rmm.mr.device_memory() == 150 * MiB + 20 * MiB  # the old one holds the kept frame
    assert capped.held() == 30 * MiB
    with pytest.raises(MemoryError):
        rmm.mr.allocate(171 * MiB)  # the cap counts both pools' buffers
    rmm.mr.deallocate(kept)
    del kept
    capped.refresh()
    assert rmm.mr.device_memory() == 20 * MiB  # the old pool went with its last buffer
    rmm.mr.deallocate(after)
    assert capped.held() == 0


def test_a_pool_the_student_asked_for_or_a_resource_made_over_the_cap_is_not_given_back(
    rmm: Any,
) -> None:
    from gpudask_jupyter.cluster.room.allocator import Capped, pool_upstream

    assert not Capped(100 * MiB, upstream=pool_upstream(64 * MiB)).give_back()
    capped = Capped(100 * MiB)
    rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())  # dask-cuda's set-up
    capped.refresh()
    assert not capped.give_back()


def test_a_kernel_with_cupy_alone_gives_back_cupys_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util
    import types

    from gpudask_jupyter.cluster.room import caps

    freed: list[bool] = []
    pool = types.SimpleNamespace(
        set_limit=lambda size: None, free_all_blocks=lambda: freed.append(True)
    )
    cupy = types.SimpleNamespace(get_default_memory_pool=lambda: pool)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "rmm" else real(name, *a)
    )
    kernel = caps.KernelCap()  # a kernel's cap of its own, not this process's
    assert not kernel.give_back()  # no cap installed: nothing of the kernel's to give back
    assert kernel.install(100 * MiB) == 50 * MiB
    assert kernel.give_back() and freed == [True]


def test_a_resource_made_current_over_the_cap_is_capped_again(rmm: Any) -> None:
    """dask-cuda's RMM set-up runs after the workers' preload and makes its own resource
    current: the next look puts the cap back over it."""
    from gpudask_jupyter.cluster.room.allocator import Capped

    capped = Capped(50 * MiB)
    theirs = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size=256 * MiB)
    rmm.mr.set_current_device_resource(theirs)
    capped.refresh()
    current = rmm.mr.get_current_device_resource()
    assert isinstance(current, rmm.mr.LimitingResourceAdaptor) and current.upstream is theirs
    assert current.get_allocation_limit() == 50 * MiB


def test_statistics_over_the_cap_stay_and_count_what_the_cap_lets_through(rmm: Any) -> None:
    """The GPU-time plugin's memory peaks put RMM statistics on top of the cap: the next look
    leaves them there (no cap stacked over them, each look), and the cap still holds."""
    from gpudask_jupyter.cluster.room.allocator import Capped
    from gpudask_jupyter.gpu_time.memory_peaks import Peaks

    capped = Capped(50 * MiB)
    peaks = Peaks(rmm)
    peaks.begin()
    observed = rmm.mr.get_current_device_resource()
    assert isinstance(observed, rmm.mr.StatisticsResourceAdaptor)
    for _ in range(3):
        capped.refresh()
    assert rmm.mr.get_current_device_resource() is observed
    rmm.mr.deallocate(rmm.mr.allocate(30 * MiB))
    with pytest.raises(MemoryError):
        rmm.mr.allocate(60 * MiB)
    assert peaks.end() == 30 * MiB


@pytest.fixture
def own_lease(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lease]:
    """A lease of this process's parent, as a worker sees its kernel's."""
    import dask.config

    room = RoomDir(tmp_path / "room")
    assert room.prepare(), room.problem
    parent = os.getppid()
    lease = Lease(
        os.getuid(), "me", parent, processes.process_started(parent) or 0, "k",
        [Share("GPU-x", 0, 400 * MiB)], time.time(), time.time(), workers=[os.getpid()],
        elastic=True, pool=64 * MiB,
    )  # fmt: skip
    pretend_held(monkeypatch, room.folder() / f"{parent}{SUFFIX}", parent)
    room.write(lease)
    with dask.config.set({"gpudask.room-dir": str(room.path)}):
        yield lease


class _Worker:
    """What the share's follower asks of a worker: nothing it lacks makes it fail."""


def test_a_worker_holds_itself_to_its_kernels_share_over_the_pool_asked_for(
    rmm: Any, own_lease: Lease
) -> None:
    from gpudask_jupyter.cluster.room import worker_share

    follower = worker_share.WorkerShare(_Worker(), Path(str(own_lease.path)).parent.parent)
    assert follower.step()
    current = rmm.mr.get_current_device_resource()
    assert current.get_allocation_limit() == 200 * MiB  # the worker's half of 400 MiB
    assert isinstance(current.upstream, rmm.mr.PoolMemoryResource)  # made here, under the cap
    assert current.upstream.initial_pool_size == 64 * MiB
    # the kernel found a smaller share and wrote it: the worker follows at its next look
    own_lease.gpus = [Share("GPU-x", 0, 100 * MiB)]
    RoomDir(Path(str(own_lease.path)).parent.parent).write(own_lease)
    assert follower.step()
    assert rmm.mr.get_current_device_resource().get_allocation_limit() == 50 * MiB


def test_a_worker_gives_back_its_pools_cache_when_its_kernel_asks(
    rmm: Any, own_lease: Lease
) -> None:
    """The kernel asks through its own lease (``give_back``), the worker follows at its next
    look; a worker that starts after a request does not take it as its own."""
    from gpudask_jupyter.cluster.room import worker_share

    room = RoomDir(Path(str(own_lease.path)).parent.parent)
    own_lease.pool = 0
    own_lease.give_back = 3  # asked before this worker started
    room.write(own_lease)
    follower = worker_share.WorkerShare(_Worker(), room.path)
    assert follower.step()
    buffer = rmm.mr.allocate(150 * MiB)
    rmm.mr.deallocate(buffer)
    del buffer
    assert follower.step() and rmm.mr.device_memory() == 150 * MiB  # nothing asked: kept
    own_lease.give_back = 4
    room.write(own_lease)
    assert follower.step()
    assert rmm.mr.device_memory() == 0


def test_a_gpu_worker_that_cannot_cap_itself_does_not_run_on_a_share(
    own_lease: Lease, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpudask_jupyter.cluster.room import worker_share
    from gpudask_jupyter.machine import availability

    monkeypatch.setattr(availability, "reason", lambda *modules: None)  # a GPU worker
    monkeypatch.setitem(sys.modules, "rmm", None)  # without RMM
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    follower = worker_share.WorkerShare(_Worker(), Path(str(own_lease.path)).parent.parent)
    with pytest.raises(worker_share.NoCap, match="RMM is not installed"):
        follower.step()


def test_the_room_asks_dask_cuda_to_leave_rmm_alone() -> None:
    from gpudask_jupyter.cluster.room import caps

    keywords = caps.worker_keywords(800 * MiB, 16 * 2**30, "0", "256MiB", None)
    assert keywords == {
        "device_memory_limit": int(400 * MiB * caps.SPILL_AT),
        "rmm_pool_size": None,
        "rmm_async": False,
    }
    assert caps.worker_pool("256MiB", 16 * 2**30) == 256 * MiB
    read = leases.lease_from_json(
        Lease(1, "u", 2, 3, "k", [Share("g", 0, 1)], 0.0, 0.0, pool=5, give_back=2)
        .to_json()
        .encode()
    )
    assert (read.pool, read.give_back) == (5, 2)
