"""One partition as fixed-width arrays ("slots") plus the rest, and back.

What crosses shared memory or GPU memory are raw bytes, so only what is fully described by NumPy
dtypes and shapes can take those routes: numeric, boolean, complex, datetime and timedelta
columns in native byte order, a plain index of such values, a NumPy array of such a dtype, and
the columns made of such buffers (Arrow strings, categoricals, pandas' nullable columns:
:mod:`.coded_columns`). Everything else (Python objects, time zones, a MultiIndex ...) is the
"rest", a small pandas object that Dask moves itself. A :class:`Layout` says which is which and
is all a worker needs to rebuild the partition; it pickles without the data.

Used on both sides: the kernel splits, a worker joins (``--distribute``), and the reverse
(``--gather``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .coded_columns import Coded, rebuild_column, split_column, why_rest

FIXED_KINDS = frozenset("biufcmM")
_TIME_UNITS = frozenset({"s", "ms", "us", "ns"})


@dataclass(frozen=True)
class Slot:
    dtype: Any  # a numpy.dtype
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * int(self.dtype.itemsize)


@dataclass(frozen=True)
class Layout:
    """How one partition is split. ``columns[i]`` is the slot of column ``i``, a
    :class:`.Coded` column of several slots, or None when the column is in the rest;
    ``index`` is ``("range", start, step, name)``, ``("slot", n, name)`` or ``("rest",)``;
    ``labels`` are a frame's column labels or a series' name."""

    kind: str  # "frame", "series" or "array"
    rows: int
    slots: tuple[Slot, ...]
    columns: tuple[int | Coded | None, ...] = ()
    index: tuple[Any, ...] = ("rest",)
    labels: Any = None
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return sum(slot.nbytes for slot in self.slots)

    def same_shape(self, other: Layout) -> bool:
        """Whether partitions of these layouts can be stacked into one object slot by slot."""
        return (
            self.kind == other.kind
            and [s.dtype for s in self.slots] == [s.dtype for s in other.slots]
            and [s.shape[1:] for s in self.slots] == [s.shape[1:] for s in other.slots]
            and self.columns == other.columns
            and self.index[0] == other.index[0]
        )

    def own_slots(self) -> frozenset[int]:
        """Slots that are one partition's buffers (a string column's), not rows that stack."""
        return frozenset(
            slot
            for column in self.columns
            if isinstance(column, Coded) and not column.stacks
            for slot in column.slots
        )


def is_fixed(dtype: Any) -> bool:
    import numpy as np

    if not isinstance(dtype, np.dtype) or dtype.kind not in FIXED_KINDS or not dtype.isnative:
        return False
    return dtype.kind not in "mM" or np.datetime_data(dtype)[0] in _TIME_UNITS


def _index_layout(index: Any, slots: list[Slot], arrays: list[Any]) -> tuple[Any, ...]:
    import pandas as pd

    if type(index) is pd.RangeIndex:
        return ("range", index.start, index.step, index.name)
    if index.nlevels == 1 and is_fixed(index.dtype) and getattr(index, "tz", None) is None:
        values = index.to_numpy(copy=False)
        slots.append(Slot(values.dtype, values.shape))
        arrays.append(values)
        return ("slot", len(slots) - 1, index.name)
    return ("rest",)


def split(obj: Any) -> tuple[Layout, list[Any], Any]:
    """(layout, the slots' arrays (views of ``obj`` where possible), the rest or None)."""
    import numpy as np
    import pandas as pd

    if isinstance(obj, np.ndarray):
        if is_fixed(obj.dtype):
            rows = obj.shape[0] if obj.ndim else 1
            return Layout("array", rows, (Slot(obj.dtype, obj.shape),)), [obj], None
        return Layout("array", len(obj), ()), [], obj
    frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
    slots: list[Slot] = []
    arrays: list[Any] = []
    columns: list[int | Coded | None] = []
    rest_positions = []
    for position in range(frame.shape[1]):
        dtype = frame.dtypes.iloc[position]
        if is_fixed(dtype):
            values = frame.iloc[:, position].to_numpy(copy=False)
            slots.append(Slot(values.dtype, values.shape))
            arrays.append(values)
            columns.append(len(slots) - 1)
            continue
        coded = split_column(frame.iloc[:, position], len(slots))
        if coded is None:
            columns.append(None)
            rest_positions.append(position)
            continue
        columns.append(coded[0])
        for values in coded[1]:
            slots.append(Slot(values.dtype, values.shape))
            arrays.append(values)
    index = _index_layout(frame.index, slots, arrays)
    rest = None
    if rest_positions or index[0] == "rest":
        rest = frame.iloc[:, rest_positions]
        rest.columns = pd.RangeIndex(len(rest_positions))
        if index[0] != "rest":
            rest.index = pd.RangeIndex(len(frame))
    series = isinstance(obj, pd.Series)
    layout = Layout(
        "series" if series else "frame",
        len(frame),
        tuple(slots),
        tuple(columns),
        index,
        obj.name if series else frame.columns,
        dict(obj.attrs),
    )
    return layout, arrays, rest


def make_index(
    layout: Layout,
    rest: Any,
    ranged: Callable[..., Any],
    from_slot: Callable[[int, Any], Any],
) -> Any:
    """The partition's index from ``layout.index``, in the library of the caller:
    ``ranged(start, stop, step, name=)`` (a ``RangeIndex`` class), ``from_slot(slot, name)``,
    or the index of the ``rest`` (pandas here, cuDF on a worker's GPU)."""
    kind = layout.index[0]
    if kind == "range":
        _, start, step, name = layout.index
        return ranged(start, start + step * layout.rows, step, name=name)
    if kind == "slot":
        _, slot, name = layout.index
        return from_slot(slot, name)
    return rest.index


def rebuild(
    layout: Layout, arrays: list[Any], rest: Any, made: dict[int, Any] | None = None
) -> Any:
    """The partition ``split`` was given, from the slots' arrays (used without a copy); ``made``:
    columns already built, by position (a gathered string column, made of its partitions')."""
    import pandas as pd

    if layout.kind == "array":
        return arrays[0] if layout.slots else rest

    def from_slot(slot: int, name: Any) -> Any:
        return pd.Index(arrays[slot], name=name, copy=False)

    index = make_index(layout, rest, pd.RangeIndex, from_slot)
    data: dict[int, Any] = {}
    made = made or {}
    taken = 0
    for position, slot in enumerate(layout.columns):
        if position in made:
            data[position] = made[position]
        elif slot is None:
            data[position] = rest.iloc[:, taken].array
            taken += 1
        elif isinstance(slot, Coded):
            data[position] = rebuild_column(slot, layout.rows, arrays)
        else:
            data[position] = arrays[slot]
    if layout.kind == "series":
        series = pd.Series(data[0], index=index, name=layout.labels, copy=False)
        series.attrs = dict(layout.attrs)
        return series
    frame = pd.DataFrame(data, index=index, copy=False)
    frame.columns = layout.labels
    frame.attrs = dict(layout.attrs)
    return frame


def empty_slots(layout: Layout) -> list[Any]:
    """Arrays, owning their memory, to receive the slots' bytes."""
    import numpy as np

    return [np.empty(slot.shape, dtype=slot.dtype) for slot in layout.slots]


def as_bytes(array: Any) -> Any:
    """The bytes of ``array`` in C order as a flat uint8 array (a copy only if not contiguous)."""
    import numpy as np

    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def rest_note(name: str, obj: Any, how: str) -> str | None:
    """The report's note on the columns of ``obj`` (and its index) that crossed by ``how``
    (Dask's own transfer) and why, or None when every column took a fast route."""
    import pandas as pd

    if not isinstance(obj, pd.DataFrame | pd.Series):
        return None
    frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
    said = []
    for position in range(frame.shape[1]):
        sample = frame.iloc[:1000, position]
        if not is_fixed(sample.dtype) and split_column(sample.iloc[:0], 0) is None:
            said.append(f"{frame.columns[position]!r} ({why_rest(sample)})")
    index = frame.index
    if type(index) is not pd.RangeIndex and not (
        index.nlevels == 1 and is_fixed(index.dtype) and getattr(index, "tz", None) is None
    ):
        why = "a MultiIndex" if index.nlevels > 1 else why_rest(index[:1000])
        said.append(f"the index ({why})")
    if not said:
        return None
    return f"{name}: {', '.join(said)} crossed by {how}; every other column as raw buffers"
