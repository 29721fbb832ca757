"""NumPy ↔ CuPy, with results equal to ``cupy.asarray`` / ``ndarray.get()``.

Large arrays take the pinned pipeline (:mod:`.pinned.staging`); small ones, where a pipeline cannot
pay for itself, CuPy's own copy.
"""

from __future__ import annotations

from typing import Any

from .converter import Context
from .failures import Unsupported
from .pinned import staging

_CUPY_KINDS = set("biufc")


def numpy_to_cupy(arr: Any, context: Context) -> Any:
    import cupy

    if arr.dtype.kind not in _CUPY_KINDS:
        raise Unsupported(
            f"NumPy arrays of dtype {arr.dtype} cannot live on the GPU (CuPy holds numbers and "
            "booleans only)",
            "convert it to a numeric dtype",
        )
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
