"""Whether GPU conversions can run here, and if not, why (checked once per process).

CuPy is imported only to ask CUDA for the device count; that creates no context on a device.
"""

from __future__ import annotations

import importlib.util
import logging
import threading

log = logging.getLogger(__name__)

_lock = threading.Lock()
_cache: dict[tuple[str, ...], str | None] = {}

INSTALL = "pip install 'gpudask-jupyter[gpu]'"


def reason(*modules: str) -> str | None:
    """None when CUDA has a device and ``modules`` are importable; otherwise the reason."""
    key = tuple(modules)
    with _lock:
        if key in _cache:
            return _cache[key]
    found = _check(modules)
    with _lock:
        _cache[key] = found
    return found


def _check(modules: tuple[str, ...]) -> str | None:
    for module in ("cupy", *modules):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed ({INSTALL})"
    import cupy

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # cupy's CUDARuntimeError and driver loading errors
        log.debug("CUDA's device count failed", exc_info=True)
        return f"CUDA has no usable device ({err})"
    if count == 0:
        return "CUDA reports no GPU"
    return None


def device_count() -> int:
    if reason() is not None:
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())
