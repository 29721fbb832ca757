"""GPU partitions packed into a block of their worker's memory, for the kernel to copy out.

The way back of :mod:`.device_blocks` (``--gather``): the worker copies a cuDF / CuPy
partition's fixed-width columns, and the buffers of its string and categorical columns as pandas
keeps them (:mod:`.coded_columns`), into one fresh block (device to device, fast) and exports it;
the kernel copies them from there into the final arrays through its pinned pipeline. Columns
that ``.to_pandas()`` would change (NumPy ints with nulls, which become floats there) come back
as a small pandas "rest" through Dask; pandas' nullable columns cross as values and mask. A
worker that cannot make a block says why (:class:`.device_blocks.Unavailable`), and its
partitions come back the usual way.
"""

from __future__ import annotations

import logging
from typing import Any

from ... import compat
from .. import arrow_columns
from ..converter import Context
from ..dataframes import cudf_to_pandas, host_values
from ..report import nbytes_of
from . import coded_columns
from .coded_columns import Coded
from .device_blocks import Block, Unavailable, exported, offsets, unavailable
from .partition_layout import Layout, Slot

log = logging.getLogger(__name__)


class Packed:
    """A GPU partition's fixed-width bytes copied into a block of its worker, with the layout
    the kernel stacks them by and the rest (on the host) that Dask brings back. Dask sizes it by
    the rest: the block is device memory, which the worker should not try to spill."""

    def __init__(self, block: Block, layout: Layout, rest: Any) -> None:
        self.block, self.layout, self.rest = block, layout, rest

    def __reduce__(self) -> Any:
        raise TypeError("a partition's device block cannot leave its worker")

    def __sizeof__(self) -> int:
        return 64 + (0 if self.rest is None else nbytes_of(self.rest) or 0)


def pack(part: Any) -> Packed | Unavailable:
    """Task: the cuDF / CuPy partition's fixed-width bytes in a fresh block, laid out as
    :func:`.partition_layout.split` lays out the pandas / NumPy object ``.to_pandas()`` / ``.get()``
    would give (so the kernel stacks them with partitions that came another way). The copies have
    finished when it returns: the kernel reads the block from another process."""
    import cupy
    import numpy as np

    layout: Layout | None = None
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
            cupy.cuda.runtime.deviceSynchronize()  # cuDF and CuPy may use other streams
        return Packed(block, layout, rest)
    except Exception as err:
        return unavailable(err, layout.nbytes if layout is not None else 0)


def unpacked(packed: Packed | Unavailable) -> tuple[Layout, Any, bytes] | str:
    """Task: what the kernel needs to bring a packed partition back (layout, rest, handle), or
    why it cannot."""
    if isinstance(packed, Unavailable):
        return packed.why
    handle = exported(packed.block)
    if isinstance(handle, str):
        return handle
    return packed.layout, packed.rest, handle


def _coded(column: Any, first_slot: int) -> tuple[Coded, list[Any]] | None:
    """A cuDF string or categorical column as the buffers of the pandas column ``to_pandas``
    gives (:mod:`.coded_columns`), as CuPy arrays: strings as 64-bit offsets, the characters
    and the mask; a categorical as pandas' signed codes (-1 where missing). None: the rest."""
    if not compat.builds_from_plc():  # asked before CuPy is imported
        return None
    import cupy

    strings = arrow_columns.device_strings(column)
    if strings is not None:
        size, nulls, offsets, chars, mask = strings
        devs = [offsets.astype(cupy.int64, copy=False), chars]
        if nulls:
            devs.append(mask[: arrow_columns.mask_bytes(size)])
        slots = tuple(range(first_slot, first_slot + len(devs)))
        return Coded(coded_columns.STRINGS, slots, column.dtype, nulls), devs
    masked = _masked(column, first_slot)
    if masked is not None:
        return masked
    codes = arrow_columns.pandas_codes(column)
    if codes is None:
        return None
    return Coded(coded_columns.CATEGORICAL, (first_slot,), codes[1]), [codes[0]]


def _times_with_nulls(column: Any) -> Any:
    """A cuDF datetime or timedelta column with nulls as the int64 values of the NumPy array
    ``to_pandas`` gives (NaT, the smallest int64, where null), or None (another column, or a
    cuDF that will not cast it: the rest then)."""
    import numpy as np

    dtype = column.dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in "mM":
        return None
    try:
        ints = compat.column_astype(column, np.dtype(np.int64))
        return compat.column_values(compat.column_fillna(ints, np.iinfo(np.int64).min))
    except Exception:
        log.debug("a %s column with nulls comes back through Dask", dtype, exc_info=True)
        return None


def _masked(column: Any, first_slot: int) -> tuple[Coded, list[Any]] | None:
    """A cuDF column of a pandas nullable dtype (what ``cudf.from_pandas`` makes of ``Int64``,
    ``boolean`` ...) as the values and the mask (True where missing) of the pandas masked array
    ``to_pandas`` gives; None for other columns (a NumPy int with nulls becomes float there)."""
    import numpy as np
    from pandas.core.arrays.masked import BaseMaskedArray

    if isinstance(column.dtype, np.dtype):
        return None
    dtype = compat.column_to_pandas(compat.column_slice(column, 0, 0)).dtype
    if not issubclass(getattr(dtype, "construct_array_type", lambda: object)(), BaseMaskedArray):
        return None
    values_dtype = dtype.numpy_dtype
    if values_dtype.kind not in "biuf":
        return None
    nulls = compat.column_has_nulls(column)
    filled = compat.column_fillna(column, values_dtype.type(0)) if nulls else column
    values = compat.column_values(compat.column_astype(filled, values_dtype))
    missing = compat.column_values(compat.column_isnull(column))
    count = int(missing.sum()) if nulls else 0
    return Coded(coded_columns.MASKED, (first_slot, first_slot + 1), dtype, count), [
        values,
        missing,
    ]


def _split_on_device(part: Any) -> tuple[Layout, list[Any], Any]:
    """(layout, the slots' CuPy arrays, the rest as pandas) of a cuDF frame or series."""
    import cudf
    import numpy as np
    import pandas as pd

    frame = part.to_frame() if isinstance(part, cudf.Series) else part
    slots: list[Slot] = []
    devs: list[Any] = []
    columns: list[int | Coded | None] = []
    for _, column in compat.frame_columns(frame):
        values = host_values(column)
        if values is None:
            values = _times_with_nulls(column)
        if values is not None:
            columns.append(len(slots))
            slots.append(Slot(np.dtype(column.dtype), (len(column),)))
            devs.append(values)
            continue
        coded = _coded(column, len(slots))
        columns.append(None if coded is None else coded[0])
        for dev in [] if coded is None else coded[1]:
            slots.append(Slot(np.dtype(dev.dtype), dev.shape))
            devs.append(dev)
    index: tuple[Any, ...] = ("rest",)
    if isinstance(frame.index, cudf.RangeIndex):
        index = ("range", frame.index.start, frame.index.step, frame.index.name)
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
