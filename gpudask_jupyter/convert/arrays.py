"""NumPy ↔ CuPy, with results equal to ``cupy.asarray`` / ``ndarray.get()``.

Large arrays take the pinned pipeline (:mod:`.pinned.staging`); small ones, where a pipeline cannot
pay for itself, CuPy's own copy.
"""

from __future__ import annotations

from typing import Any

from . import refusals
from .converter import Context
from .pinned import staging


def numpy_to_cupy(arr: Any, context: Context) -> Any:
    import cupy

    refused = refusals.for_cupy(arr)  # asked before the move too; a direct call lands here
    if refused is not None:
        raise refused
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    device = context.device if context.device is not None else staging.current_device()
    if staging.use_pinned(arr.nbytes):
        context.path = "pinned"
        return staging.to_device(arr, device)
    with cupy.cuda.Device(device):
        return cupy.asarray(arr)


def cupy_to_numpy(arr: Any, context: Context) -> Any:
    if staging.use_pinned(arr.nbytes):
        context.path = "pinned"
        return staging.to_host(arr)
    return arr.get()
