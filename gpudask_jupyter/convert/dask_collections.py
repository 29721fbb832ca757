"""Dask collections: switch the backend of each partition, lazily (no compute is triggered).

A Dask DataFrame becomes cuDF-backed (dask_cudf registers the "cudf" backend), a Dask Array
CuPy-backed; and back. Only the task graph changes, so the report shows no bytes or speed.
"""

from __future__ import annotations

import sys
from typing import Any

from .. import compat
from .converter import Context


def _meta_module(obj: Any) -> str:
    return type(compat.dask_meta(obj)).__module__.split(".")[0]


def is_dask_dataframe(obj: Any) -> bool:
    dd = sys.modules.get("dask.dataframe")
    if dd is None:
        return False
    kinds = tuple(k for k in (getattr(dd, n, None) for n in ("DataFrame", "Series", "Index")) if k)
    return isinstance(obj, kinds)


def is_dask_array(obj: Any) -> bool:
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(obj, da.Array)


def on_gpu(obj: Any) -> bool:
    return _meta_module(obj) in {"cudf", "cupy"}


def dataframe_to_gpu(obj: Any, context: Context) -> Any:
    return obj.to_backend("cudf")


def dataframe_to_cpu(obj: Any, context: Context) -> Any:
    return obj.to_backend("pandas")


def array_to_gpu(obj: Any, context: Context) -> Any:
    return obj.to_backend("cupy")


def array_to_cpu(obj: Any, context: Context) -> Any:
    return obj.to_backend("numpy")
