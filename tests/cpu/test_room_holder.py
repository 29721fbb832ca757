"""A kernel's hold on the room and its cap are objects: two made in one process hold leases in
rooms of their own, end them on their own, and their caps do not share a figure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpudask_jupyter.cluster.room import caps, holder
from gpudask_jupyter.cluster.room.leases import RoomDir


@pytest.fixture
def seam(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two 16 GiB test GPUs, a plan of four students; the kernel's own GPU choice kept."""
    monkeypatch.setenv(holder.TEST_GPUS, "2:16GiB")
    monkeypatch.setenv("DASK_GPUDASK__ROOM_STUDENTS", "4")
    monkeypatch.setenv("DASK_GPUDASK__ROOM_GPUS", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    monkeypatch.delenv("CUPY_GPU_MEMORY_LIMIT", raising=False)


def test_two_holders_hold_and_end_leases_in_rooms_of_their_own(tmp_path: Path, seam: None) -> None:
    first, second = holder.Holder(tmp_path / "a"), holder.Holder(tmp_path / "b")
    devices = holder.room_devices()
    held = [h.take(devices, None, 1) for h in (first, second)]
    assert [h.current() for h in (first, second)] == [x.lease for x in held]
    assert [len(RoomDir(tmp_path / name).leases()) for name in "ab"] == [1, 1]
    assert first.release()
    assert RoomDir(tmp_path / "a").leases() == [] and len(RoomDir(tmp_path / "b").leases()) == 1
    assert first.current() is None and second.current() is held[1].lease
    assert second.release() and RoomDir(tmp_path / "b").leases() == []


def test_a_kernel_cap_of_its_own_leaves_this_kernels_alone() -> None:
    mine = caps.KernelCap()
    assert mine.cap() is None and mine.held() == 0 and not mine.give_back()
    assert caps.this_process.cap() is caps.this_process.cap()  # the module's are this kernel's
