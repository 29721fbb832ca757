"""Partitions the kernel copies straight into GPU memory their worker allocated (CUDA IPC).

Through shared memory, the CPU moves a partition's bytes three times: the kernel writes them
into a segment, the worker copies them into its pinned ring, and someone gives the segment's
pages back. Here it moves them once. The worker that will hold a partition allocates one block of
device memory for it and exports it; the kernel opens that block on the same GPU and copies the
partition's fixed-width columns into it through its own pinned pipeline, the path of
``%%to_gpu``; the worker then builds the cuDF / CuPy partition on that memory. Only the kernel's
CPU touches the bytes, and only once.

The block lives as the value of a Dask future on its worker: releasing the future, or cancelling
it when the transfer fails, frees the device memory, like any other partition.

Used on both sides: :func:`allocate`, :func:`exported` and :func:`assemble` run in a worker;
:func:`kernel_devices`, :func:`opened` and :func:`segments` in the kernel.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from .. import compat
from .layout import Layout, Slot
from .staging import Segment

log = logging.getLogger(__name__)

ALIGN = 256  # what cudaMalloc guarantees, and more than any dtype needs


def offsets(layout: Layout) -> tuple[list[int], int]:
    """Where each slot starts in the partition's block, and the block's size."""
    where, end = [], 0
    for slot in layout.slots:
        where.append(end)
        end += -(-slot.nbytes // ALIGN) * ALIGN
    return where, end


def usable(layout: Layout) -> bool:
    """Whether every fixed-width slot of this partition is built from its raw device bytes:
    complex and float16 columns are not (cuDF refuses them in its own words instead)."""
    from .dataframes import device_kind

    if layout.nbytes == 0:
        return False
    if layout.kind == "array":
        return layout.slots[0].dtype.kind in "biuf"  # CuPy has no datetime dtype
    return all(device_kind(slot.dtype) for slot in layout.slots)


def bus_id() -> str | None:
    """This worker's GPU as its PCI bus id, or None without one. The kernel matches its own
    devices by it: a dask-cuda worker's ``CUDA_VISIBLE_DEVICES`` numbers the GPUs differently."""
    from .availability import reason

    if reason() is not None:
        return None
    import cupy

    try:
        return str(cupy.cuda.Device().pci_bus_id).upper()
    except Exception:  # a driver without the call: this route is simply not offered
        log.debug("the GPU's PCI bus id is unknown", exc_info=True)
        return None


class Block:
    """One partition's device memory on this worker, allocated outside any pool so that it can
    be exported whole. It never leaves its worker (it does not pickle), and Dask counts it as
    small: it is device memory, not host memory a worker should spill."""

    def __init__(self, nbytes: int) -> None:
        import cupy

        self.device = int(cupy.cuda.runtime.getDevice())
        self.memory = cupy.cuda.memory.Memory(max(1, nbytes))
        self.nbytes = nbytes

    def __reduce__(self) -> Any:
        raise TypeError("a partition's device block cannot leave its worker")

    def view(self, offset: int, slot: Slot) -> Any:
        """The CuPy array of ``slot`` at ``offset`` (datetimes as int64), keeping the block's
        memory alive as long as it lives."""
        import cupy
        import numpy as np

        dtype = np.dtype(np.int64) if slot.dtype.kind in "mM" else slot.dtype
        pointer = cupy.cuda.MemoryPointer(self.memory, offset)
        return cupy.ndarray(slot.shape, dtype=dtype, memptr=pointer)


class _Size:
    """What a failure message reads the partition's size from."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def allocate(nbytes: int) -> Block:
    """Task: a block of ``nbytes`` on this worker's GPU."""
    from .failures import failure

    try:
        return Block(nbytes)
    except Exception as err:
        error = failure(err, _Size(nbytes))
    raise error


def exported(block: Block) -> bytes:
    """Task: the block's IPC handle, for the kernel to open."""
    import cupy

    with cupy.cuda.Device(block.device):
        return bytes(cupy.cuda.runtime.ipcGetMemHandle(block.memory.ptr))


def assemble(block: Block, layout: Layout, rest: Any) -> Any:
    """Task: the partition, once the kernel has filled the block, as ``cudf.from_pandas`` (or
    ``cupy.asarray``) would have made it; its columns are views of the block."""
    import cupy

    from .failures import failure

    where, _ = offsets(layout)
    try:
        with cupy.cuda.Device(block.device):
            devs = [block.view(where[i], slot) for i, slot in enumerate(layout.slots)]
            if layout.kind == "array":
                return devs[0]
            return _cudf(layout, devs, rest)
    except Exception as err:
        error = failure(err, _Size(block.nbytes))
    raise error


def _cudf(layout: Layout, devs: list[Any], rest: Any) -> Any:
    from .converter import Context
    from .dataframes import column_from_device, nan_as_null, pandas_to_cudf

    null = nan_as_null()
    moved = None if rest is None else pandas_to_cudf(rest, Context())
    others = iter([] if moved is None else [column for _, column in compat.frame_columns(moved)])
    columns = {
        position: next(others) if slot is None else column_from_device(
            layout.slots[slot].dtype, devs[slot], null
        )
        for position, slot in enumerate(layout.columns)
    }  # fmt: skip
    index = _index(layout, devs, moved, null)
    if layout.kind == "series":
        series = compat.series_from_column(columns[0], layout.labels, index)
        series.attrs = dict(layout.attrs)
        return series
    frame = compat.frame_from_columns(columns, index, dict(layout.attrs), True)
    frame.columns = layout.labels
    return frame


def _index(layout: Layout, devs: list[Any], moved: Any, null: bool | None) -> Any:
    import cudf

    from .dataframes import column_from_device

    kind = layout.index[0]
    if kind == "range":
        _, start, step = layout.index
        return cudf.RangeIndex(start, start + step * layout.rows, step)
    if kind == "slot":
        _, slot, name = layout.index
        column = column_from_device(layout.slots[slot].dtype, devs[slot], null)
        return compat.index_from_column(column, name)
    return moved.index


# -- back to the kernel (``--gather``) -------------------------------------------------------------


class Packed:
    """A GPU partition's fixed-width bytes copied into a block of its worker, with the layout
    the kernel stacks them by and the rest (on the host) that Dask brings back."""

    def __init__(self, block: Block, layout: Layout, rest: Any) -> None:
        self.block, self.layout, self.rest = block, layout, rest

    def __reduce__(self) -> Any:
        raise TypeError("a partition's device block cannot leave its worker")


def pack(part: Any) -> Packed:
    """Task: the cuDF / CuPy partition's fixed-width bytes in a fresh block, laid out as
    :func:`.layout.split` lays out the pandas / NumPy object ``.to_pandas()`` / ``.get()`` would
    give (so the kernel stacks them with partitions that came another way)."""
    import cupy
    import numpy as np

    from .failures import failure

    try:
        if isinstance(part, cupy.ndarray):
            values = cupy.ascontiguousarray(part)
            layout = Layout("array", len(values), (Slot(np.dtype(values.dtype), values.shape),))
            devs, rest = [values], None
        else:
            layout, devs, rest = _split_on_device(part)
        where, size = offsets(layout)
        with cupy.cuda.Device(devs[0].device.id if devs else None):
            block = Block(size)
            for offset, slot, dev in zip(where, layout.slots, devs, strict=True):
                block.view(offset, slot)[...] = dev
        return Packed(block, layout, rest)
    except Exception as err:
        error = failure(err, part)
    raise error


def unpacked(packed: Packed) -> tuple[Layout, Any, bytes]:
    """Task: what the kernel needs to bring a packed partition back: layout, rest, handle."""
    return packed.layout, packed.rest, exported(packed.block)


def _split_on_device(part: Any) -> tuple[Layout, list[Any], Any]:
    """(layout, the slots' CuPy arrays, the rest as pandas) of a cuDF frame or series."""
    import cudf
    import numpy as np
    import pandas as pd

    from .converter import Context
    from .dataframes import cudf_to_pandas, host_values

    frame = part.to_frame() if isinstance(part, cudf.Series) else part
    slots: list[Slot] = []
    devs: list[Any] = []
    columns: list[int | None] = []
    for _, column in compat.frame_columns(frame):
        values = host_values(column)
        columns.append(None if values is None else len(slots))
        if values is not None:
            slots.append(Slot(np.dtype(column.dtype), (len(column),)))
            devs.append(values)
    index: tuple[Any, ...] = ("rest",)
    if isinstance(frame.index, cudf.RangeIndex):
        index = ("range", frame.index.start, frame.index.step)
    elif type(frame.index) is cudf.Index:
        values = host_values(compat.column_of(frame.index))
        if values is not None:
            slots.append(Slot(np.dtype(frame.index.dtype), (len(frame),)))
            devs.append(values)
            index = ("slot", len(slots) - 1, frame.index.name)
    others = [position for position, slot in enumerate(columns) if slot is None]
    rest = None
    if others or index[0] == "rest":
        rest = cudf_to_pandas(frame.iloc[:, others], Context())
        rest.columns = pd.RangeIndex(len(others))
        if index[0] != "rest":
            rest.index = pd.RangeIndex(len(frame))
    series = isinstance(part, cudf.Series)
    labels = part.name if series else compat.frame_labels(part)
    kind = "series" if series else "frame"
    layout = Layout(kind, len(frame), tuple(slots), tuple(columns), index, labels, dict(part.attrs))
    return layout, devs, rest


# -- in the kernel -------------------------------------------------------------------------------


def kernel_devices() -> dict[str, int]:
    """The kernel's own GPUs by PCI bus id (empty without CUDA)."""
    from .availability import device_count, reason

    if reason() is not None:
        return {}
    import cupy

    found = {}
    for number in range(device_count()):
        try:
            found[str(cupy.cuda.Device(number).pci_bus_id).upper()] = number
        except Exception:
            log.debug("GPU %d's PCI bus id is unknown", number, exc_info=True)
    return found


class NotOpened(Exception):
    """The kernel could not map a worker's block (the worker runs in another container or in
    the kernel's own process, or the driver refuses): that worker's partitions go another way."""

    def __init__(self, worker: str, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.worker = worker


@contextlib.contextmanager
def opened(handle: bytes, device: int, worker: str) -> Iterator[int]:
    """The device address of ``worker``'s exported block, mapped into the kernel while the
    ``with`` lasts."""
    import cupy

    runtime = cupy.cuda.runtime
    try:
        with cupy.cuda.Device(device):
            flags = runtime.cudaIpcMemLazyEnablePeerAccess
            pointer = int(runtime.ipcOpenMemHandle(handle, flags))
    except Exception as err:  # cupy's CUDARuntimeError
        log.debug("opening a block of %s failed", worker, exc_info=True)
        raise NotOpened(worker, err) from err
    try:
        yield pointer
    finally:
        with cupy.cuda.Device(device):
            runtime.ipcCloseMemHandle(pointer)


def segments(layout: Layout, pointer: int, sources: list[Any]) -> list[Segment]:
    """The copies that fill a block at ``pointer``: each slot's host bytes (``sources``, flat
    uint8 arrays) to its offset."""
    where, _ = offsets(layout)
    return [
        Segment(int(source.ctypes.data), pointer + offset, int(source.nbytes))
        for offset, source in zip(where, sources, strict=True)
        if source.nbytes
    ]
