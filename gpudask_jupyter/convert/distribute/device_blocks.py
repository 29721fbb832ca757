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

The handle travels only over the cluster's own connection (TLS by default) between the kernel
and that worker. Used on both sides: :func:`allocate`, :func:`exported` and :func:`assemble` run
in a worker; :func:`kernel_devices`, :func:`opened` and :func:`segments` in the kernel.
:mod:`.device_packing` is the way back (``--gather``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from ... import compat, config
from ...cluster.room.allocator import process_cap
from ...machine import availability
from ...text.units import format_bytes
from .. import arrow_columns
from ..converter import Context
from ..dataframes import device_column, device_kind, masked_column, nan_as_null, pandas_to_cudf
from ..failures import failure
from ..pinned.ring import Segment
from . import coded_columns
from .coded_columns import Coded
from .partition_layout import Layout, Slot, make_index

log = logging.getLogger(__name__)

ALIGN = 256  # what cudaMalloc guarantees, and more than any dtype needs
ROUTE = "CUDA IPC"  # the route's name in the transfer report


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
    if layout.nbytes == 0:
        return False
    if layout.kind == "array":
        return layout.slots[0].dtype.kind in "biuf"  # CuPy has no datetime dtype
    return all(device_kind(slot.dtype) for slot in layout.slots)


def identity(device: int) -> str:
    """A GPU as both the kernel and a worker name it: its PCI bus id and UUID (a MIG instance has
    a UUID of its own, and its parent's bus id). A dask-cuda worker's ``CUDA_VISIBLE_DEVICES``
    numbers the GPUs differently from the kernel, so numbers cannot be compared."""
    import cupy

    bus = str(cupy.cuda.Device(device).pci_bus_id).upper()
    uuid = cupy.cuda.runtime.getDeviceProperties(device).get("uuid")
    return f"{bus}/{bytes(uuid).hex()}" if uuid else bus


def worker_gpu() -> str | None:
    """This worker's GPU (:func:`identity`), or None without one."""
    if availability.reason() is not None:
        return None
    import cupy

    try:
        return identity(int(cupy.cuda.runtime.getDevice()))
    except Exception:  # a driver without the calls: this route is simply not offered
        log.debug("this worker's GPU cannot be identified", exc_info=True)
        return None


class Block:
    """One partition's device memory on this worker, allocated outside any pool so that it can
    be exported whole. It never leaves its worker (it does not pickle), and Dask counts it as
    small: it is device memory, not host memory a worker should spill. On a share of a shared
    GPU it is counted against the worker's cap (:mod:`...cluster.room.allocator`) for as long
    as its memory lives, and refused where it does not fit."""

    def __init__(self, nbytes: int) -> None:
        import weakref

        size = max(1, nbytes)
        capped = process_cap.get()
        if capped is not None and not capped.reserve(size):
            raise OverShare(size, capped.cap)
        try:
            import cupy

            self.device = int(cupy.cuda.runtime.getDevice())
            self.memory = cupy.cuda.memory.Memory(size)
        except BaseException:
            if capped is not None:
                capped.release(size)
            raise
        if capped is not None:
            weakref.finalize(self.memory, capped.release, size)
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


class OverShare(MemoryError):
    """A block beyond what this worker's share of a shared GPU leaves."""

    def __init__(self, nbytes: int, cap: int) -> None:
        super().__init__(
            f"a block of {format_bytes(nbytes)} does not fit in what this worker's share of the "
            f"shared GPU ({format_bytes(cap)}) leaves"
        )


class _Size:
    """What a failure message reads the partition's size from."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


class Unavailable:
    """Why a worker offers no block (the value of its task in place of one): the kernel then
    sends that worker's partitions another way, where a memory pool or plain copies may fit."""

    def __init__(self, why: str) -> None:
        self.why = why


def unavailable(err: BaseException, nbytes: int) -> Unavailable:
    return Unavailable(str(failure(err, _Size(nbytes))))


def allocate(nbytes: int) -> Block | Unavailable:
    """Task: a block of ``nbytes`` on this worker's GPU (outside any pool, so that it can be
    exported whole; a pool that holds most of the GPU leaves too little: :class:`Unavailable`)."""
    try:
        return Block(nbytes)
    except OverShare as err:
        return Unavailable(str(err))
    except Exception as err:
        return unavailable(err, nbytes)


def exported(block: Block | Unavailable) -> bytes | str:
    """Task: the block's IPC handle for the kernel to open, or why there is none."""
    if isinstance(block, Unavailable):
        return block.why
    import cupy

    try:
        with cupy.cuda.Device(block.device):
            return bytes(cupy.cuda.runtime.ipcGetMemHandle(block.memory.ptr))
    except Exception as err:  # no CUDA IPC here (some virtual machines, Tegra)
        log.debug("exporting a block failed", exc_info=True)
        return f"its GPU memory cannot be shared ({err})"


def build_on_block(block: Block, layout: Layout, rest: Any) -> Any:
    """Task: the partition, once the kernel has filled the block, as ``cudf.from_pandas`` (or
    ``cupy.asarray``) would have made it; its columns are views of the block."""
    import cupy

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
    null = nan_as_null()
    moved = None if rest is None else pandas_to_cudf(rest, Context())
    others = iter([] if moved is None else [column for _, column in compat.frame_columns(moved)])
    columns = {}
    for position, slot in enumerate(layout.columns):
        if slot is None:
            columns[position] = next(others)
        elif isinstance(slot, Coded):
            columns[position] = _coded(slot, layout.rows, devs, null)
        else:
            columns[position] = device_column(layout.slots[slot].dtype, devs[slot], null)
    index = _index(layout, devs, moved, null)
    if layout.kind == "series":
        series = compat.series_from_column(columns[0], layout.labels, index)
        series.attrs = dict(layout.attrs)
        return series
    frame = compat.frame_from_columns(columns, index, dict(layout.attrs), True)
    frame.columns = layout.labels
    return frame


def _coded(coded: Coded, rows: int, devs: list[Any], null: bool | None) -> Any:
    """The cuDF column ``cudf.from_pandas`` makes of a string, categorical or nullable column,
    over its buffers in the block. Where this cuDF lacks a column internal that path calls
    (:func:`.compat.cudf.builds_from_plc`), from the pandas column made of the same buffers
    brought back to the host (slower, the same)."""
    import pandas as pd

    mine = [devs[slot] for slot in coded.slots]
    target = compat.as_column(pd.Series([], dtype=coded.dtype), null).dtype
    if not compat.builds_from_plc():
        host = coded_columns.rebuild_column(coded, rows, [m.get() for m in mine])
        return compat.as_column(pd.Series(host, copy=False), null)
    if coded.kind == coded_columns.STRINGS:
        mask = mine[2] if len(mine) > 2 else None
        plc = arrow_columns.strings_plc(rows, coded.nulls, mine[0], mine[1], mask, coded.first)
        return compat.column_from_plc(plc, target)
    if coded.kind == coded_columns.CATEGORICAL:
        return arrow_columns.categorical_column(mine[0], target)
    values, missing = mine
    return masked_column(values, missing if coded.nulls else None, null, target)


def _index(layout: Layout, devs: list[Any], moved: Any, null: bool | None) -> Any:
    import cudf

    def from_slot(slot: int, name: Any) -> Any:
        column = device_column(layout.slots[slot].dtype, devs[slot], null)
        return compat.index_from_column(column, name)

    return make_index(layout, moved, cudf.RangeIndex, from_slot)


# -- in the kernel -------------------------------------------------------------------------------


def kernel_devices() -> dict[str, int]:
    """The kernel's own GPUs by :func:`identity` (empty without CUDA, or when the route is
    switched off with the ``distribute-cuda-ipc`` option)."""
    if availability.reason() is not None or not config.get("distribute-cuda-ipc"):
        return {}
    found = {}
    for number in range(availability.device_count()):
        try:
            found[identity(number)] = number
        except Exception:
            log.debug("GPU %d cannot be identified", number, exc_info=True)
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
    pointer = None
    try:
        try:
            with cupy.cuda.Device(device):
                flags = runtime.cudaIpcMemLazyEnablePeerAccess
                pointer = int(runtime.ipcOpenMemHandle(handle, flags))
        except Exception as err:  # cupy's CUDARuntimeError
            log.warning("the kernel cannot open GPU memory of %s: %s", worker, err)
            log.debug("opening a block of %s failed", worker, exc_info=True)
            raise NotOpened(worker, err) from err
        yield pointer
    finally:
        if pointer is not None:
            try:
                with cupy.cuda.Device(device):
                    runtime.ipcCloseMemHandle(pointer)
            except Exception:  # the error on its way out says more
                log.warning("closing a block of %s failed", worker, exc_info=True)


def segments(layout: Layout, pointer: int, sources: list[Any]) -> list[Segment]:
    """The copies that fill a block at ``pointer``: each slot's host bytes (``sources``, flat
    uint8 arrays) to its offset."""
    where, _ = offsets(layout)
    return [
        Segment(int(source.ctypes.data), pointer + offset, int(source.nbytes))
        for offset, source in zip(where, sources, strict=True)
        if source.nbytes
    ]
