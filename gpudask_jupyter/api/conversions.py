"""Moving objects between host and GPU from Python: ``to_gpu`` and ``to_cpu``, what %%to_gpu and
%%to_cpu do to one object.

``to_gpu(obj)`` / ``to_cpu(obj)`` convert one object (:func:`..convert.convert_names` converts
several variables of a namespace as one transaction). Objects no converter knows are returned
unchanged.
``to_gpu(obj, distribute=True)`` spreads a pandas / NumPy object over the cluster's workers as a
persisted Dask collection, ``to_cpu(obj, gather=True)`` brings one back
(:func:`..convert.distribute.variables.distribute_names`,
:func:`..convert.distribute.variables.gather_names`).
Without a usable GPU the data stays on the host and the user is told once, unless a GPU is
required, which makes it an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import config
from ..convert.arguments import check_to_cpu, check_to_gpu
from ..convert.notices import warn_unavailable
from ..convert.transaction import convert_names


def _one(obj: Any, convert: Callable[..., Any], require_gpu: bool | None, **options: Any) -> Any:
    """A transaction on a namespace of one name, ``argument``: what the functions share with
    the magics. ``convert`` is :func:`convert_names` or one of
    :mod:`..convert.distribute.variables`'s."""
    namespace = {"argument": obj}
    _, unavailable = convert(
        namespace,
        ["argument"],
        require_gpu=config.require_gpu(require_gpu),
        required_by="require_gpu=True" if require_gpu else "the require-gpu option",
        leave_on_host="keep it on the host",
        **options,
    )
    warn_unavailable(unavailable, 3)
    return namespace["argument"]


def to_gpu(
    obj: Any,
    *,
    # size: most of the length is the numpydoc reference that help(to_gpu) shows
    device: int | None = None,
    require_gpu: bool | None = None,
    distribute: bool = False,
    npartitions: int | None = None,
    client: Any = None,
) -> Any:
    """pandas → cuDF, NumPy → CuPy, Dask DataFrame/Array → cuDF/CuPy-backed (lazily).

    The function behind ``%%to_gpu``. Equal to ``cudf.from_pandas`` / ``cupy.asarray``; large
    numeric data moves through pinned memory. Other objects are returned unchanged. Without a
    usable GPU (or without CuPy / cuDF) the object is returned unchanged too, and a
    :class:`~gpudask_jupyter.convert.GpuUnavailableWarning` says why, once per reason, unless a
    GPU is required.

    Parameters
    ----------
    obj : object
        A pandas ``DataFrame``, ``Series`` or ``Index``, a NumPy array, or a Dask DataFrame or
        Array. Anything else is returned as it is.
    device : int, optional
        The GPU to copy onto, by index as CUDA numbers them in this process (default: the
        current device). Not with ``distribute``.
    require_gpu : bool, optional
        True: raise :class:`~gpudask_jupyter.errors.NoGpuError` instead of leaving the data on
        the host when no GPU is usable. Default: the ``require-gpu`` option (False).
    distribute : bool, default False
        Instead, spread a pandas DataFrame / Series or NumPy array over every worker of the
        cluster as a persisted dask-cuDF / CuPy-backed Dask collection (pandas / NumPy
        partitions on CPU workers).
    npartitions : int, optional
        With ``distribute``: the number of partitions, balanced by bytes (default: about
        512 MiB each, at least one per worker).
    client : distributed.Client, optional
        With ``distribute``: the cluster's client (default: ``distributed.default_client()``,
        which ``%gpu_cluster start`` sets).

    Returns
    -------
    object
        A ``cudf.DataFrame`` / ``Series`` / ``Index``, a ``cupy.ndarray``, or a Dask
        collection with cuDF / CuPy partitions (nothing is computed); with ``distribute``, a
        persisted Dask collection. ``obj`` itself when no converter knows it, when it is on the
        GPU already, or when no GPU is usable.

    Raises
    ------
    ArgumentError
        Arguments that do not go together (``npartitions`` or ``client`` without
        ``distribute``, ``device`` with it) or a value out of range (a ``device`` this machine
        does not have); raised before anything runs. It is also a ``ValueError``.
    NoGpuError
        A GPU is required (``require_gpu=True`` or the ``require-gpu`` option) and none is
        usable, here or, with ``distribute``, on the workers. Nothing was converted.
    ConversionError
        ``obj`` could not be moved: out of GPU memory, a dtype cuDF cannot hold, a column of
        mixed Python objects, or with ``distribute`` a worker that died, ran out of memory or
        stopped answering. The message names the cause and what to do; the GPU memory the
        attempt took and every partition placed so far are given back.
    ClusterError
        With ``distribute``: there is no cluster (start or attach one first), or it has no
        workers.

    See Also
    --------
    to_cpu : The way back to pandas / NumPy.

    Examples
    --------
    On a machine without a usable GPU the data stays on the host, as it is (a
    ``GpuUnavailableWarning`` says why, the first time):

    >>> import pandas as pd
    >>> from gpudask_jupyter import to_gpu
    >>> df = pd.DataFrame({"key": [1, 2, 1], "x": [0.5, 1.5, 2.5]})
    >>> gdf = to_gpu(df)
    >>> gdf is df
    True

    With a GPU it is cuDF's:

    >>> type(gdf)  # doctest: +SKIP
    <class 'cudf.core.dataframe.DataFrame'>

    A GPU made a requirement turns that fallback into an error:

    >>> to_gpu(df, require_gpu=True)
    Traceback (most recent call last):
    ...
    gpudask_jupyter.errors.NoGpuError: ... stays on the host: ... Nothing was converted
    (require_gpu=True).

    Arguments that do not go together are refused before anything runs:

    >>> to_gpu(df, npartitions=4)
    Traceback (most recent call last):
    ...
    gpudask_jupyter.errors.ArgumentError: npartitions goes with distribute=True

    Spread over the workers of the kernel's cluster (after ``%gpu_cluster start``):

    >>> ddf = to_gpu(df, distribute=True)  # doctest: +SKIP
    >>> ddf.groupby("key").x.mean().compute()  # doctest: +SKIP
    key
    1    1.5
    2    1.5
    Name: x, dtype: float64
    """
    check_to_gpu(device, distribute, npartitions, client)
    if not distribute:
        return _one(obj, convert_names, require_gpu, direction="gpu", device=device)
    # lazy: --distribute's modules reach the monitor's, and dask with them, which a conversion
    # in the kernel does not need (`from gpudask_jupyter import to_gpu` imports no dask)
    from ..convert.distribute.kernel.variables import distribute_names

    return _one(obj, distribute_names, require_gpu, client=client, npartitions=npartitions)


def to_cpu(obj: Any, *, gather: bool = False, client: Any = None) -> Any:
    """cuDF → pandas, CuPy → NumPy, GPU-backed Dask collections → pandas/NumPy-backed (lazily).

    The function behind ``%%to_cpu``; objects already on the host are returned unchanged.

    ``gather=True``: a Dask collection comes back as one pandas / NumPy object in this process
    (computed on the cluster first if it is not persisted).

    Parameters
    ----------
    obj : object
        A cuDF ``DataFrame``, ``Series`` or ``Index``, a CuPy array, or a Dask DataFrame or
        Array (with ``gather``: any of them, on the GPU or not).
    gather : bool, default False
        Bring a Dask collection back as one pandas / NumPy object, the way back of
        ``to_gpu(obj, distribute=True)``.
    client : distributed.Client, optional
        With ``gather``: the cluster's client (default: ``distributed.default_client()``).

    Returns
    -------
    object
        A pandas ``DataFrame`` / ``Series`` / ``Index``, a NumPy array, or a Dask collection
        with pandas / NumPy partitions (nothing is computed); with ``gather``, one pandas /
        NumPy object. ``obj`` itself when it is on the host already or no converter knows it.

    Raises
    ------
    ArgumentError
        ``client`` without ``gather``; raised before anything runs.
    ConversionError
        ``obj`` could not be moved (out of host memory, or with ``gather`` a worker that died
        or stopped answering); the message names the cause and what to do.
    ClusterError
        With ``gather`` and a Dask collection: there is no cluster to gather it from.

    See Also
    --------
    to_gpu : The way there.

    Examples
    --------
    What is on the host already comes back as it is, with or without a GPU:

    >>> import numpy as np
    >>> from gpudask_jupyter import to_cpu
    >>> arr = np.arange(4)
    >>> to_cpu(arr) is arr
    True
    >>> to_cpu(arr, client=object())
    Traceback (most recent call last):
    ...
    gpudask_jupyter.errors.ArgumentError: client goes with gather=True: ...

    Gathering needs the cluster that holds the collection:

    >>> import dask.array as da
    >>> to_cpu(da.arange(4, chunks=2), gather=True)
    Traceback (most recent call last):
    ...
    gpudask_jupyter.errors.ClusterError: ... needs a Dask cluster and there is none: ...

    With a GPU:

    >>> import cupy  # doctest: +SKIP
    >>> to_cpu(cupy.arange(4))  # doctest: +SKIP
    array([0, 1, 2, 3])
    >>> df = to_cpu(ddf, gather=True)  # doctest: +SKIP
    """
    check_to_cpu(gather, client)
    if not gather:
        return _one(obj, convert_names, False, direction="cpu")

    # lazy: as above
    from ..convert.distribute.kernel.variables import gather_names

    namespace = {"argument": obj}
    gather_names(namespace, ["argument"], client=client, leave_on_host="keep it on the cluster")
    return namespace["argument"]
