"""The private parts of cuDF this package calls: its columns, built, read and assembled.

A cuDF column (``cudf.core.column.ColumnBase``) is internal to cuDF: building one, reading one and
assembling frames from them all go through here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .probing import NeedTuple, has_path, takes

log = logging.getLogger(__name__)

DISTRIBUTION = "cudf-cu13"


def installed() -> str | None:
    """The release of the cuDF that imports here (a stand-in's too), or None."""
    try:
        import cudf
    except ImportError:
        return None
    return str(getattr(cudf, "__version__", "?"))


def needs() -> list[NeedTuple]:
    """What the fast paths call (see :func:`_needs`), each with what is done without it."""
    import cudf
    import pylibcudf as plc

    without = "string and categorical columns take cuDF's own, slower path"
    return [(name, check, without) for name, check in _needs(cudf, plc)]


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


# -- cuDF columns as the buffers they are made of (pylibcudf) ------------------------------------
#
# cuDF 26 keeps each column as a ``pylibcudf.Column`` (``ColumnBase.plc_column``) and builds its
# columns with ``ColumnBase.create(plc_column, dtype)``; ``ColumnBase.to_pylibcudf()`` gives the
# same column with plain device spans. A string column is a STRING column of ``size`` rows whose
# data are the characters and whose one child is the INT32 or INT64 offsets (``size + 1``).
#
# Whether these calls are there is probed (:func:`fast_path_lacks`), not read off the release:
# the fast paths follow what the installed cuDF offers, and fall back where it lacks a piece.

#: ``pylibcudf.Column``'s parameters, in the order :func:`string_plc_column` passes them
PLC_COLUMN_PARAMETERS = ("data_type", "size", "data", "mask", "null_count", "offset", "children")
#: the ``pylibcudf.Column`` accessors :func:`string_parts` calls, each with how many arguments it
#: takes besides the column
PLC_COLUMN_ACCESSORS = {
    "offset": 0,
    "num_children": 0,
    "child": 1,
    "size": 0,
    "data": 0,
    "null_mask": 0,
    "null_count": 0,
    "type": 0,
}


def builds_from_plc() -> bool:
    """Whether string and categorical columns take the fast paths: this cuDF offers every call
    they make (:func:`fast_path_lacks`, probed once a process) and spills nothing; elsewhere
    they take cuDF's own, slower path. The answer follows what is installed, not its release
    number, so a release that keeps these calls keeps the fast paths and one that drops a call
    loses only them, with a warning naming it. Spilling is read on each call, since it can be
    switched on at any time (a spilled buffer's span has no device memory behind it, which
    :func:`string_parts` reads directly)."""
    if fast_path_lacks():
        return False
    import cudf

    return not cudf.get_option("spill")


def fast_path_lacks() -> tuple[str, ...]:
    """What this cuDF lacks of the calls the fast paths make, by name; empty when it has them all.

    Probed on first use and kept for the process (:func:`forget_probe` starts again), so that a
    lack is logged once: a warning naming it, the traceback of each failed check at debug level.
    The probe needs no GPU: it looks the names up and reads their signatures where they can be
    read (:func:`.probing.signature`); one that cannot be read is not held against the call.
    """
    with _probe_lock:
        if not _probed:
            _probed.append(_probe())
        return _probed[0]


def forget_probe() -> None:
    """Probe again on the next :func:`fast_path_lacks` (tests swap the cuDF they run on)."""
    with _probe_lock:
        _probed.clear()


# per process: the installed cuDF, probed once per process
_probe_lock = threading.Lock()
_probed: list[tuple[str, ...]] = []


def _probe() -> tuple[str, ...]:
    """What the fast paths need and this cuDF lacks, the lack logged (see :func:`_needs`)."""
    release = "?"
    try:
        import cudf

        release = str(getattr(cudf, "__version__", "?"))
        try:
            import pylibcudf as plc
        except ImportError:
            log.debug("pylibcudf cannot be imported", exc_info=True)
            lacking: tuple[str, ...] = ("pylibcudf",)
        else:
            lacking = tuple(name for name, check in _needs(cudf, plc) if not _passes(name, check))
    except Exception as err:
        log.debug("probing cuDF %s for its column internals failed", release, exc_info=True)
        lacking = (f"a probe that runs ({type(err).__name__}: {err})",)
    if lacking:
        log.warning(
            "string and categorical columns take cuDF's own, slower path: this cuDF (%s) lacks %s",
            release,
            ", ".join(lacking),
        )
    return lacking


def _passes(name: str, check: Callable[[], object]) -> bool:
    try:
        check()
    except Exception:
        log.debug("cuDF's fast paths need %s, which this cuDF lacks", name, exc_info=True)
        return False
    return True


def _needs(cudf: Any, plc: Any) -> list[tuple[str, Callable[[], object]]]:
    """(name, check) of each call the fast-path functions of this module make: each check
    raises where ``cudf`` / ``plc`` (pylibcudf) lack the call. The column methods the other
    paths use as well (``astype``, ``fillna``, ``slice``, ``values``, ``to_pandas``, masks) are
    left out: without them no path works, and there is nothing to fall back to. The spans
    :func:`string_parts` reads are checked on ``gpumemoryview``, the span this module builds."""

    def base() -> Any:
        return cudf.core.column.ColumnBase

    needs: list[tuple[str, Callable[[], object]]] = [
        (
            "cudf.core.column.ColumnBase.create(plc_column, dtype)",
            lambda: takes(base().create, 2),
        ),
        ("cudf.core.column.ColumnBase.to_pylibcudf()", lambda: takes(base().to_pylibcudf, 1)),
        (
            "cudf.core.column.CategoricalColumn.codes",
            lambda: has_path(cudf.core.column, "CategoricalColumn.codes"),
        ),
        ("cudf.CategoricalDtype", lambda: _is_class(cudf.CategoricalDtype)),
        (
            "cudf.CategoricalDtype.categories",
            lambda: has_path(cudf, "CategoricalDtype.categories"),
        ),
        (
            "cudf.CategoricalDtype._codes_dtype",
            lambda: has_path(cudf, "CategoricalDtype._codes_dtype"),
        ),
        ("pylibcudf.TypeId.STRING", lambda: plc.TypeId.STRING),
        ("pylibcudf.TypeId.INT32", lambda: plc.TypeId.INT32),
        ("pylibcudf.TypeId.INT64", lambda: plc.TypeId.INT64),
        ("pylibcudf.DataType(type_id)", lambda: takes(plc.DataType, 1)),
        ("pylibcudf.DataType.id()", lambda: takes(plc.DataType.id, 1)),
        ("pylibcudf.gpumemoryview(array)", lambda: takes(plc.gpumemoryview, 1)),
        ("pylibcudf.gpumemoryview.ptr", lambda: plc.gpumemoryview.ptr),
        ("pylibcudf.gpumemoryview.size", lambda: plc.gpumemoryview.size),
        (
            f"pylibcudf.Column({', '.join(PLC_COLUMN_PARAMETERS)})",
            lambda: _column_constructor(plc.Column),
        ),
        (
            "pylibcudf.concatenate.concatenate(columns)",
            lambda: takes(plc.concatenate.concatenate, 1),
        ),
    ]
    for accessor, arguments in PLC_COLUMN_ACCESSORS.items():
        needs.append((f"pylibcudf.Column.{accessor}()", _method_check(plc, accessor, arguments)))
    return needs


def _method_check(plc: Any, name: str, arguments: int) -> Callable[[], object]:
    return lambda: takes(getattr(plc.Column, name), 1 + arguments)


def _is_class(obj: Any) -> None:
    if not isinstance(obj, type):
        raise TypeError(f"{obj!r} is not a class")


def _column_constructor(column: Any) -> None:
    """Raise TypeError unless ``pylibcudf.Column`` takes :data:`PLC_COLUMN_PARAMETERS` in that
    order (the rest with defaults), where its signature can be read."""
    signature = takes(column, len(PLC_COLUMN_PARAMETERS))
    names = tuple(signature.parameters)[: len(PLC_COLUMN_PARAMETERS)] if signature else None
    if names is not None and names != PLC_COLUMN_PARAMETERS:
        raise TypeError(f"pylibcudf.Column takes {names}, not {PLC_COLUMN_PARAMETERS}")


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
