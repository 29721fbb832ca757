"""Columns that cross ``--distribute`` and ``--gather`` as several fixed-width buffers.

A string column is not fixed-width, but pandas 3 keeps it in Arrow buffers (offsets, the
characters, a validity bitmap) and cuDF keeps one in buffers of the same layout on the device.
A categorical is its codes plus its categories; a nullable integer, float or boolean column
(pandas' masked arrays) is its values plus a mask. So each of these crosses as its buffers,
through shared memory or straight into the worker's GPU memory like any numeric column, and
is assembled from them on the other side without a conversion: no pickling, no copy by Dask.
Only what a small :class:`Coded` says travels with the partition's layout (the dtype, which
for a categorical holds its categories, and where a slice's offsets start).

String buffers are the partition's own, not rows of the whole object: a gathered string column
is the Arrow chunks of its partitions, one after the other (pandas keeps a chunked column as
it is). Codes, values and masks are rows, stacked like numeric columns.

What still goes as the partition's "rest" (Dask's own transfer), and why, is said per column by
:func:`why_rest`: Python objects (dtype object), strings kept in Python storage, Arrow types
other than strings, time zones, intervals, periods, sparse columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ... import compat
from .. import arrow_columns

STRINGS = "strings"
CATEGORICAL = "categorical"
MASKED = "masked"


@dataclass(frozen=True)
class Coded:
    """A column made of the layout's ``slots``: strings (offsets, characters[, mask]),
    categorical (codes, -1 where missing), masked (values, True where missing).

    ``nulls`` and ``first`` (the value a slice's offsets start at) belong to one partition and
    are left out of equality: two partitions whose columns are equal stack."""

    kind: str
    slots: tuple[int, ...]
    dtype: Any  # the pandas dtype the column is rebuilt as
    nulls: int = 0
    first: int = 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Coded):
            return NotImplemented
        return (self.kind, self.slots, self.dtype) == (other.kind, other.slots, other.dtype)

    def __hash__(self) -> int:
        return hash((self.kind, self.slots))

    @property
    def stacks(self) -> bool:
        """Whether its slots are rows that stack across partitions (not a string's buffers)."""
        return self.kind != STRINGS


def string_arrays(values: Any) -> tuple[list[Any], int, int]:
    """(offsets, characters[, mask] as NumPy arrays, null count, first offset) of a pandas
    Arrow string array: views of its own buffers (the mask excepted, padded as cuDF wants it).
    Several chunks are made one first (a copy)."""
    import numpy as np
    import pyarrow as pa

    chunks = [chunk for chunk in values.__arrow_array__().chunks if len(chunk)]
    if not chunks:
        return [np.zeros(1, np.int64), np.empty(0, np.uint8)], 0, 0
    chunk = chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)
    found = arrow_columns.string_buffers(chunk, realign=True)
    arrays = [found.offsets, found.chars]
    if found.mask is not None:
        arrays.append(found.mask)
    return arrays, found.nulls, found.first


def rebased(offsets: Any, first: int) -> Any:
    """A slice's offsets made to start at 0: a copy (8 bytes a row), never a write into them,
    which may be the user's own buffers."""
    return offsets - first if first else offsets


def joined_strings(pieces: list[Any], dtype: Any) -> Any:
    """One pandas string array of ``dtype`` from the partitions' string arrays, as the Arrow
    chunks they are (no copy; chunks with 32-bit offsets have them widened, as pandas keeps)."""
    import pyarrow as pa

    chunks = [chunk for piece in pieces for chunk in piece.__arrow_array__().chunks]
    wide = pa.large_string()
    chunks = [c if c.type == wide else c.cast(wide) for c in chunks]
    return dtype.__from_arrow__(pa.chunked_array(chunks, type=wide))


def split_column(series: Any, first_slot: int) -> tuple[Coded, list[Any]] | None:
    """The column as a :class:`Coded` whose slots start at ``first_slot``, and their arrays;
    None when it goes with the rest."""
    import numpy as np
    import pandas as pd

    dtype = series.dtype
    if arrow_columns.arrow_string_dtype(dtype):
        arrays, nulls, first = string_arrays(series.array)
        slots = tuple(range(first_slot, first_slot + len(arrays)))
        return Coded(STRINGS, slots, dtype, nulls, first), arrays
    if isinstance(dtype, pd.CategoricalDtype):
        codes = series.array.codes  # pandas' own array: -1 where missing
        return Coded(CATEGORICAL, (first_slot,), dtype), [codes]
    parts = compat.masked_parts(series.array)
    if parts is not None and parts[0].dtype.isnative and parts[0].dtype.kind in "biuf":
        values, missing = parts
        nulls = int(np.count_nonzero(missing))
        return Coded(MASKED, (first_slot, first_slot + 1), dtype, nulls), [values, missing]
    return None


def rebuild_column(coded: Coded, rows: int, arrays: Sequence[Any] | Mapping[int, Any]) -> Any:
    """The pandas array of one partition's coded column from its slots' arrays (no copy)."""
    import pandas as pd

    mine = [arrays[slot] for slot in coded.slots]
    if coded.kind == STRINGS:
        offsets, chars, mask = rebased(mine[0], coded.first), mine[1], (mine[2:] or [None])[0]
        return arrow_columns.pandas_strings(rows, coded.nulls, offsets, chars, mask, coded.dtype)
    if coded.kind == CATEGORICAL:
        return pd.Categorical.from_codes(mine[0], dtype=coded.dtype, validate=False)
    values, missing = mine
    return coded.dtype.construct_array_type()(values, missing, copy=False)


def why_rest(sample: Any) -> str:
    """Why a column goes with the rest (Dask's own transfer), in a few words, from a sample of
    its first rows (which says whether Python objects are strings, the one case with advice)."""
    import numpy as np
    import pandas as pd

    dtype = sample.dtype
    if isinstance(dtype, np.dtype):
        if dtype == np.dtype(object):
            if pd.api.types.infer_dtype(sample, skipna=True) == "string":
                return "Python strings (dtype object; .astype('str') gives the fast route)"
            return "Python objects (dtype object)"
        if not dtype.isnative:
            return "not in this machine's byte order"
        return f"dtype {dtype} has no raw form here"
    if isinstance(dtype, pd.StringDtype):
        return f"strings kept in {dtype.storage} storage"
    if isinstance(dtype, pd.DatetimeTZDtype):
        return "a time zone"
    return f"dtype {dtype}"
