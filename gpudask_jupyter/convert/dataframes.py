"""pandas ↔ cuDF, column by column, equal to ``cudf.from_pandas`` / ``.to_pandas()``.

The frame is rebuilt the way cuDF's own constructors build it (a column per pandas column, the
index, then the labels, attrs and flags), so labels, MultiIndex columns and metadata come out as
cuDF makes them. What changes is how the bytes of each large numeric, boolean, datetime,
timedelta, string or categorical column (and its validity mask) reach the device: through the
pinned pipeline instead of a pageable copy (strings and categoricals as their buffers, see
:mod:`.arrow_columns`). Every other column (object dtype, time zones, nested types, ...) takes
cuDF's own path, which goes through Arrow. Each column's failure is reported with its label.

cuDF's columns and the constructors that take them are internal to cuDF: every such call goes
through :mod:`gpudask_jupyter.compat`, which says what it relies on and the versions checked.
"""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from functools import partial
from typing import Any

from .. import compat
from . import arrow_columns
from .arrow_columns import Finish
from .converter import Context
from .failures import ColumnFailure
from .pinned import staging

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


class _Crossing:
    """The columns of one object on their way across, in one pinned batch.

    ``plan`` queues a column's bytes on the batch and returns what builds the column once they
    have arrived, or None; a column it declines takes the library's own path (``own_path``)
    while the batch is in flight. Each failure names its column.
    """

    def __init__(
        self,
        batch: staging.Batch,
        plan: Callable[[Any, staging.Batch], Finish | None],
        own_path: Callable[[Any], Any],
        context: Context,
        note: Callable[[Any, Any], str | None] = lambda label, source: None,
    ) -> None:
        self.batch, self.context = batch, context
        self._plan, self._own_path, self._note = plan, own_path, note
        # (label, source, Finish | None, what to call instead when it does not take the batch)
        self._pending: list[tuple[Any, Any, Finish | None, Finish]] = []

    def add(self, label: Any, source: Any, own_path: Finish | None = None) -> int:
        try:
            finish = self._plan(source, self.batch)
        except Exception as err:
            raise ColumnFailure(label, err, source.dtype) from err
        if finish is None and (note := self._note(label, source)) is not None:
            self.context.notes.append(note)
        if own_path is None:
            own_path = partial(self._own_path, source)
        self._pending.append((label, source, finish, own_path))
        return len(self._pending) - 1

    def build(self) -> list[Any]:
        """The columns, the pinned ones once the whole batch has crossed. Building each as soon
        as its own bytes have landed, while later ones still copy, is slower: cuDF frees device
        memory as it builds, and a ``cudaFree`` waits for the whole device, copies included."""
        built: list[Any] = [None] * len(self._pending)
        with self.batch.running():
            for i, (label, source, finish, own_path) in enumerate(self._pending):
                if finish is None:
                    try:
                        built[i] = own_path()
                    except Exception as err:
                        raise ColumnFailure(label, err, source.dtype) from err
        for i, (label, source, finish, _) in enumerate(self._pending):
            if finish is not None:
                self.context.path = "pinned"
                try:
                    built[i] = finish()
                except Exception as err:
                    raise ColumnFailure(label, err, source.dtype) from err
        return built


def device_kind(dtype: Any) -> bool:
    """Whether a column of this NumPy dtype is built from its raw bytes on the device (by
    :func:`device_column`); other columns take cuDF's own path or :mod:`.arrow_columns`."""
    import numpy as np

    if not isinstance(dtype, np.dtype) or not dtype.isnative:
        return False
    if dtype.kind in _FAST_KINDS:
        return not (dtype.kind == "f" and dtype.itemsize == 2)  # float16: cuDF's own error
    return dtype.kind in "mM" and np.datetime_data(dtype)[0] in _TIME_UNITS


def device_column(dtype: Any, dev: Any, null: bool | None) -> Any:
    """The cuDF column ``cudf.from_pandas`` makes of a column of ``dtype`` whose bytes are the
    CuPy array ``dev`` (int64 for datetimes and timedeltas, whose NaT becomes null).

    NaN and NaT become nulls, which takes a scan of the column; cuDF's own scans allocate a
    mask as large as the column and free it again, a visible share of a large frame's crossing.
    One reduction first says whether there is anything to find at all: a float sum is
    NaN only if a value is NaN (or both infinities occur; then cuDF's own scan decides), and NaT
    is the smallest int64, so a minimum equal to it means a NaT is there.
    """
    import cupy
    import numpy as np

    if dtype.kind not in "mM":
        if dtype.kind == "f" and null is not False and dev.size and not cupy.isnan(dev.sum()):
            null = False  # no NaN: nothing for cuDF's scan to turn into nulls
        return compat.as_column(dev, null)
    column = compat.column_from_device(_Typed(dev, dtype.str))
    nat = np.iinfo(np.int64).min  # NaT, which cuDF keeps as null
    if dev.size and int(dev.min()) == nat:
        column = compat.with_validity(column, dev != nat)
    return column


def _plan_column(series: Any, null: bool | None, batch: staging.Batch) -> Finish | None:
    """Queue this column's bytes on ``batch`` and return what builds the cuDF column once they
    have arrived, or None if the column should take cuDF's own path."""
    import numpy as np

    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        if not device_kind(dtype) or not staging.use_pinned(dtype.itemsize * len(series)):
            return None
        host = series.to_numpy(copy=False)
        dev = batch.device_array(host.view(np.int64) if dtype.kind in "mM" else host)
        return lambda: device_column(dtype, dev, null)
    finish = arrow_columns.to_device(series, null, batch)
    if finish is not None:
        return finish
    parts = compat.masked_parts(series.array)
    if parts is None:
        return None
    data, missing = parts
    if not staging.use_pinned(data.nbytes) or data.dtype.kind not in _FAST_KINDS:
        return None
    values = batch.device_array(data)
    invalid = batch.device_array(missing) if missing.any() else None
    # the dtype cuDF itself gives this pandas dtype (e.g. a pandas nullable dtype)
    return lambda: masked_column(
        values, invalid, null, compat.as_column(series.iloc[:0], null).dtype
    )


def masked_column(values: Any, invalid: Any, null: bool | None, target: Any) -> Any:
    """The cuDF column of dtype ``target`` of a pandas masked array's values and mask (True
    where missing, or None) on the device."""
    column = compat.column_from_device(values)
    if invalid is not None:
        column = compat.with_validity(column, ~invalid)
    if values.dtype.kind == "f" and null is not False:
        column = compat.nans_to_nulls(column)
    return column if column.dtype == target else compat.column_astype(column, target)


def _object_column_note(label: Any, series: Any) -> str | None:
    """What the report says of a large column of Python strings (dtype object): it took cuDF's
    own (slower) path, and how to give it the fast one. Other object columns (Decimals, mixed)
    and the index get no advice: converting them would change the data."""
    import numpy as np
    import pandas as pd

    if label == "<index>" or series.dtype != np.dtype(object):
        return None
    if not staging.use_pinned(8 * len(series)):
        return None
    # a sample decides: cuDF's own path infers the whole column's type again anyway, and fails
    # (so no note is shown) if later values are not strings
    if pd.api.types.infer_dtype(series.iloc[:1000], skipna=True) != "string":
        return None
    # pandas 3's "str" is Arrow-backed; in pandas 2 that is "string[pyarrow]"
    arrow = "'str'" if int(pd.__version__.split(".")[0]) >= 3 else "'string[pyarrow]'"
    return (
        f"column {label!r} holds Python objects (dtype object) and took cuDF's own path; "
        f"as .astype({arrow}) its strings cross as Arrow buffers through the pinned path"
    )


def _index_to_device(
    index: Any, columns: _Crossing, null: bool | None
) -> Callable[[list[Any]], Any]:
    """Queue a plain index with the columns; what turns the built columns into the cuDF index."""
    import cudf
    import pandas as pd

    if type(index) is pd.Index:
        position = columns.add(
            "<index>",
            pd.Series(index, copy=False),
            lambda: cudf.from_pandas(index, nan_as_null=null),
        )

        def plain(built: list[Any]) -> Any:
            value = built[position]
            if isinstance(value, cudf.Index):  # it took cuDF's own path
                return value
            return compat.index_from_column(value, index.name)

        return plain
    try:
        converted = cudf.from_pandas(index, nan_as_null=null)
    except Exception as err:
        raise ColumnFailure("<index>", err, getattr(index, "dtype", None)) from err
    return lambda built: converted


def pandas_to_cudf(obj: Any, context: Context) -> Any:
    import cupy
    import pandas as pd

    null = nan_as_null()
    device = context.device if context.device is not None else staging.current_device()
    columns = _Crossing(
        staging.Batch(to_device=True, device=device),
        lambda series, batch: _plan_column(series, null, batch),
        lambda series: compat.as_column(series, null),
        context,
        _object_column_note,
    )
    with cupy.cuda.Device(device):
        if isinstance(obj, pd.DataFrame):
            positions = [columns.add(label, series) for label, series in obj.items()]
            index = _index_to_device(obj.index, columns, null)
            built = columns.build()
            frame = compat.frame_from_columns(
                {i: built[p] for i, p in enumerate(positions)},
                index(built),
                deepcopy(obj.attrs),
                obj.flags.allows_duplicate_labels,
            )
            frame.columns = obj.columns
            return frame
        if isinstance(obj, pd.Series):
            position = columns.add(obj.name, obj)
            index = _index_to_device(obj.index, columns, null)
            built = columns.build()
            series = compat.series_from_column(built[position], obj.name, index(built))
            series.attrs = deepcopy(obj.attrs)
            return series
        index = _index_to_device(obj, columns, null)
        return index(columns.build())


# -- device → host -------------------------------------------------------------------------------


def host_values(column: Any) -> Any:
    """The CuPy array whose bytes are those of the NumPy array ``column.to_pandas()`` holds (as
    int64 for datetimes and timedeltas), or None when cuDF's own path decides what comes back:
    ints with nulls become float, bools object, datetimes NaT."""
    import numpy as np

    dtype = column.dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in "biufmM":
        return None
    if compat.column_has_nulls(column) and dtype.kind != "f":
        return None
    if dtype.kind in "mM":
        import cupy

        return cupy.asarray(_Typed(column, "<i8"))  # CuPy has no datetime dtype
    return compat.column_values(column)  # NaN where null, as to_pandas gives


def _plan_to_host(column: Any, batch: staging.Batch) -> Finish | None:
    """Queue the bytes of the NumPy array ``column.to_pandas()`` holds on ``batch`` and return what
    gives that array once they have arrived, or None if this column should take cuDF's own path.

    Arrays, not the ``pandas.Index`` cuDF returns: a DataFrame built from a dict of Index objects
    costs seconds per GiB in pandas 3, one built from arrays with ``copy=False`` nothing.
    """
    import numpy as np

    dtype = column.dtype
    if not isinstance(dtype, np.dtype):
        return arrow_columns.to_host(column, batch)
    if not staging.use_pinned(dtype.itemsize * len(column)):
        return None
    values = host_values(column)
    if values is None:
        return None
    array = batch.host_array(values, temporary=compat.column_has_nulls(column))
    typed = array if array.dtype == dtype else array.view(dtype)
    return lambda: typed


def _own_path_to_host(column: Any) -> Any:
    """The column through cuDF's own ``to_pandas``, as what a frame is built from without a
    copy: its array, or for Python objects the Index itself (pandas 3 would infer strings from
    an object array, slowly, and give another dtype than ``to_pandas``)."""
    values = compat.column_to_pandas(column)
    return values if values.dtype == object else values.array


def _index_to_host(index: Any, columns: _Crossing) -> Callable[[list[Any]], Any]:
    import cudf
    import pandas as pd

    if type(index) is cudf.Index:
        position = columns.add("<index>", compat.column_of(index))

        def plain(built: list[Any]) -> Any:
            values = built[position]
            return pd.Index(values, dtype=values.dtype, name=index.name, copy=False)

        return plain
    try:
        converted = index.to_pandas()
    except Exception as err:
        raise ColumnFailure("<index>", err, getattr(index, "dtype", None)) from err
    return lambda built: converted


def cudf_to_pandas(obj: Any, context: Context) -> Any:
    import cudf
    import pandas as pd

    columns = _Crossing(staging.Batch(to_device=False), _plan_to_host, _own_path_to_host, context)
    if isinstance(obj, cudf.DataFrame):
        positions = [columns.add(label, column) for label, column in compat.frame_columns(obj)]
        index = _index_to_host(obj.index, columns)
        built = columns.build()
        data = {i: built[p] for i, p in enumerate(positions)}
        frame = pd.DataFrame(data, index=index(built), copy=False)
        frame.columns = compat.frame_labels(obj)
        frame.attrs = deepcopy(obj.attrs)
        frame.flags.allows_duplicate_labels = compat.allows_duplicate_labels(obj)
        return frame
    if isinstance(obj, cudf.Series):
        position = columns.add(obj.name, compat.column_of(obj))
        index = _index_to_host(obj.index, columns)
        built = columns.build()
        series = pd.Series(built[position], index=index(built), name=obj.name, copy=False)
        series.attrs = obj.attrs
        series.flags.allows_duplicate_labels = compat.allows_duplicate_labels(obj)
        return series
    index = _index_to_host(obj, columns)
    return index(columns.build())
