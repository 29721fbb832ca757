"""--gpus syntax and the choice of devices, including the kernel's own CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import pytest

from gpudask_jupyter.machine.gpus import identifier, parse_spec, select, visible
from gpudask_jupyter.machine.nvml import Device

UUID0 = "GPU-0a0a0a0a-1111-2222-3333-444444444444"
UUID1 = "GPU-1b1b1b1b-1111-2222-3333-444444444444"
MIG20 = "MIG-2c2c2c2c-1111-2222-3333-444444444444"
MIG21 = "MIG-3d3d3d3d-1111-2222-3333-444444444444"
MACHINE = [
    Device(0, UUID0, "NVIDIA H200", 141 * 2**30),
    Device(1, UUID1, "NVIDIA H200", 141 * 2**30),
    Device(2, MIG20, "NVIDIA H200 MIG", 70 * 2**30, mig_index=0),
    Device(2, MIG21, "NVIDIA H200 MIG", 70 * 2**30, mig_index=1),
]


def test_parse_indices_and_uuids() -> None:
    assert parse_spec("0,1") == [0, 1]
    assert parse_spec(f" {UUID1} , 0 ") == [UUID1, 0]
    assert parse_spec(MIG20) == [MIG20]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x", "neither a GPU index"),
        ("0,", "empty entry"),
        ("-1", "neither"),
        ("1,1", "listed twice"),
        ("GPU-zz", "neither"),
    ],
)
def test_parse_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_spec(text)


def test_default_is_every_gpu_and_every_mig_instance() -> None:
    chosen = select(None, MACHINE, None)
    assert [identifier(d) for d in chosen] == ["0", "1", MIG20, MIG21]


def test_subset_by_index_and_uuid() -> None:
    assert [d.uuid for d in select([1], MACHINE, None)] == [UUID1]
    assert [d.index for d in select([UUID1, 0], MACHINE, None)] == [1, 0]
    assert [identifier(d) for d in select([MIG21], MACHINE, None)] == [MIG21]


def test_missing_gpu_lists_what_exists() -> None:
    with pytest.raises(ValueError, match=r"no GPU 7 on this machine; it has 0 \(NVIDIA H200\)"):
        select([7], MACHINE, None)


def test_mig_parent_must_be_named_by_instance() -> None:
    with pytest.raises(ValueError, match="split into MIG instances"):
        select([2], MACHINE, None)


def test_kernel_restriction_is_respected() -> None:
    assert [d.index for d in visible(MACHINE, "1")] == [1]
    assert [d.index for d in select(None, MACHINE, "1")] == [1]
    with pytest.raises(ValueError, match="outside this kernel's CUDA_VISIBLE_DEVICES=1"):
        select([0], MACHINE, "1")
    assert [d.uuid for d in select(None, MACHINE, f"{UUID0}")] == [UUID0]


def test_the_kernels_restriction_is_never_read_half_way_through_a_join(monkeypatch) -> None:
    """A join sets CUDA_VISIBLE_DEVICES for dask-cuda's CUDAWorker while it makes its nannies;
    a reader of the kernel's own restriction waits, and sees the kernel's value."""
    import threading
    import time

    from gpudask_jupyter.machine import gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    seen: list[str | None] = []
    inside = threading.Event()
    joined = [MACHINE[0]]

    def join() -> None:
        with gpus.devices_for_construction(joined):
            inside.set()
            time.sleep(0.3)

    worker = threading.Thread(target=join)
    worker.start()
    inside.wait(5)
    seen.append(gpus.kernel_restriction())
    worker.join()
    assert seen == ["3"]
    assert gpus.kernel_restriction() == "3"
