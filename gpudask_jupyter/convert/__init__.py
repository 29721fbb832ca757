"""Moving objects between host and GPU: the API under %%to_gpu and %%to_cpu.

``to_gpu(obj)`` / ``to_cpu(obj)`` convert one object; :func:`convert_names` converts several
variables of a namespace as one transaction. Objects no converter knows are returned unchanged.
``to_gpu(obj, distribute=True)`` spreads a pandas / NumPy object over the cluster's workers as a
persisted Dask collection, ``to_cpu(obj, gather=True)`` brings one back
(:func:`.distribute.variables.distribute_names`, :func:`.distribute.variables.gather_names`).
Without a usable GPU the data stays on the host and the user is told once, unless a GPU is
required, which makes it an error.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from .. import config
from ..errors import ConversionError
from .arguments import check_to_cpu, check_to_gpu
from .converter import Context, Converter, Direction, module_class
from .lookup import find, register, unregister
from .transaction import convert_names

__all__ = [
    "Context",
    "ConversionError",
    "Converter",
    "Direction",
    "GpuUnavailableWarning",
    "convert_names",
    "find",
    "forget_notices",
    "module_class",
    "notice_once",
    "register",
    "to_cpu",
    "to_gpu",
    "unregister",
]


class GpuUnavailableWarning(UserWarning):
    """Data stayed on the host because no GPU (or GPU library) is usable."""


_told: set[str] = set()
_told_lock = threading.Lock()


def notice_once(reason: str) -> str | None:
    """The sentence to show for ``reason`` the first time it occurs in this session, else None."""
    with _told_lock:
        if reason in _told:
            return None
        _told.add(reason)
    return f"gpudask: no GPU for the conversion ({reason}); the data stays on the host."


def forget_notices() -> None:
    with _told_lock:
        _told.clear()


def _one(obj: Any, convert: Callable[..., Any], require_gpu: bool | None, **options: Any) -> Any:
    """A transaction on a namespace of one name, ``argument``: what the functions share with
    the magics. ``convert`` is :func:`convert_names` or one of :mod:`.distribute.variables`'s."""
    namespace = {"argument": obj}
    _, unavailable = convert(
        namespace,
        ["argument"],
        require_gpu=config.require_gpu(require_gpu),
        required_by="require_gpu=True" if require_gpu else "the require-gpu option",
        leave_on_host="keep it on the host",
        **options,
    )
    _warn(unavailable, 3)
    return namespace["argument"]


def _warn(unavailable: list[str], stacklevel: int) -> None:
    """Tell once per reason why data stayed on the host (``stacklevel``: the caller's)."""
    for why in unavailable:
        message = notice_once(why)
        if message:
            warnings.warn(message, GpuUnavailableWarning, stacklevel=stacklevel + 1)


def to_gpu(
    obj: Any,
    *,
    device: int | None = None,
    require_gpu: bool | None = None,
    distribute: bool = False,
    npartitions: int | None = None,
    client: Any = None,
) -> Any:
    """pandas → cuDF, NumPy → CuPy, Dask DataFrame/Array → cuDF/CuPy-backed (lazily).

    Equal to ``cudf.from_pandas`` / ``cupy.asarray``; large numeric data moves through pinned
    memory. Other objects are returned unchanged.

    ``distribute=True``: instead, spread a pandas DataFrame / Series or NumPy array over every
    worker of the cluster (``client``, by default ``distributed.default_client()``) as a
    persisted dask-cuDF / CuPy-backed Dask collection (pandas / NumPy partitions on CPU
    workers), in ``npartitions`` partitions balanced by bytes (by default about 512 MiB each,
    at least one per worker).
    """
    check_to_gpu(device, distribute, npartitions, client)
    if not distribute:
        return _one(obj, convert_names, require_gpu, direction="gpu", device=device)
    from .distribute.variables import distribute_names

    return _one(obj, distribute_names, require_gpu, client=client, npartitions=npartitions)


def to_cpu(obj: Any, *, gather: bool = False, client: Any = None) -> Any:
    """cuDF → pandas, CuPy → NumPy, GPU-backed Dask collections → pandas/NumPy-backed (lazily).

    ``gather=True``: a Dask collection comes back as one pandas / NumPy object in this process
    (computed on the cluster first if it is not persisted).
    """
    check_to_cpu(gather, client)
    if not gather:
        return _one(obj, convert_names, False, direction="cpu")
    from .distribute.variables import gather_names

    namespace = {"argument": obj}
    gather_names(namespace, ["argument"], client=client, leave_on_host="keep it on the cluster")
    return namespace["argument"]
