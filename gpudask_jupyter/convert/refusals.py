"""What a target cannot hold, said before anything moves.

A transfer that fails half-way is undone (:mod:`.transaction`), but a shape the target library
cannot hold at all is known from the object's dtypes and labels alone: checking it first means
no GPU memory is taken, no partition is placed, and the sentence names the column and the
reason instead of repeating what the library raised from deep inside. Each function returns an
:class:`~.failures.Unsupported` (cause and hint) or None; the callers raise it.

Only what is certain is refused here: what the libraries refuse for any data. Whatever depends
on the values (a column of mixed Python objects) is still found by the library during the move
and reported for its column (:mod:`.failures`).
"""

from __future__ import annotations

from typing import Any

from .failures import Unsupported

#: NumPy kinds CuPy holds: booleans and numbers
CUPY_KINDS = frozenset("biufc")


def _frame_of(obj: Any) -> Any | None:
    """``obj`` as a pandas DataFrame, or None when it is no pandas frame or series."""
    import sys

    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    if isinstance(obj, pd.Series):
        return obj.to_frame()
    return obj if isinstance(obj, pd.DataFrame) else None


def _repeated(frame: Any) -> list[Any]:
    """The column labels of ``frame`` that occur more than once, each once, in order."""
    labels = frame.columns
    return list(dict.fromkeys(label for label in labels[labels.duplicated()]))


def _labels(labels: list[Any]) -> str:
    return ", ".join(repr(label) for label in labels[:3]) + (" ..." if len(labels) > 3 else "")


def for_cupy(obj: Any) -> Unsupported | None:
    """A NumPy array CuPy cannot hold (strings, bytes, Python objects, datetimes...)."""
    dtype = getattr(obj, "dtype", None)
    if dtype is None or dtype.kind in CUPY_KINDS:
        return None
    return Unsupported(
        f"NumPy arrays of dtype {dtype} cannot live on the GPU (CuPy holds numbers and "
        "booleans only)",
        "convert it to a numeric dtype",
    )


def _cudf_dtype(dtype: Any) -> str | None:
    """Why cuDF cannot hold a column of ``dtype`` whatever its values, or None."""
    import numpy as np
    import pandas as pd

    if isinstance(dtype, np.dtype):
        if dtype.kind == "c":
            return "complex numbers, which cuDF has no type for"
        if dtype.kind == "f" and dtype.itemsize == 2:
            return "16-bit floats, which cuDF has no type for"
        return None
    if isinstance(dtype, pd.PeriodDtype):
        return "periods, which cuDF has no type for"
    if isinstance(dtype, pd.SparseDtype):
        return "a sparse array, which cuDF has no type for"
    return None


def _fix(dtype: Any) -> str:
    import pandas as pd

    if isinstance(dtype, pd.PeriodDtype):
        return "convert it (e.g. .dt.to_timestamp())"
    if isinstance(dtype, pd.SparseDtype):
        return "make it dense (e.g. .sparse.to_dense())"
    return "cast it (e.g. .astype('float64'))"


def for_cudf(obj: Any) -> Unsupported | None:
    """A pandas frame or series cuDF cannot hold: repeated column labels (cuDF keys its
    columns by label), or a column or index of a dtype cuDF has no type for."""
    frame = _frame_of(obj)
    if frame is None:
        return None
    repeated = _repeated(frame)
    if repeated:
        return Unsupported(
            f"column label(s) {_labels(repeated)} occur more than once, and cuDF needs each "
            "column's label to be unique",
            "rename the columns (e.g. df.columns = [...])",
        )
    series = obj if frame is not obj else None
    for position, dtype in enumerate(frame.dtypes):
        why = _cudf_dtype(dtype)
        if why is not None:
            where = "it" if series is not None else f"column {frame.columns[position]!r}"
            return Unsupported(f"{where} holds {why} (dtype {dtype})", _fix(dtype))
    for level in range(frame.index.nlevels):
        values = frame.index.get_level_values(level) if frame.index.nlevels > 1 else frame.index
        why = _cudf_dtype(values.dtype)
        if why is not None:
            return Unsupported(f"its index holds {why} (dtype {values.dtype})", _fix(values.dtype))
    return None


def for_dask(obj: Any) -> Unsupported | None:
    """A pandas frame a Dask DataFrame cannot hold in several partitions: repeated column
    labels beside a categorical column, which Dask's own join of partitions (``compute``)
    cannot align (dask 2026.8)."""
    import pandas as pd

    frame = _frame_of(obj)
    if frame is None or frame is not obj:
        return None
    repeated = _repeated(frame)
    categorical = [
        frame.columns[i]
        for i, dtype in enumerate(frame.dtypes)
        if isinstance(dtype, pd.CategoricalDtype)
    ]
    if not repeated or not categorical:
        return None
    return Unsupported(
        f"column label(s) {_labels(repeated)} occur more than once and column "
        f"{categorical[0]!r} is categorical: Dask cannot join the partitions of such a frame "
        "(its compute fails)",
        "rename the columns (e.g. df.columns = [...])",
    )
