"""The private parts of cuDF this package calls: its columns, built, read and assembled.

A cuDF column (``cudf.core.column.ColumnBase``) is internal to cuDF: building one, reading one and
assembling frames from them all go through here.
"""

from __future__ import annotations

import logging
from typing import Any

from .releases import Checked

log = logging.getLogger(__name__)

#: the releases these calls were checked on
CHECKED = Checked("cudf-cu13", "26.10", "26.10")


def as_column(data: Any, nan_as_null: bool | None) -> Any:
    """``cudf.core.column.as_column``: a column from a CuPy array or a pandas Series, as
    ``cudf.from_pandas`` builds each column."""
    from cudf.core.column import as_column as build

    return build(data, nan_as_null=nan_as_null)


def column_from_device(array: Any) -> Any:
    """A column over device memory that implements ``__cuda_array_interface__``, without a copy
    (``ColumnBase.from_cuda_array_interface``)."""
    from cudf.core.column import ColumnBase

    return ColumnBase.from_cuda_array_interface(array)


def with_validity(column: Any, valid: Any) -> Any:
    """``column`` with the nulls where the CuPy bool array ``valid`` is False (packed on device).

    ``ColumnBase.as_mask`` packs booleans into cuDF's bitmask and returns (mask, null count);
    ``ColumnBase.set_mask`` returns the column with that mask.
    """
    mask, null_count = column_from_device(valid).as_mask()
    return column.set_mask(mask, null_count)


def nans_to_nulls(column: Any) -> Any:
    """``ColumnBase.nans_to_nulls``: NaN becomes null, as ``from_pandas`` does by default."""
    return column.nans_to_nulls()


def column_astype(column: Any, dtype: Any) -> Any:
    """``ColumnBase.astype``."""
    return column.astype(dtype)


def column_has_nulls(column: Any) -> bool:
    """``ColumnBase.has_nulls()`` (a method; NaN is not counted as null)."""
    return bool(column.has_nulls())


def column_isnull(column: Any) -> Any:
    """``ColumnBase.isnull()``: a boolean cuDF column, True where null."""
    return column.isnull()


def column_values(column: Any) -> Any:
    """``ColumnBase.values``: a CuPy array of the column, NaN where null (a new array if any)."""
    return column.values


def column_to_pandas(column: Any) -> Any:
    """``ColumnBase.to_pandas()``: the column on the host, as a pandas Index."""
    return column.to_pandas()


def column_of(obj: Any) -> Any:
    """The one column of a ``cudf.Series`` or a plain ``cudf.Index`` (``_column``)."""
    return obj._column


def frame_columns(frame: Any) -> Any:
    """(label, column) pairs of a ``cudf.DataFrame``: its ``_data`` (a ``ColumnAccessor``)."""
    return frame._data.items()


def frame_labels(frame: Any) -> Any:
    """A ``cudf.DataFrame``'s column labels as pandas builds them (MultiIndex included), from
    ``_data.to_pandas_index``."""
    return frame._data.to_pandas_index


def allows_duplicate_labels(obj: Any) -> bool:
    """A cuDF frame's ``allows_duplicate_labels`` flag, from ``_flags`` (a ``pandas.Flags``)."""
    return bool(obj._flags.allows_duplicate_labels)


def index_from_column(column: Any, name: Any) -> Any:
    """A ``cudf.Index`` over ``column`` without a copy (``Index._from_column``)."""
    import cudf

    return cudf.Index._from_column(column, name=name)


def series_from_column(column: Any, name: Any, index: Any) -> Any:
    """A ``cudf.Series`` over ``column`` without a copy (``Series._from_column``)."""
    import cudf

    return cudf.Series._from_column(column, name=name, index=index)


def frame_from_columns(
    columns: dict[Any, Any], index: Any, attrs: Any, allows_duplicates: bool
) -> Any:
    """A ``cudf.DataFrame`` over ``columns`` without a copy (``DataFrame._from_data``); the
    caller sets the real column labels afterwards."""
    import cudf

    return cudf.DataFrame._from_data(
        columns, index, attrs=attrs, allows_duplicate_labels=allows_duplicates
    )


# -- cuDF columns as the buffers they are made of (pylibcudf; checked on cuDF 26.10) -------------
#
# cuDF 26 keeps each column as a ``pylibcudf.Column`` (``ColumnBase.plc_column``) and builds its
# columns with ``ColumnBase.create(plc_column, dtype)``; ``ColumnBase.to_pylibcudf()`` gives the
# same column with plain device spans. A string column is a STRING column of ``size`` rows whose
# data are the characters and whose one child is the INT32 or INT64 offsets (``size + 1``).


def builds_from_plc() -> bool:
    """Whether this cuDF is one whose column internals were checked (26.10, the release
    ``pyproject.toml`` asks for) and spills nothing: elsewhere strings and categoricals take
    cuDF's own path, which the log says once. (A spilled buffer's span has no device memory
    behind it, which :func:`string_parts` reads directly.)"""
    import cudf

    release = tuple(int(p) for p in cudf.__version__.split(".")[:2] if p.isdigit())
    if release != (26, 10):
        if not _said_release:
            _said_release.append(release)
            log.warning(
                "cuDF %s is not the release gpudask_jupyter checked (26.10): string and "
                "categorical columns take cuDF's own, slower path",
                cudf.__version__,
            )
        return False
    return not cudf.get_option("spill")


_said_release: list[tuple[int, ...]] = []


def plc_of(column: Any) -> Any:
    """``ColumnBase.to_pylibcudf()``: the column as a ``pylibcudf.Column`` (a view, no copy)."""
    return column.to_pylibcudf()


def column_from_plc(plc_column: Any, dtype: Any) -> Any:
    """``ColumnBase.create``: the cuDF column of ``dtype`` over a ``pylibcudf.Column``."""
    from cudf.core.column import ColumnBase

    return ColumnBase.create(plc_column, dtype)


def string_plc_column(size: int, chars: Any, offsets: Any, mask: Any, null_count: int) -> Any:
    """A ``pylibcudf.Column`` of strings over CuPy arrays (no copy): ``chars`` (uint8 or None
    when every string is empty), ``offsets`` (int32 or int64, ``size + 1`` of them, starting at
    0), ``mask`` (cuDF's padded bitmask, uint8, or None)."""
    import pylibcudf as plc

    width = plc.TypeId.INT64 if offsets.dtype.itemsize == 8 else plc.TypeId.INT32
    offsets_column = plc.Column(
        plc.DataType(width), size + 1, plc.gpumemoryview(offsets), None, 0, 0, []
    )
    return plc.Column(
        plc.DataType(plc.TypeId.STRING),
        size,
        plc.gpumemoryview(chars) if chars is not None else None,
        plc.gpumemoryview(mask) if mask is not None else None,
        null_count,
        0,
        [offsets_column],
    )


def concatenate_plc(columns: list[Any]) -> Any:
    """``pylibcudf.concatenate.concatenate`` of several columns (the one itself if only one)."""
    if len(columns) == 1:
        return columns[0]
    import pylibcudf as plc

    return plc.concatenate.concatenate(columns)


def _device_view(span: Any, dtype: Any, count: int) -> Any:
    """A CuPy array of ``count`` ``dtype`` items over a pylibcudf span (``ptr``, ``size``),
    holding the span so that the memory lives as long as the array."""
    import cupy

    if span is None or not span.ptr or not count:  # nothing there (every string empty)
        return cupy.empty(0, dtype)
    memory = cupy.cuda.UnownedMemory(int(span.ptr), int(span.size), span)
    return cupy.ndarray((count,), dtype, cupy.cuda.MemoryPointer(memory, 0))


def string_parts(column: Any) -> tuple[int, int, Any, Any, Any] | None:
    """(rows, null count, offsets, characters, mask) of a cuDF string column as CuPy arrays over
    its own device memory (mask None when it has none); None for a slice (a non-zero offset)."""
    import numpy as np
    import pylibcudf as plc

    view = plc_of(column)
    if view.offset() != 0 or view.num_children() != 1:
        return None
    size = view.size()
    offsets_column = view.child(0)
    if offsets_column.offset() != 0 or offsets_column.data() is None:
        return None
    wide = offsets_column.type().id() == plc.TypeId.INT64
    offsets = _device_view(offsets_column.data(), np.int64 if wide else np.int32, size + 1)
    data, mask, null_count = view.data(), view.null_mask(), view.null_count()
    if null_count and mask is None:
        return None
    chars = _device_view(data, np.uint8, int(data.size) if data is not None else 0)
    bits = _device_view(mask, np.uint8, int(mask.size)) if null_count else None
    return size, null_count, offsets, chars, bits


def categorical_codes_dtype(dtype: Any) -> Any:
    return dtype._codes_dtype  # the unsigned width cuDF keeps a categorical's codes in


def categorical_parts(column: Any) -> tuple[Any, str, int] | None:
    """(the codes as a cuDF column, null where missing; the categories' dtype kind; how many
    categories) of a cuDF categorical column (``CategoricalColumn.codes``), else None."""
    import cudf

    if not isinstance(column.dtype, cudf.CategoricalDtype):
        return None
    categories = column.dtype.categories
    return column.codes, str(categories.dtype.kind), len(categories)


def column_slice(column: Any, start: int, stop: int) -> Any:
    return column.slice(start, stop)  # ColumnBase.slice


def column_fillna(column: Any, value: Any) -> Any:
    return column.fillna(value)  # ColumnBase.fillna: a copy with nulls replaced by value
