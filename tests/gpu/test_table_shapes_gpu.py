"""Any table pandas or NumPy can hold crosses to the GPU and comes back as cuDF and CuPy make
it, or is refused up front in one sentence: the property tests of tests/cpu/test_table_shapes.py,
with cuDF and CuPy themselves as the reference.

For each drawn frame, series or array:

- ``%%to_gpu`` (``to_gpu``) equals ``cudf.from_pandas`` / ``cupy.asarray``, and ``%%to_cpu``
  gives back what ``.to_pandas()`` / ``.get()`` give; where the library itself refuses the
  object, so do we, in a sentence naming the variable and the column;
- ``--distribute`` onto a GPU worker computes as ``cudf.from_pandas`` of the object, and
  ``--gather`` gives back what ``.to_pandas()`` of that gives.

Run on a GPU machine with the longer profile: ``GPUDASK_HYPOTHESIS_PROFILE=long pytest -m gpu
tests/gpu/test_table_shapes_gpu.py`` (the seed is printed in the header).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from support import held_keys
from table_cases import (
    BIG_ENDIAN,
    LISTS,
    MIXED,
    REPEATED,
    REPEATED_ARROW,
    assert_refusal,
    assert_same,
    native,
)
from tables import Table, tables

from gpudask_jupyter import to_cpu, to_gpu
from gpudask_jupyter.errors import ConversionError

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.timeout(3600),
    pytest.mark.filterwarnings("ignore:Do not use the `random` module"),
]

cudf = pytest.importorskip("cudf")
cupy = pytest.importorskip("cupy")


def _reference(obj: Any) -> tuple[Any, Exception | None]:
    """What the library makes of ``obj`` on the GPU, or what it raised. CuPy has no byte
    order: a big-endian array is compared with its native twin."""
    try:
        if isinstance(obj, np.ndarray):
            return cupy.asarray(native(obj)), None
        return cudf.from_pandas(obj), None
    except Exception as err:
        return None, err


def _same_on_gpu(got: Any, want: Any) -> None:
    """The same type, dtypes and index type on the device, the same values seen from the host
    (cuDF's own ``testing`` cannot compare list, decimal or categorical-index columns)."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, cupy.ndarray):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        cupy.testing.assert_array_equal(got, want)
        return
    if isinstance(want, cudf.DataFrame):
        assert list(got.dtypes) == list(want.dtypes)
    else:
        assert got.dtype == want.dtype
    assert type(got.index) is type(want.index)
    assert_same(got.to_pandas(), want.to_pandas())


def _to_host(obj: Any) -> Any:
    return obj.get() if isinstance(obj, cupy.ndarray) else obj.to_pandas()


@given(table=tables())
@example(table=BIG_ENDIAN)
@example(table=LISTS)
@example(table=MIXED)
def test_to_gpu_and_back_is_what_cudf_and_cupy_make(table: Table) -> None:
    want, refused = _reference(table.obj)
    try:
        got = to_gpu(table.obj, require_gpu=True)
    except ConversionError as err:
        assert_refusal(err, "argument")
        return
    assert refused is None, f"the library refuses it ({refused!r}); we moved it"
    _same_on_gpu(got, want)
    assert_same(to_cpu(got), _to_host(want))


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    with (
        LocalCUDACluster(n_workers=1, host="127.0.0.1", dashboard_address="127.0.0.1:0") as c,
        Client(c) as client,
    ):
        yield client


@given(table=tables(), npartitions=st.sampled_from([None, 1, 2, 3]))
@example(table=BIG_ENDIAN, npartitions=2)
@example(table=LISTS, npartitions=None)
@example(table=MIXED, npartitions=3)
def test_spread_onto_a_gpu_worker_and_gathered_is_what_cudf_makes(
    client: Any, table: Table, npartitions: int | None
) -> None:
    want, refused = _reference(table.obj)
    try:
        collection = to_gpu(table.obj, distribute=True, npartitions=npartitions)
    except ConversionError as err:
        assert_refusal(err, "argument")
        assert held_keys(client) == 0, "a refused spread left partitions on the workers"
        return
    try:
        assert refused is None, f"the library refuses it ({refused!r}); we spread it"
        # Dask's join of cuDF partitions keeps no attrs, whoever made the partitions
        assert_same(_to_host(collection.compute()), _to_host(want), attrs=False)
        assert_same(to_cpu(collection, gather=True), _to_host(want))
    finally:
        del collection
    assert held_keys(client) == 0


@pytest.mark.parametrize("table", [REPEATED, REPEATED_ARROW], ids=["ints", "arrow"])
def test_repeated_labels_are_refused_for_cudf_in_words(client: Any, table: Table) -> None:
    with pytest.raises(ConversionError) as refused:
        to_gpu(table.obj, require_gpu=True)
    assert "occur more than once, and cuDF needs each column's label to be unique" in str(
        refused.value
    )
    with pytest.raises(ConversionError):
        to_gpu(table.obj, distribute=True)
    assert held_keys(client) == 0


@pytest.mark.parametrize(
    "values",
    [
        np.arange(3, dtype="complex64"),
        np.arange(3, dtype="float16"),
        pd.period_range("2024-01-01", periods=3, freq="D"),
        pd.arrays.SparseArray([0.0, 1.5, 0.0]),
    ],
    ids=["complex", "float16", "period", "sparse"],
)
def test_what_is_refused_up_front_cudf_itself_refuses(values: Any) -> None:
    """The up-front refusals (convert/refusals.py) say only what cuDF says itself."""
    frame = pd.DataFrame({"c": values})
    with pytest.raises(Exception):  # noqa: B017, PT011 - whichever cuDF raises
        cudf.from_pandas(frame)
    with pytest.raises(ConversionError, match="column 'c' holds"):
        to_gpu(frame, require_gpu=True)
