"""Whether GPU conversions can run here, and if not, why (checked once per process).

The reason points where the fix is: on a machine without an NVIDIA driver or GPU (NVML says so)
installing the GPU libraries would not help, so the reason is that, the same for every converter
(and so told once); advice to install is given only where a driver is there, or unknown. CuPy is
imported only to ask CUDA for the device count; that creates no context on a device.
"""

from __future__ import annotations

import importlib.util
import logging
import threading

from . import nvml

log = logging.getLogger(__name__)

# per process: what CUDA and the imports say of this process, asked once
_lock = threading.Lock()
_cache: dict[tuple[str, ...], str | None] = {}

INSTALL = "pip install 'gpudask-jupyter[gpu]'"
NO_DRIVER = "no NVIDIA driver/GPU on this machine"


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


def _driverless() -> bool:
    """NVML says this machine has no NVIDIA driver, or a driver without GPUs (False where NVML
    cannot tell: switched off, nvidia-ml-py missing)."""
    state = nvml.status().state
    return state in {
        nvml.NvmlState.NO_LIBRARY,
        nvml.NvmlState.DRIVER_NOT_LOADED,
        nvml.NvmlState.NO_DEVICES,
    }


def _check(modules: tuple[str, ...]) -> str | None:
    """The first of: no driver, no CuPy, no device CUDA can use, a missing library; so that
    every converter on a machine without a GPU gives the same reason."""
    if _driverless():
        return NO_DRIVER
    if importlib.util.find_spec("cupy") is None:
        return f"cupy is not installed ({INSTALL})"
    import cupy

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # cupy's CUDARuntimeError and driver loading errors
        log.debug("CUDA's device count failed", exc_info=True)
        return f"CUDA has no usable device ({err})"
    if count == 0:
        return "CUDA reports no GPU"
    for module in modules:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed ({INSTALL})"
    return None


def device_count() -> int:
    if reason() is not None:
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())
