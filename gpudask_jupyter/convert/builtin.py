"""The converters that ship with the package, most specific first.

A new converter (say, polars ↔ cuDF) goes in this list; :mod:`.lookup` reads it. The libraries
are imported only inside the conversion functions, when there is something to convert.
"""

from __future__ import annotations

import sys
from typing import Any

from ..machine.availability import reason
from . import dask_collections, refusals
from .converter import Context, Converter, module_class


def _is_proxy(obj: Any) -> bool:
    """A cudf.pandas proxy: cudf.pandas decides itself where it lives; never convert it twice."""
    proxies = sys.modules.get("cudf.pandas")
    return proxies is not None and bool(proxies.is_proxy_object(obj))


_PROXY = "a cudf.pandas object: cudf.pandas already decides where it lives"


def _keep(obj: Any, context: Context) -> Any:
    return obj


def _not_proxy(predicate: Any) -> Any:
    return lambda obj: not _is_proxy(obj) and predicate(obj)


def _numpy_to_cupy(obj: Any, context: Context) -> Any:
    # lazy: the movers, and the pinned staging under them, come with the first conversion
    from .arrays import numpy_to_cupy

    return numpy_to_cupy(obj, context)


def _cupy_to_numpy(obj: Any, context: Context) -> Any:
    # lazy: the movers, and the pinned staging under them, come with the first conversion
    from .arrays import cupy_to_numpy

    return cupy_to_numpy(obj, context)


def _pandas_to_cudf(obj: Any, context: Context) -> Any:
    # lazy: the movers, and the pinned staging under them, come with the first conversion
    from .dataframes import pandas_to_cudf

    return pandas_to_cudf(obj, context)


def _cudf_to_pandas(obj: Any, context: Context) -> Any:
    # lazy: the movers, and the pinned staging under them, come with the first conversion
    from .dataframes import cudf_to_pandas

    return cudf_to_pandas(obj, context)


_is_pandas = _not_proxy(module_class("pandas", "DataFrame", "Series", "Index"))
_is_numpy = module_class("numpy", "ndarray")


def _gpu_dask_dataframe(obj: Any) -> bool:
    return dask_collections.is_dask_dataframe(obj) and not dask_collections.on_gpu(obj)


def _cpu_dask_dataframe(obj: Any) -> bool:
    return dask_collections.is_dask_dataframe(obj) and dask_collections.on_gpu(obj)


def _gpu_dask_array(obj: Any) -> bool:
    return dask_collections.is_dask_array(obj) and not dask_collections.on_gpu(obj)


def _cpu_dask_array(obj: Any) -> bool:
    return dask_collections.is_dask_array(obj) and dask_collections.on_gpu(obj)


CONVERTERS = [
    Converter("cudf.pandas proxy", "", "gpu", _is_proxy, _keep, skip=_PROXY),
    Converter("cudf.pandas proxy", "", "cpu", _is_proxy, _keep, skip=_PROXY),
    Converter(
        "pandas",
        "cuDF",
        "gpu",
        _is_pandas,
        _pandas_to_cudf,
        lambda: reason("cudf"),
        refuse=refusals.for_cudf,
    ),
    Converter(
        "NumPy",
        "CuPy",
        "gpu",
        _is_numpy,
        _numpy_to_cupy,
        lambda: reason(),
        refuse=refusals.for_cupy,
    ),
    Converter(
        "cuDF",
        "pandas",
        "cpu",
        module_class("cudf", "DataFrame", "Series", "Index"),
        _cudf_to_pandas,
    ),
    Converter("CuPy", "NumPy", "cpu", module_class("cupy", "ndarray"), _cupy_to_numpy),
    Converter(
        "Dask DataFrame (pandas)",
        "Dask DataFrame (cuDF)",
        "gpu",
        _gpu_dask_dataframe,
        dask_collections.dataframe_to_gpu,
        lambda: reason("cudf", "dask_cudf"),
        lazy=True,
    ),
    Converter(
        "Dask DataFrame (cuDF)",
        "Dask DataFrame (pandas)",
        "cpu",
        _cpu_dask_dataframe,
        dask_collections.dataframe_to_cpu,
        lazy=True,
    ),
    Converter(
        "Dask Array (NumPy)",
        "Dask Array (CuPy)",
        "gpu",
        _gpu_dask_array,
        dask_collections.array_to_gpu,
        lambda: reason(),
        lazy=True,
    ),
    Converter(
        "Dask Array (CuPy)",
        "Dask Array (NumPy)",
        "cpu",
        _cpu_dask_array,
        dask_collections.array_to_cpu,
        lazy=True,
    ),
]
