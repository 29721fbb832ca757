"""pandas ↔ cuDF, column by column, equal to ``cudf.from_pandas`` / ``.to_pandas()``.

The frame is rebuilt the way cuDF's own constructors build it (a column per pandas column, the
index, then the labels, attrs and flags), so labels, MultiIndex columns and metadata come out as
cuDF makes them. What changes is how the bytes of each large numeric, boolean, datetime or
timedelta column (and its validity mask) reach the device: through the pinned pipeline instead of
a pageable copy. Every other column (strings, categoricals, time zones, ...) takes cuDF's own path,
which goes through Arrow. Each column's failure is reported with its label.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from . import staging
from .failures import ColumnFailure
from .registry import Context

_FAST_KINDS = set("biuf")
_TIME_UNITS = {"s", "ms", "us", "ns"}


class _Typed:
    """A CUDA array interface that reinterprets an int64 CuPy array as datetime/timedelta.

    CuPy has no datetime dtype; cuDF reads the type from the interface. Holding ``owner`` keeps
    the device memory alive as long as the column that wraps this object.
    """

    def __init__(self, owner: Any, typestr: str) -> None:
        self._owner = owner
        cai = dict(owner.__cuda_array_interface__)
        cai["typestr"] = typestr
        self.__cuda_array_interface__ = cai


def nan_as_null() -> bool | None:
    """cuDF's default for ``from_pandas``: NaN becomes null unless pandas-compatible mode is on."""
    import cudf

    return False if cudf.get_option("mode.pandas_compatible") else None


def _masked_parts(values: Any) -> tuple[Any, Any] | None:
    """(data, missing) NumPy arrays of a pandas masked array (Int64, Float64, boolean ...)."""
    from pandas.core.arrays.masked import BaseMaskedArray

    if isinstance(values, BaseMaskedArray):
        return values._data, values._mask
    return None


def _with_validity(column: Any, valid: Any) -> Any:
    """``column`` with the nulls where the CuPy bool array ``valid`` is False (packed on device)."""
    from cudf.core.column import ColumnBase

    mask, null_count = ColumnBase.from_cuda_array_interface(valid).as_mask()
    return column.set_mask(mask, null_count)


def _fast_column(series: Any, null: bool | None, device: int) -> Any | None:
    """The column built through the pinned pipeline, or None if this column should not take it."""
    import numpy as np
    from cudf.core.column import ColumnBase, as_column

    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        if not staging.use_pinned(dtype.itemsize * len(series)) or not dtype.isnative:
            return None
        if dtype.kind in _FAST_KINDS:
            if dtype.kind == "f" and dtype.itemsize == 2:
                return None  # float16: let cuDF raise its own error
            dev = staging.to_device(series.to_numpy(copy=False), device)
            return as_column(dev, nan_as_null=null)
        if dtype.kind in "mM" and np.datetime_data(dtype)[0] in _TIME_UNITS:
            ints = staging.to_device(series.to_numpy(copy=False).view(np.int64), device)
            column = ColumnBase.from_cuda_array_interface(_Typed(ints, dtype.str))
            valid = ints != np.iinfo(np.int64).min  # NaT, which cuDF keeps as null
            if not bool(valid.all()):
                column = _with_validity(column, valid)
            return column
        return None
    parts = _masked_parts(series.array)
    if parts is None:
        return None
    data, missing = parts
    if not staging.use_pinned(data.nbytes) or data.dtype.kind not in _FAST_KINDS:
        return None
    column = ColumnBase.from_cuda_array_interface(staging.to_device(data, device))
    if missing.any():
        column = _with_validity(column, ~staging.to_device(missing, device))
    if data.dtype.kind == "f" and null is not False:
        column = column.nans_to_nulls()
    # the dtype cuDF itself gives this pandas dtype (e.g. a pandas nullable dtype)
    target = as_column(series.iloc[:0], nan_as_null=null).dtype
    return column if column.dtype == target else column.astype(target)


def column_to_device(
    series: Any, label: Any, null: bool | None, context: Context, device: int
) -> Any:
    from cudf.core.column import as_column

    try:
        column = _fast_column(series, null, device)
        if column is not None:
            context.path = "pinned"
            return column
        return as_column(series, nan_as_null=null)
    except Exception as err:
        raise ColumnFailure(label, err, series.dtype) from err


def index_to_device(index: Any, null: bool | None, context: Context, device: int) -> Any:
    import cudf
    import pandas as pd

    if type(index) is pd.Index:
        try:
            column = _fast_column(pd.Series(index, copy=False), null, device)
        except Exception as err:
            raise ColumnFailure("<index>", err, index.dtype) from err
        if column is not None:
            context.path = "pinned"
            return cudf.Index._from_column(column, name=index.name)
    try:
        return cudf.from_pandas(index, nan_as_null=null)
    except Exception as err:
        raise ColumnFailure("<index>", err, getattr(index, "dtype", None)) from err


def pandas_to_cudf(obj: Any, context: Context) -> Any:
    import cudf
    import cupy
    import pandas as pd

    device = context.device if context.device is not None else staging.current_device()
    null = nan_as_null()
    with cupy.cuda.Device(device):
        if isinstance(obj, pd.DataFrame):
            columns = {
                i: column_to_device(series, label, null, context, device)
                for i, (label, series) in enumerate(obj.items())
            }
            index = index_to_device(obj.index, null, context, device)
            frame = cudf.DataFrame._from_data(
                columns,
                index,
                attrs=deepcopy(obj.attrs),
                allows_duplicate_labels=obj.flags.allows_duplicate_labels,
            )
            frame.columns = obj.columns
            return frame
        if isinstance(obj, pd.Series):
            column = column_to_device(obj, obj.name, null, context, device)
            index = index_to_device(obj.index, null, context, device)
            series = cudf.Series._from_column(column, name=obj.name, index=index)
            series.attrs = deepcopy(obj.attrs)
            return series
        return index_to_device(obj, null, context, device)


# -- device → host -------------------------------------------------------------------------------


def _fast_to_host(column: Any) -> Any | None:
    """The NumPy array ``column.to_pandas()`` holds, copied through the pinned pipeline, or None
    if this column should take cuDF's own path."""
    import numpy as np

    dtype = column.dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in "biufmM":
        return None
    if not staging.use_pinned(dtype.itemsize * len(column)):
        return None
    if column.has_nulls() and dtype.kind != "f":
        return None  # ints become float, bools object, datetimes NaT: cuDF's own path decides
    if dtype.kind in "mM":
        import cupy

        values = cupy.asarray(_Typed(column, "<i8"))  # CuPy has no datetime dtype
    else:
        values = column.values  # NaN where null, as to_pandas gives
    array = staging.to_host(values)
    return array if array.dtype == dtype else array.view(dtype)


def _column_to_host(column: Any, label: Any, context: Context) -> Any:
    """What ``column.to_pandas()`` holds, as an array (NumPy or pandas extension array).

    Arrays, not the ``pandas.Index`` cuDF returns: a DataFrame built from a dict of Index
    objects costs seconds per GiB in pandas 3, one built from arrays with ``copy=False`` nothing.
    """
    try:
        fast = _fast_to_host(column)
        if fast is not None:
            context.path = "pinned"
            return fast
        return column.to_pandas().array
    except Exception as err:
        raise ColumnFailure(label, err, column.dtype) from err


def _index_to_pandas(index: Any, context: Context) -> Any:
    import cudf
    import pandas as pd

    if type(index) is cudf.Index:
        values = _column_to_host(index._column, "<index>", context)
        return pd.Index(values, dtype=values.dtype, name=index.name, copy=False)
    return index.to_pandas()


def cudf_to_pandas(obj: Any, context: Context) -> Any:
    import cudf
    import pandas as pd

    if isinstance(obj, cudf.DataFrame):
        data = {
            i: _column_to_host(column, label, context)
            for i, (label, column) in enumerate(obj._data.items())
        }
        frame = pd.DataFrame(data, index=_index_to_pandas(obj.index, context), copy=False)
        frame.columns = obj._data.to_pandas_index
        frame.attrs = deepcopy(obj.attrs)
        frame.flags.allows_duplicate_labels = obj._flags.allows_duplicate_labels
        return frame
    if isinstance(obj, cudf.Series):
        series = pd.Series(
            _column_to_host(obj._column, obj.name, context),
            index=_index_to_pandas(obj.index, context),
            name=obj.name,
            copy=False,
        )
        series.attrs = obj.attrs
        series.flags.allows_duplicate_labels = obj._flags.allows_duplicate_labels
        return series
    return _index_to_pandas(obj, context)
