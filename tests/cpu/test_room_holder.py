"""A kernel's hold on the room and its cap are objects: two made in one process hold leases in
rooms of their own, end them on their own, and their caps do not share a figure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import use_stand_in_room

from gpudask_jupyter.cluster.room import caps, holder
from gpudask_jupyter.cluster.room.leases import RoomDir


@pytest.fixture
def seam(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two 16 GiB test GPUs, a plan of four students; the kernel's own GPU choice kept."""
    use_stand_in_room(monkeypatch, "2:16GiB")
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


def test_the_room_reads_the_gpus_its_reader_option_names() -> None:
    """NVML's GPUs by default (none here); another reader by ``module:attribute``; a reader that
    cannot be imported is a sentence naming the option, and a value of another form is refused
    where the option is read."""
    import dask.config

    from gpudask_jupyter import config
    from gpudask_jupyter.errors import ClusterError
    from gpudask_jupyter.machine import nvml

    assert holder.room_devices() == nvml.devices() == []
    with (
        dask.config.set({"gpudask.room-reader": "room_gpus:reader"}),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("GPUDASK_ROOM_TEST_GPUS", "3:8GiB")
        patch.syspath_prepend(str(Path(__file__).parents[1] / "stand_ins"))
        assert [(d.index, d.memory_total) for d in holder.room_devices()] == [
            (i, 8 * 2**30) for i in range(3)
        ]
    with (
        dask.config.set({"gpudask.room-reader": "no_such_module:reader"}),
        pytest.raises(
            ClusterError,
            match=r"^The room-reader option names 'no_such_module:reader', "
            r"which cannot be imported \(ModuleNotFoundError: ",
        ),
    ):
        holder.room_devices()
    for wrong in ("nvml2", "module", "module:", ":reader", "module:not an attribute"):
        with (
            dask.config.set({"gpudask.room-reader": wrong}),
            pytest.raises(ValueError, match=wrong),
        ):
            config.get("room-reader")
