"""String and categorical columns through the pinned ring, as the buffers they are made of.

pandas 3 keeps a string column in Arrow buffers (64-bit offsets, the characters, a validity
bitmap), and cuDF keeps one in buffers of the same layout on the device (offsets, characters,
a null mask with the same bit order). So a string column needs no conversion at all, only its
buffers moved: they cross in the frame's pinned batch like any numeric column, and the column is
assembled from them on the other side. cuDF's own path, by contrast, goes through Arrow's
pageable copy and, device→host, through a host-side cast of the offsets.

A categorical column is its codes (fixed-width integers, -1 for null in pandas, a null mask in
cuDF) plus its categories: the codes cross in the batch, the categories (small, and of any type)
take cuDF's own path.

What is left to cuDF's own path, and why: string columns of object dtype (Python objects, not
buffers; the report says so and how to avoid it), strings kept in Python storage, a slice whose
validity bits do not start on a byte, categoricals with float categories device→host (cuDF maps
NaN categories to missing codes on the host).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import compat
from .pinned import staging

Finish = Callable[[], Any]
MAX_INT32 = 2**31 - 1


def _arrow_strings(values: Any) -> Any | None:
    """The Arrow data (a ChunkedArray) of a pandas string array kept in Arrow, else None."""
    if not arrow_string_dtype(values.dtype):
        return None
    return values.__arrow_array__()  # the array's own ChunkedArray: no copy


def arrow_string_dtype(dtype: Any) -> bool:
    """pandas' string dtype kept in Arrow (pandas 3's default; "pyarrow_numpy" in pandas 2)."""
    import pandas as pd

    return isinstance(dtype, pd.StringDtype) and dtype.storage in ("pyarrow", "pyarrow_numpy")


def mask_bytes(size: int) -> int:
    """Bytes cuDF allocates for the null mask of ``size`` rows (64-byte padded words)."""
    return math.ceil(math.ceil(size / 8) / 64) * 64


@dataclass(frozen=True)
class StringBuffers:
    """One Arrow string chunk as host arrays, views of its own buffers (the mask excepted).

    ``offsets`` are the chunk's ``size + 1`` offsets as stored, so they start at ``first``, not
    necessarily 0 (a slice); ``chars`` are the characters they point into, from ``first`` on;
    ``mask`` is the validity bitmap padded as cuDF allocates it, or None without nulls.
    """

    size: int
    nulls: int
    offsets: Any
    chars: Any
    mask: Any
    first: int


def string_buffers(chunk: Any, realign: bool = False) -> StringBuffers:
    """The buffers of an Arrow string or large_string array. Validity bits that do not start on
    a byte (``chunk.offset % 8``) are made afresh with ``realign`` (a pass over the rows), and
    refused otherwise."""
    import numpy as np
    import pyarrow as pa

    size, start, nulls = len(chunk), chunk.offset, chunk.null_count
    if nulls and start % 8 and not realign:
        raise ValueError("validity bits must start on a byte")
    validity, offsets_buffer, characters = chunk.buffers()
    wide = pa.types.is_large_string(chunk.type)
    offsets = np.frombuffer(offsets_buffer, np.int64 if wide else np.int32, size + 1 + start)
    offsets = offsets[start:]
    first, last = int(offsets[0]), int(offsets[-1])
    chars = np.frombuffer(characters, np.uint8, last)[first:] if last else np.empty(0, np.uint8)
    mask: Any = None
    if nulls:
        mask = np.zeros(mask_bytes(size), np.uint8)
        used = math.ceil(size / 8)
        if start % 8:
            valid = chunk.is_valid().to_numpy(zero_copy_only=False)
            mask[:used] = np.packbits(valid, bitorder="little")
        else:
            mask[:used] = np.frombuffer(validity, np.uint8, start // 8 + used)[start // 8 :]
    return StringBuffers(size, nulls, offsets, chars, mask, first)


def pandas_strings(size: int, nulls: int, offsets: Any, chars: Any, mask: Any, dtype: Any) -> Any:
    """The pandas string array of ``dtype`` (Arrow storage) over host buffers, without a copy:
    ``offsets`` int64 or int32, pointing into ``chars``; ``mask`` the validity bitmap or None."""
    import pyarrow as pa

    kind = pa.LargeStringArray if offsets.dtype.itemsize == 8 else pa.StringArray
    validity = pa.py_buffer(mask) if mask is not None else None
    array = kind.from_buffers(size, pa.py_buffer(offsets), pa.py_buffer(chars), validity, nulls)
    return dtype.__from_arrow__(array)


def strings_plc(size: int, nulls: int, offsets: Any, chars: Any, mask: Any, first: int) -> Any:
    """The pylibcudf string column over device buffers as :func:`string_buffers` describes them
    (``offsets`` starting at ``first``; ``chars`` None or empty when every string is empty)."""
    import numpy as np

    fitted = offsets - first if first else offsets
    span = 0 if chars is None else chars.size
    if fitted.dtype.itemsize == 8 and span <= MAX_INT32:
        fitted = fitted.astype(np.int32)  # cuDF's own width below 2 GiB of characters
    return compat.string_plc_column(size, chars if span else None, fitted, mask, nulls)


def _queue_chunk(chunk: Any, batch: staging.Batch) -> Callable[[], Any]:
    """Queue one Arrow string chunk's buffers on ``batch``; what builds its pylibcudf column."""
    found = string_buffers(chunk)
    dev_offsets = batch.device_array(found.offsets)
    dev_chars = batch.device_array(found.chars) if found.chars.size else None
    dev_mask = batch.device_array(found.mask) if found.mask is not None else None
    return lambda: strings_plc(
        found.size, found.nulls, dev_offsets, dev_chars, dev_mask, found.first
    )


def strings_to_device(series: Any, null: bool | None, batch: staging.Batch) -> Finish | None:
    """Queue a pandas string column's Arrow buffers on ``batch``; what builds the cuDF column
    (the dtype ``cudf.from_pandas`` gives it) once they have arrived. None: cuDF's own path.

    A column of several Arrow chunks (``pd.concat`` makes them) is built chunk by chunk and
    concatenated on the device, so it briefly needs twice its size there."""
    chunked = _arrow_strings(series.array)
    if chunked is None:
        return None
    nbytes = chunked.nbytes
    if not staging.use_pinned(nbytes):
        return None
    chunks = [chunk for chunk in chunked.chunks if len(chunk)]
    if not chunks or any(chunk.null_count and chunk.offset % 8 for chunk in chunks):
        return None  # validity bits not on a byte boundary: cuDF's own path realigns them
    target = compat.as_column(series.iloc[:0], null).dtype
    builds = [_queue_chunk(chunk, batch) for chunk in chunks]

    def finish() -> Any:
        pieces = [build() for build in builds]
        return compat.column_from_plc(compat.concatenate_plc(pieces), target)

    return finish


def categorical_to_device(series: Any, null: bool | None, batch: staging.Batch) -> Finish | None:
    """Queue a pandas categorical's codes on ``batch``; what builds the cuDF column (its
    categories converted by cuDF itself) once they have arrived. None: cuDF's own path."""
    import pandas as pd

    if not isinstance(series.dtype, pd.CategoricalDtype):
        return None
    codes = series.array.codes  # pandas' own codes array: -1 where missing
    if not staging.use_pinned(codes.nbytes):
        return None
    # the dtype cuDF gives this column: the categories on the device, the width of the codes
    target = compat.as_column(series.iloc[:0], null).dtype
    dev = batch.device_array(codes)
    return lambda: categorical_column(dev, target)


def categorical_column(codes: Any, target: Any) -> Any:
    """The cuDF categorical column of dtype ``target`` over pandas' codes on the device (-1
    where missing)."""
    valid = codes != -1
    unsigned = codes.astype(compat.categorical_codes_dtype(target))
    column = compat.column_from_plc(compat.plc_of(compat.column_from_device(unsigned)), target)
    if not bool(valid.all()):
        column = compat.with_validity(column, valid)
    return column


def to_device(series: Any, null: bool | None, batch: staging.Batch) -> Finish | None:
    """The string or categorical column's way across in ``batch``, or None."""
    if not compat.builds_from_plc():
        return None
    return strings_to_device(series, null, batch) or categorical_to_device(series, null, batch)


# -- device → host -------------------------------------------------------------------------------


def device_strings(column: Any) -> tuple[int, int, Any, Any, Any] | None:
    """(rows, null count, offsets, the characters up to the last offset, mask or None) of a cuDF
    string column that ``to_pandas`` makes pandas' Arrow strings, as CuPy arrays over its own
    device memory; None: cuDF's own path (another dtype, a slice, characters without device
    memory behind them)."""
    if not arrow_string_dtype(column.dtype):
        return None
    parts = compat.string_parts(column)
    if parts is None:
        return None
    size, nulls, offsets, chars, mask = parts
    last = int(offsets[-1]) if size else 0
    if last > chars.size:
        return None  # characters without device memory behind them: cuDF's path knows why
    return size, nulls, offsets, chars[:last], mask


def strings_to_host(column: Any, batch: staging.Batch) -> Finish | None:
    """Queue a cuDF string column's buffers on ``batch``; what gives the pandas array
    ``column.to_pandas()`` holds, wrapping the arrived buffers without a copy. None: cuDF's
    own path (a dtype other than pandas' Arrow strings, a slice, too small)."""
    import numpy as np

    found = device_strings(column)
    if found is None:
        return None
    size, nulls, offsets, chars, mask = found
    if not staging.use_pinned(chars.size + 8 * (size + 1)):
        return None
    widened = offsets.dtype.itemsize != 8  # pandas keeps 64-bit offsets (large_string)
    host_offsets = batch.host_array(
        offsets.astype(np.int64) if widened else offsets, temporary=widened
    )
    host_chars = batch.host_array(chars) if chars.size else np.empty(0, np.uint8)
    host_mask = batch.host_array(mask[: math.ceil(size / 8)]) if nulls else None
    dtype = column.dtype
    return lambda: pandas_strings(size, nulls, host_offsets, host_chars, host_mask, dtype)


def pandas_codes(
    column: Any, worth: Callable[[int], bool] = lambda nbytes: True
) -> tuple[Any, Any] | None:
    """(pandas' signed codes of a cuDF categorical column, -1 where missing, as a CuPy array; the
    ``pandas.CategoricalDtype`` ``column.to_pandas()`` gives), or None: cuDF's own path (float
    categories, null categories, or ``worth`` false of its codes' bytes, asked before any work)."""
    import numpy as np
    import pandas as pd

    parts = compat.categorical_parts(column)
    if parts is None:
        return None
    codes, categories_kind, count = parts
    if categories_kind == "f" or not worth(codes.dtype.itemsize * len(codes)):
        return None  # float categories: cuDF maps NaN categories to missing codes on the host
    # the dtype cuDF's own conversion gives (its categories moved by cuDF), from an empty slice
    pandas_dtype = compat.column_to_pandas(compat.column_slice(column, 0, 0)).dtype
    if len(pandas_dtype.categories) != count:
        return None  # cuDF drops null categories on the host, and the codes would not match
    signed = pd.Categorical.from_codes(np.empty(0, np.int8), dtype=pandas_dtype).codes.dtype
    filled = compat.column_values(compat.column_fillna(compat.column_astype(codes, signed), -1))
    return filled, pandas_dtype


def categorical_to_host(column: Any, batch: staging.Batch) -> Finish | None:
    """Queue a cuDF categorical's codes (as pandas' signed codes, -1 for null) on ``batch``;
    what gives the ``pandas.Categorical`` of ``column.to_pandas()``. None: cuDF's own path."""
    import pandas as pd

    found = pandas_codes(column, staging.use_pinned)
    if found is None:
        return None
    filled, pandas_dtype = found
    host = batch.host_array(filled, temporary=True)
    return lambda: pd.Categorical.from_codes(host, dtype=pandas_dtype, validate=False)


def to_host(column: Any, batch: staging.Batch) -> Finish | None:
    """The string or categorical column's way across in ``batch``, or None."""
    if not compat.builds_from_plc():
        return None
    return strings_to_host(column, batch) or categorical_to_host(column, batch)
