"""The private pandas and dask calls in ``compat`` on this machine's versions, and the failures
``convert/`` declines to raise, logged.

The cuDF functions of ``compat`` run in tests/gpu; the pandas and dask ones, and everything that
decides without a GPU, run here.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest

from gpudask_jupyter import compat, config
from gpudask_jupyter.convert import dask_collections, find
from gpudask_jupyter.convert.report import nbytes_of
from gpudask_jupyter.machine import nvml


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        (pd.array([1, None, 3], dtype="Int64"), "i"),
        (pd.array([1.5, None, 3.0], dtype="Float64"), "f"),
        (pd.array([True, None, False], dtype="boolean"), "b"),
    ],
)
def test_masked_parts_are_the_values_and_where_they_are_missing(values: Any, kind: str) -> None:
    parts = compat.masked_parts(values)
    assert parts is not None
    data, missing = parts
    assert isinstance(data, np.ndarray) and data.dtype.kind == kind
    assert missing.tolist() == [False, True, False]
    assert data[0] == values[0] and data[2] == values[2]


def test_masked_parts_of_other_arrays_is_none() -> None:
    assert compat.masked_parts(pd.Series([1.0, np.nan]).array) is None
    assert compat.masked_parts(pd.Series(["a", "b"], dtype="str").array) is None


def test_dask_collections_on_the_host_are_recognised_without_computing() -> None:
    dd = pytest.importorskip("dask.dataframe")
    da = pytest.importorskip("dask.array")
    frame = dd.from_pandas(pd.DataFrame({"a": np.arange(10)}), npartitions=2)
    array = da.from_array(np.arange(10.0), chunks=5)
    assert type(compat.dask_meta(frame)) is pd.DataFrame
    assert type(compat.dask_meta(array)) is np.ndarray
    assert compat.dask_meta(object()) is None
    assert dask_collections.is_dask_dataframe(frame) and not dask_collections.on_gpu(frame)
    assert dask_collections.is_dask_array(array) and not dask_collections.on_gpu(array)
    up = find(frame, "gpu")
    assert up is not None and up.source == "Dask DataFrame (pandas)" and up.lazy
    assert find(frame, "cpu") is None  # already on the host


def test_a_size_that_cannot_be_read_is_unknown_and_logged(caplog) -> None:
    class Broken:
        def memory_usage(self, index: bool, deep: bool) -> Any:
            raise RuntimeError("no size")

    with caplog.at_level(logging.DEBUG, logger="gpudask_jupyter.convert.report"):
        assert nbytes_of(Broken()) is None
    [record] = caplog.records
    assert record.exc_info is not None and "no size" in str(record.exc_info[1])


def test_a_failing_cuda_probe_is_a_reason_and_logged(caplog, monkeypatch) -> None:
    from gpudask_jupyter.machine import availability

    class Runtime:
        @staticmethod
        def getDeviceCount() -> int:
            raise RuntimeError("driver not loaded")

    fake = type(sys)("cupy")
    fake.cuda = type(sys)("cupy.cuda")  # type: ignore[attr-defined]
    fake.cuda.runtime = Runtime  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(availability.importlib.util, "find_spec", lambda name: object())
    config.set_override("nvml", False)  # NVML cannot tell: CUDA is asked
    nvml.reset()
    try:
        with caplog.at_level(logging.DEBUG, logger="gpudask_jupyter.machine.availability"):
            why = availability._check(())
    finally:
        config.clear_overrides()
        nvml.reset()
    assert why == "CUDA has no usable device (driver not loaded)"
    assert any(r.exc_info and "driver not loaded" in str(r.exc_info[1]) for r in caplog.records)


def test_free_memory_that_cannot_be_read_is_left_out_and_logged(caplog, monkeypatch) -> None:
    from gpudask_jupyter.convert import failures

    class Runtime:
        @staticmethod
        def getDevice() -> int:
            raise RuntimeError("no context")

    fake = type(sys)("cupy")
    fake.cuda = type(sys)("cupy.cuda")  # type: ignore[attr-defined]
    fake.cuda.runtime = Runtime  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with caplog.at_level(logging.DEBUG, logger="gpudask_jupyter.convert.failures"):
        assert failures._free_device_memory() == ""
    assert any(r.exc_info and "no context" in str(r.exc_info[1]) for r in caplog.records)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (MemoryError("std::bad_alloc: out_of_memory"), True),
        (RuntimeError("CUDA error: out of memory"), True),
        (RuntimeError("cudaErrorMemoryAllocation: Out of device memory"), True),
        (RuntimeError("RMM failure: out_of_memory"), True),
        (ValueError("the key is out of range"), False),
        (RuntimeError("memory is out of date"), False),
    ],
)
def test_one_rule_says_out_of_memory(error: BaseException, expected: bool) -> None:
    from gpudask_jupyter.errors import is_out_of_memory

    assert is_out_of_memory(error) is expected
