"""String columns as their Arrow buffers, on the host side of both directions (no GPU needed).

Host→device takes each Arrow chunk's offsets, characters and validity bits as views of its own
buffers (a slice starts its offsets past 0); device→host wraps arrived buffers as a pandas string
array without a copy. Taking a chunk apart and putting it back together must give the same
strings, for every kind of chunk a pandas 3 column can hold. The device half is in
tests/gpu/test_convert_gpu.py.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from gpudask_jupyter.convert import arrow_columns, dataframes

WORDS = ["alpha", "", None, "héllo wörld", "日本語テキスト", "x" * 300, "🚀", None, "b"]


def chunks() -> dict[str, pa.Array]:
    words = WORDS * 7  # 63 rows: a validity bitmap that ends mid-byte
    plain = pa.array(words, type=pa.large_string())
    return {
        "large_string": plain,
        "string (32-bit offsets)": pa.array(words, type=pa.string()),
        "no nulls": pa.array([w or "" for w in words], type=pa.large_string()),
        "all null": pa.array([None] * 20, type=pa.large_string()),
        "all empty": pa.array([""] * 20, type=pa.large_string()),
        "slice at 8": plain.slice(8, 40),
        "slice at 16 to the end": plain.slice(16),
        "slice without nulls at 3": pa.array([w or "" for w in words], pa.large_string()).slice(3),
        "one row": plain.slice(3, 1),
    }


@pytest.mark.parametrize("name", list(chunks()))
def test_a_chunk_taken_apart_and_put_together_gives_the_same_strings(name: str) -> None:
    chunk = chunks()[name]
    found = arrow_columns.string_buffers(chunk)
    assert found.size == len(chunk) and found.nulls == chunk.null_count
    assert len(found.offsets) == len(chunk) + 1
    assert found.chars.size == found.offsets[-1] - found.first
    if found.mask is not None:
        assert found.mask.size % 64 == 0 and found.mask.size >= math.ceil(len(chunk) / 8)
    # what the device holds: offsets from 0 (64-bit, as pandas keeps them), the characters
    offsets = (found.offsets - found.first).astype(np.int64)
    dtype = pd.StringDtype("pyarrow", na_value=np.nan)
    back = arrow_columns.pandas_strings(
        found.size, found.nulls, offsets, found.chars, found.mask, dtype
    )
    expected = pd.array(chunk.to_pylist(), dtype=dtype)
    pd.testing.assert_extension_array_equal(back, expected)
    assert back.dtype == pd.Series(["a"]).dtype  # pandas 3's default string dtype


def test_the_host_side_makes_no_copy_of_offsets_characters_or_the_result() -> None:
    chunk = chunks()["slice at 8"]
    _, offsets_buffer, characters = chunk.buffers()
    found = arrow_columns.string_buffers(chunk)
    assert np.shares_memory(found.offsets, np.frombuffer(offsets_buffer, np.uint8))
    assert np.shares_memory(found.chars, np.frombuffer(characters, np.uint8))
    offsets = (found.offsets - found.first).astype(np.int64)
    back = arrow_columns.pandas_strings(
        found.size, found.nulls, offsets, found.chars, found.mask, pd.Series(["a"]).dtype
    )
    arrived = back.__arrow_array__().chunk(0).buffers()[2]
    assert np.shares_memory(np.frombuffer(arrived, np.uint8), found.chars)


def test_every_chunk_of_a_concatenated_column_is_taken_as_it_is() -> None:
    parts = [pd.Series(WORDS[i:], dtype="str") for i in range(4)]
    column = pd.concat(parts, ignore_index=True)
    chunked = column.array.__arrow_array__()
    assert chunked.num_chunks == 4
    rebuilt: list[object] = []
    for chunk in chunked.chunks:
        found = arrow_columns.string_buffers(chunk)
        offsets = (found.offsets - found.first).astype(np.int64)
        rebuilt.extend(
            arrow_columns.pandas_strings(
                found.size, found.nulls, offsets, found.chars, found.mask, column.dtype
            )
        )
    pd.testing.assert_series_equal(pd.Series(rebuilt, dtype="str"), column)


def test_a_slice_whose_validity_bits_start_mid_byte_is_refused() -> None:
    with pytest.raises(ValueError, match="start on a byte"):
        arrow_columns.string_buffers(chunks()["large_string"].slice(3))


def test_a_large_object_column_is_named_in_the_report_with_the_way_to_avoid_it() -> None:
    objects = pd.Series(["a", "b"] * 1_100_000, dtype=object)  # 17.6 MB of pointers
    note = dataframes._object_column_note("city", objects)
    assert note is not None and "'city'" in note and ".astype('str')" in note
    assert dataframes._object_column_note("city", objects.astype("str")) is None
    assert dataframes._object_column_note("small", objects[:10]) is None
    assert dataframes._object_column_note("<index>", objects) is None
    from decimal import Decimal

    decimals = pd.Series([Decimal(1)] * 2_200_000, dtype=object)
    assert dataframes._object_column_note("money", decimals) is None  # no advice that changes it
