"""Moving objects between host and GPU: the API under %%to_gpu and %%to_cpu.

``to_gpu(obj)`` / ``to_cpu(obj)`` convert one object; :func:`convert_names` converts several
variables of a namespace as one transaction. Objects no converter knows are returned unchanged.
Without a usable GPU the data stays on the host and the user is told once, unless a GPU is
required, which makes it an error.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from ..errors import ConversionError, GpuDaskError, NoGpuError
from .failures import describe
from .registry import Context, Converter, Direction, find, module_class, register, unregister
from .transaction import convert_names, convert_one, release_device_memory

__all__ = [
    "Context",
    "ConversionError",
    "Converter",
    "GpuUnavailableWarning",
    "convert_names",
    "find",
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


def _convert(obj: Any, direction: Direction, device: int | None, require_gpu: bool | None) -> Any:
    from .. import config

    converter = find(obj, direction)
    if converter is None or converter.skip is not None:
        return obj
    why = converter.unavailable()
    if why is not None:
        if require_gpu if require_gpu is not None else config.get("require-gpu"):
            raise NoGpuError(f"No usable GPU: {why}")
        message = notice_once(why)
        if message:
            warnings.warn(message, GpuUnavailableWarning, stacklevel=3)
        return obj
    try:
        new, _ = convert_one("argument", obj, converter, device)
    except GpuDaskError:
        raise
    except Exception as err:
        cause, hint = describe(err, "argument", obj, exclude="keep it on the host")
        error = ConversionError("argument", cause, hint)
        release_device_memory()
        raise error from err
    return new


def to_gpu(obj: Any, *, device: int | None = None, require_gpu: bool | None = None) -> Any:
    """pandas → cuDF, NumPy → CuPy, Dask DataFrame/Array → cuDF/CuPy-backed (lazily).

    Equal to ``cudf.from_pandas`` / ``cupy.asarray``; large numeric data moves through pinned
    memory. Other objects are returned unchanged.
    """
    return _convert(obj, "gpu", device, require_gpu)


def to_cpu(obj: Any) -> Any:
    """cuDF → pandas, CuPy → NumPy, GPU-backed Dask collections → pandas/NumPy-backed."""
    return _convert(obj, "cpu", None, False)
