"""The counter-examples of the table-shape property tests, kept as explicit cases, and how a
test compares a table that came back with the one that went (CPU and GPU tiers alike)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from tables import Table

from gpudask_jupyter.errors import ConversionError

#: what a refusal must not look like: a library's exception passed through as it was raised
INTERNAL = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b|Traceback|object has no attribute")


def native(obj: Any) -> Any:
    """``obj`` with big-endian values in this machine's byte order."""
    if isinstance(obj, pd.DataFrame):
        out = obj.copy()
        for i, dtype in enumerate(obj.dtypes):
            if isinstance(dtype, np.dtype) and not dtype.isnative:
                out.isetitem(i, obj.iloc[:, i].astype(dtype.newbyteorder("=")))
        return out
    dtype = getattr(obj, "dtype", None)
    if isinstance(dtype, np.dtype) and not dtype.isnative:
        return obj.astype(dtype.newbyteorder("="))
    return obj


def assert_same(got: Any, want: Any, attrs: bool = True) -> None:
    """Equal as the libraries compare: values exactly, dtypes, labels and index types, and
    (``attrs``) attrs."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_array_equal(got, want)
        return
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want, check_exact=True, check_freq=False)
    else:
        pd.testing.assert_series_equal(got, want, check_exact=True, check_freq=False)
    if attrs:
        assert got.attrs == want.attrs


def assert_refusal(err: ConversionError, name: str) -> None:
    """One sentence: it names the variable, then what it is about and why, and no exception."""
    message = str(err)
    assert message.startswith(f"{name}: "), message
    assert "\n" not in message, message
    assert not INTERNAL.search(message), message
    assert re.search(r"column|label|index|it holds|dtype|array", err.cause), message


# -- the counter-examples found so far, kept as explicit cases --------------------------------


def _frame(columns: dict[Any, Any], labels: list[Any], **attrs: Any) -> Table:
    frame = pd.DataFrame(dict(enumerate(columns.values())))
    frame.columns = labels
    frame.attrs.update(attrs)
    return Table(frame, f"{list(columns)} labelled {labels!r}")


#: gathering back a frame whose labels repeat failed inside the byte-order step
REPEATED = _frame({"int": np.arange(12), "more": np.arange(12) * 2, "f": 1.5}, ["a", "a", "b"])
#: dask's meta of such a frame took one Arrow column's dtype for every column of that label
REPEATED_ARROW = _frame(
    {
        "double": pd.array([1.0, None, 2.0, 3.0], dtype="double[pyarrow]"),
        "big-endian": np.arange(4, dtype=">i2"),
        "nullable": pd.array([1, None, 3, 4], dtype="Int16"),
    },
    [1, 1, "a b"],
    source="survey",
)
#: Dask's compute cannot join partitions with repeated labels and a categorical column
REPEATED_CATEGORICAL = _frame(
    {"int": np.arange(4), "cat": pd.Categorical(list("abab"), ordered=True), "x": np.ones(4)},
    ["x", "y", "x"],
)
#: a big-endian column whose label is NaN
NAN_LABEL = _frame({"f": np.arange(5, dtype=">f4"), "t": np.arange(5).astype("M8[ns]")}, [None, 0])


# found on a GPU (tests/gpu/test_table_shapes_gpu.py), kept for the CPU too
#: a big-endian array spread onto a GPU worker failed in CuPy ("Unsupported dtype >f8")
BIG_ENDIAN = Table(np.arange(8, dtype=">f8"), "array >f8 of shape (8,)")
#: a list column cuDF cannot take that way ("list_view type not supported") read as RuntimeError
LISTS = Table(
    pd.Series(
        pd.array([], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
        index=pd.MultiIndex.from_arrays([[], []], names=[None, "level"]),
        name=0,
    ),
    "series of 0 rows, list<int64> (arrow), name 0, index multi",
)
#: the same beside other columns, spread: the worker's PartitionError carried RuntimeError
MIXED = Table(
    pd.DataFrame(
        {
            0: np.arange(7, dtype=">f4"),
            1: pd.array(
                [[1], None, [], [2, 3], [4], [5], [6]], dtype=pd.ArrowDtype(pa.list_(pa.int64()))
            ),
            2: pd.date_range("2024-01-01", periods=7, tz="Europe/Paris"),
            3: pd.Series(["a", None, "b", "", "c", "d", "e"], dtype=object),
        },
        index=pd.Index(np.linspace(0, 1, 7)),
    ).set_axis([None, True, ("x", 1), "a"], axis=1),
    "frame of 7 rows, ['>f4', 'list<int64> (arrow)', 'datetime64[ns, Europe/Paris]', "
    "'object strings'], columns [None, True, ('x', 1), 'a'], index float",
)
