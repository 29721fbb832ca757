"""The CUDA calls the pinned pipeline (:mod:`.staging`) makes, behind a seam.

The pipeline talks to a :class:`Backend`; :class:`CupyBackend` is the real one. A test hands
the pipeline a fake whose copies really are asynchronous, so the pipeline's logic is checked on
a machine without a GPU.
"""

from __future__ import annotations

from typing import Any, Protocol


class Backend(Protocol):
    """The CUDA calls the pipeline makes; a seam so the pipeline's logic can be tested on a CPU."""

    def alloc_pinned(self, size: int) -> int: ...
    def free_pinned(self, ptr: int) -> None: ...
    def set_device(self, device: int) -> None: ...
    def synchronize(self, device: int) -> None: ...
    def stream(self, device: int) -> Any: ...
    def event(self, device: int) -> Any: ...
    def copy_async(self, dst: int, src: int, size: int, to_device: bool, stream: Any) -> None: ...


class CupyBackend:
    """The CUDA runtime through CuPy (imported only when a transfer first happens)."""

    def __init__(self) -> None:
        import cupy

        self._cupy = cupy
        self._runtime = cupy.cuda.runtime

    def alloc_pinned(self, size: int) -> int:
        return int(self._runtime.hostAlloc(size, 0))

    def free_pinned(self, ptr: int) -> None:
        self._runtime.freeHost(ptr)

    def set_device(self, device: int) -> None:
        self._runtime.setDevice(device)

    def synchronize(self, device: int) -> None:
        with self._cupy.cuda.Device(device):
            self._runtime.deviceSynchronize()

    def stream(self, device: int) -> Any:
        with self._cupy.cuda.Device(device):
            return self._cupy.cuda.Stream(non_blocking=True)

    def event(self, device: int) -> Any:
        with self._cupy.cuda.Device(device):
            return self._cupy.cuda.Event(block=False, disable_timing=True)

    def copy_async(self, dst: int, src: int, size: int, to_device: bool, stream: Any) -> None:
        kind = 1 if to_device else 2  # cudaMemcpyHostToDevice / DeviceToHost
        self._runtime.memcpyAsync(dst, src, size, kind, stream.ptr)
