"""Hypothesis strategies for the shapes real tables take: every dtype pandas and NumPy hold, with
the labels, indexes and gaps that break code written for the tidy case.

A column is drawn from :data:`KINDS` (numeric of each width and byte order, bool, nullable,
categorical with and without order, strings of each storage and as Python objects, datetime with
and without a zone, timedelta, period, interval, decimal, Arrow and sparse columns, mixed
objects), its values through Hypothesis' NumPy strategies where NumPy holds them, with NaN, NaT and
None wherever the dtype has a missing value. A frame adds duplicate and non-string column labels,
MultiIndex columns and rows, indexes of every kind, attrs and zero rows or zero columns.

Each drawn object also carries how it was built (:attr:`Table.recipe`), so a failure names the
shape in words before Hypothesis prints its counter-example.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

#: rows of a drawn frame: enough for several partitions of one or two rows, and for none
MAX_ROWS = 9
TIME_UNITS = ("s", "ms", "us", "ns")
ZONES = ("UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata")
#: a day's worth of nanoseconds keeps every unit's values inside its range
_SPAN = 10**9 * 86_400 * 365 * 50


@dataclass(frozen=True)
class Kind:
    """One kind of column: a name for reports and a strategy for ``n`` rows of it."""

    name: str
    values: Callable[[int], st.SearchStrategy[Any]]


def _numpy(dtype: Any, nan: bool = True) -> Callable[[int], st.SearchStrategy[Any]]:
    dtype = np.dtype(dtype)

    def values(n: int) -> st.SearchStrategy[Any]:
        kwargs: dict[str, Any] = {}
        if dtype.kind in "fc":
            kwargs = {"allow_nan": nan, "allow_infinity": True}
        return hnp.arrays(dtype, n, elements=hnp.from_dtype(dtype, **kwargs))

    return values


def _with_missing(
    n: int, element: st.SearchStrategy[Any], build: Callable[[list[Any]], Any]
) -> st.SearchStrategy[Any]:
    return st.lists(st.one_of(st.none(), element), min_size=n, max_size=n).map(build)


def _nullable(dtype: str, element: st.SearchStrategy[Any]) -> Callable[[int], Any]:
    return lambda n: _with_missing(n, element, lambda v: pd.array(v, dtype=dtype))


_TEXT = st.text(max_size=6)  # unicode, empty strings included; never a lone surrogate


def _strings(dtype: Any) -> Callable[[int], Any]:
    return lambda n: _with_missing(n, _TEXT, lambda v: pd.array(v, dtype=dtype))


def _object_strings(n: int) -> st.SearchStrategy[Any]:
    return _with_missing(n, _TEXT, lambda v: np.array(v, dtype=object))


def _mixed_objects(n: int) -> st.SearchStrategy[Any]:
    element = st.one_of(st.integers(-5, 5), _TEXT, st.floats(allow_nan=False))
    return st.lists(element, min_size=n, max_size=n).map(lambda v: np.array(v, dtype=object))


def _categorical(ordered: bool, element: st.SearchStrategy[Any]) -> Callable[[int], Any]:
    def values(n: int) -> st.SearchStrategy[Any]:
        categories = st.lists(element, min_size=1, max_size=4, unique=True)

        @st.composite
        def draw(draw: Any) -> Any:
            cats = draw(categories)
            picks = draw(
                st.lists(st.one_of(st.none(), st.sampled_from(cats)), min_size=n, max_size=n)
            )
            return pd.Categorical(picks, categories=cats, ordered=ordered)

        return draw()

    return values


def _times(kind: str, unit: str, zone: str | None = None) -> Callable[[int], Any]:
    def build(raw: list[int | None]) -> Any:
        step = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
        values = np.array([-(2**63) if v is None else v // step for v in raw], dtype="int64")
        array = values.view(f"{'M8' if kind == 'datetime' else 'm8'}[{unit}]")
        if zone is None:
            return array
        return pd.array(array, dtype=f"datetime64[{unit}]").tz_localize("UTC").tz_convert(zone)

    return lambda n: _with_missing(n, st.integers(-_SPAN, _SPAN), build)


def _periods(n: int) -> st.SearchStrategy[Any]:
    def build(raw: list[int | None]) -> Any:
        return pd.array(
            [pd.NaT if v is None else pd.Period(ordinal=v, freq="D") for v in raw],
            dtype="period[D]",
        )

    return _with_missing(n, st.integers(-10_000, 30_000), build)


def _intervals(closed: str) -> Callable[[int], Any]:
    def build(raw: list[int | None]) -> Any:
        left = [np.nan if v is None else float(v) for v in raw]
        right = [np.nan if v is None else float(v) + 1.5 for v in raw]
        return pd.arrays.IntervalArray.from_arrays(left, right, closed=closed)

    return lambda n: _with_missing(n, st.integers(-100, 100), build)


def _decimals(n: int) -> st.SearchStrategy[Any]:
    element = st.decimals(min_value=-(10**6), max_value=10**6, places=2, allow_nan=False)
    return _with_missing(
        n, element, lambda v: pd.array(v, dtype=pd.ArrowDtype(pa.decimal128(10, 2)))
    )


def _object_decimals(n: int) -> st.SearchStrategy[Any]:
    element = st.decimals(min_value=-100, max_value=100, places=3, allow_nan=False)
    return _with_missing(n, element, lambda v: np.array(v, dtype=object))


def _arrow(kind: Any, element: st.SearchStrategy[Any]) -> Callable[[int], Any]:
    return lambda n: _with_missing(n, element, lambda v: pd.array(v, dtype=pd.ArrowDtype(kind)))


def _sparse(n: int) -> st.SearchStrategy[Any]:
    element = st.sampled_from([0.0, 0.0, 1.5, np.nan])
    return st.lists(element, min_size=n, max_size=n).map(
        lambda v: pd.arrays.SparseArray(v, fill_value=0.0)
    )


_INTS = st.integers(-(2**31), 2**31 - 1)

KINDS: list[Kind] = [
    *(Kind(d, _numpy(d)) for d in ("int8", "int16", "int32", "int64")),
    *(Kind(d, _numpy(d)) for d in ("uint8", "uint16", "uint32", "uint64")),
    *(Kind(d, _numpy(d)) for d in ("float16", "float32", "float64")),
    *(Kind(d, _numpy(d)) for d in ("complex64", "complex128")),
    *(Kind(d, _numpy(d)) for d in (">i2", ">i8", ">u4", ">f4", ">f8")),
    Kind("bool", _numpy("bool")),
    *(Kind(d, _nullable(d, st.integers(-100, 100))) for d in ("Int8", "Int16", "Int32")),
    Kind("Int64", _nullable("Int64", st.integers(-(2**62), 2**62))),
    Kind("UInt8", _nullable("UInt8", st.integers(0, 255))),
    Kind("UInt64", _nullable("UInt64", st.integers(0, 2**63))),
    Kind("Float32", _nullable("Float32", st.floats(width=32, allow_nan=False))),
    Kind("Float64", _nullable("Float64", st.floats(allow_nan=False))),
    Kind("boolean", _nullable("boolean", st.booleans())),
    Kind("category", _categorical(False, _TEXT)),
    Kind("category (ordered)", _categorical(True, _TEXT)),
    Kind("category of int", _categorical(False, st.integers(-50, 50))),
    Kind("str", _strings("str")),
    Kind("string[python]", _strings(pd.StringDtype("python"))),
    Kind("string[pyarrow]", _strings(pd.StringDtype("pyarrow"))),
    Kind("object strings", _object_strings),
    Kind("mixed objects", _mixed_objects),
    *(Kind(f"datetime64[{u}]", _times("datetime", u)) for u in TIME_UNITS),
    *(Kind(f"datetime64[ns, {z}]", _times("datetime", "ns", z)) for z in ZONES[:2]),
    Kind(f"datetime64[us, {ZONES[2]}]", _times("datetime", "us", ZONES[2])),
    *(Kind(f"timedelta64[{u}]", _times("timedelta", u)) for u in TIME_UNITS),
    Kind("period[D]", _periods),
    Kind("interval (right)", _intervals("right")),
    Kind("interval (both)", _intervals("both")),
    Kind("decimal128(10, 2)", _decimals),
    Kind("object decimals", _object_decimals),
    Kind("int64[pyarrow]", _arrow(pa.int64(), _INTS)),
    Kind("double[pyarrow]", _arrow(pa.float64(), st.floats(allow_nan=False))),
    Kind("bool[pyarrow]", _arrow(pa.bool_(), st.booleans())),
    Kind("string (arrow)", _arrow(pa.string(), _TEXT)),
    Kind("list<int64> (arrow)", _arrow(pa.list_(pa.int64()), st.lists(_INTS, max_size=3))),
    Kind("Sparse[float64]", _sparse),
]
KIND_NAMES = [kind.name for kind in KINDS]

#: column labels, drawn with repeats: duplicates, numbers, None, tuples and non-ASCII
LABELS = ["a", "b", "a b", "é", "", 0, 1, 2.5, None, True, ("x", 1)]


@dataclass
class Table:
    """A drawn object and the recipe it was built from."""

    obj: Any
    recipe: str

    def __repr__(self) -> str:  # what Hypothesis prints for a counter-example
        return f"Table({self.recipe}):\n{self.obj!r}"


def _index(draw: Any, n: int) -> tuple[Any, str]:
    kind = draw(
        st.sampled_from(
            [
                "default",
                "range",
                "int",
                "unsorted int",
                "str",
                "datetime",
                "datetime tz",
                "float",
                "multi",
                "categorical",
            ]
        )
    )
    name = draw(st.sampled_from([None, None, "idx", 0]))
    if kind == "default":
        return pd.RangeIndex(n), kind
    if kind == "range":
        start, step = draw(st.integers(-5, 5)), draw(st.sampled_from([1, 2, -1, 3]))
        return pd.RangeIndex(start, start + step * n, step, name=name), kind
    if kind == "int":
        return pd.Index(np.arange(n, dtype="int64") * 10, name=name), kind
    if kind == "unsorted int":
        values = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
        return pd.Index(np.array(values, dtype="int64"), name=name), kind
    if kind == "str":
        return pd.Index(draw(st.lists(_TEXT, min_size=n, max_size=n)), name=name), kind
    if kind == "datetime":
        return pd.date_range("2024-01-01", periods=n, freq="h", name=name), kind
    if kind == "datetime tz":
        return pd.date_range("2024-01-01", periods=n, freq="D", tz=ZONES[1], name=name), kind
    if kind == "float":
        return pd.Index(np.linspace(0, 1, n), name=name), kind
    if kind == "categorical":
        return pd.CategoricalIndex((["p", "q"] * n)[:n], name=name), kind
    first = draw(st.lists(st.sampled_from(["u", "v"]), min_size=n, max_size=n))
    return pd.MultiIndex.from_arrays([first, np.arange(n)], names=[name, "level"]), kind


def _labels(draw: Any, count: int) -> tuple[Any, str]:
    if count and draw(st.integers(0, 5)) == 0:
        tuples = [(draw(st.sampled_from(["p", "q"])), i % 2) for i in range(count)]
        return pd.MultiIndex.from_tuples(tuples), "MultiIndex columns"
    labels = draw(st.lists(st.sampled_from(LABELS), min_size=count, max_size=count))
    return labels, f"columns {labels!r}"


@st.composite
def frames(
    draw: Any, kinds: list[Kind] | None = None, max_columns: int = 4, max_rows: int = MAX_ROWS
) -> Table:
    """A pandas DataFrame of columns drawn from ``kinds`` (default: every kind)."""
    n = draw(st.integers(0, max_rows))
    count = draw(st.integers(0, max_columns))
    chosen = draw(st.lists(st.sampled_from(kinds or KINDS), min_size=count, max_size=count))
    columns = [draw(kind.values(n)) for kind in chosen]
    labels, said = _labels(draw, count)
    index, index_kind = _index(draw, n)
    frame = pd.DataFrame({i: column for i, column in enumerate(columns)}, index=index)
    frame.columns = labels if count else frame.columns
    attrs = draw(st.sampled_from([{}, {"source": "survey", "version": 2}]))
    frame.attrs.update(attrs)
    recipe = f"frame of {n} rows, {[k.name for k in chosen]}, {said}, index {index_kind}" + (
        ", attrs" if attrs else ""
    )
    return Table(frame, recipe)


@st.composite
def series(draw: Any, kinds: list[Kind] | None = None, max_rows: int = MAX_ROWS) -> Table:
    """A pandas Series of one kind, with a name drawn from the labels."""
    n = draw(st.integers(0, max_rows))
    kind = draw(st.sampled_from(kinds or KINDS))
    index, index_kind = _index(draw, n)
    name = draw(st.sampled_from(LABELS))
    values = pd.Series(draw(kind.values(n)), index=index, name=name)
    return Table(values, f"series of {n} rows, {kind.name}, name {name!r}, index {index_kind}")


def array_dtypes() -> st.SearchStrategy[Any]:
    """Every NumPy dtype an array holds: scalars of each width, byte order and time unit,
    strings, bytes and Python objects."""
    return st.one_of(
        hnp.scalar_dtypes(),
        hnp.integer_dtypes(endianness=">"),
        hnp.floating_dtypes(endianness=">"),
        hnp.unicode_string_dtypes(max_len=4),
        hnp.byte_string_dtypes(max_len=4),
        st.just(np.dtype(object)),
    )


@st.composite
def arrays(draw: Any, max_rows: int = MAX_ROWS) -> Table:
    """A NumPy array of one or two dimensions (zero rows included) of any dtype."""
    dtype = draw(array_dtypes())
    shape = draw(
        st.one_of(
            st.tuples(st.integers(0, max_rows)),
            st.tuples(st.integers(0, max_rows), st.integers(1, 3)),
        )
    )
    if dtype.kind == "O":
        flat = draw(
            st.lists(
                st.one_of(st.none(), st.integers(), _TEXT),
                min_size=int(np.prod(shape)),
                max_size=int(np.prod(shape)),
            )
        )
        array = np.empty(shape, dtype=object)
        array.reshape(-1)[:] = flat
    else:
        array = draw(hnp.arrays(dtype, shape))
    return Table(array, f"array {dtype.str} of shape {shape}")


def tables(kinds: list[Kind] | None = None) -> st.SearchStrategy[Table]:
    """A frame, a series or an array."""
    return st.one_of(frames(kinds), series(kinds), arrays())


#: examples per property test: CI's bounded run, and the longer one for a GPU machine
PROFILES = {"ci": 60, "long": 300}


def load_profile(name: str) -> None:
    """Register the profiles and load ``name``: no deadline (a transfer's first run starts
    threads and workers), every health check but the ones a module-wide cluster trips."""
    from hypothesis import HealthCheck, settings

    for profile, examples in PROFILES.items():
        settings.register_profile(
            profile,
            max_examples=examples,
            deadline=None,
            print_blob=True,
            suppress_health_check=[
                HealthCheck.function_scoped_fixture,  # the runtime directory, per test
                HealthCheck.too_slow,  # each example moves data through real workers
                HealthCheck.filter_too_much,  # shapes Dask itself cannot make are set aside
                HealthCheck.data_too_large,
            ],
        )
    settings.load_profile(name)
