"""The pinned, pipelined host↔device copy behind %%to_gpu / %%to_cpu for large numeric data.

A copy from pageable host memory is bounced through a driver buffer and runs at a fraction of
what the bus allows; a copy from page-locked ("pinned") memory is a direct DMA. So the data goes
through a small ring of pinned buffers instead: several host threads each fill their next buffer
(a plain memcpy that releases the GIL) while the DMA of their previous buffer runs on their own
CUDA stream, and the reverse for device→host. The buffers are allocated once, on first use,
bounded by the ``pinned-buffer`` option, reused for every transfer and freed by :func:`release`
(``%unload_ext``).
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from .. import config

MiB = 2**20
_H2D = 1  # cudaMemcpyHostToDevice
_D2H = 2  # cudaMemcpyDeviceToHost


def default_threads() -> int:
    return max(2, min(8, (os.cpu_count() or 2) // 2))


class _PinnedBuffer:
    def __init__(self, size: int) -> None:
        import cupy
        import numpy as np

        self.ptr = int(cupy.cuda.runtime.hostAlloc(size, 0))
        self.size = size
        raw = (ctypes.c_uint8 * size).from_address(self.ptr)
        self.array = np.ctypeslib.as_array(raw)

    def free(self) -> None:
        import cupy

        if self.ptr:
            cupy.cuda.runtime.freeHost(self.ptr)
            self.ptr = 0


class PinnedStager:
    """A fixed set of pinned buffers (two per thread) and the threads that move data through."""

    def __init__(self, capacity: int, threads: int) -> None:
        self.threads = max(1, threads)
        per_buffer = capacity // (2 * self.threads)
        self.chunk = max(MiB, min(64 * MiB, per_buffer - per_buffer % (64 * 1024)))
        self.capacity = self.chunk * 2 * self.threads
        self._buffers = [[_PinnedBuffer(self.chunk) for _ in range(2)] for _ in range(self.threads)]
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="gpudask-staging")
        self._per_device: dict[int, tuple[list[Any], list[list[Any]]]] = {}
        self._lock = threading.Lock()

    def matches(self, capacity: int, threads: int) -> bool:
        return self.threads == max(1, threads) and self.capacity <= capacity

    def _streams(self, device: int) -> tuple[list[Any], list[list[Any]]]:
        import cupy

        if device not in self._per_device:
            with cupy.cuda.Device(device):
                streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(self.threads)]
                events = [
                    [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(2)]
                    for _ in range(self.threads)
                ]
            self._per_device[device] = (streams, events)
        return self._per_device[device]

    def _run(self, work: Any, nbytes: int) -> None:
        active = min(self.threads, math.ceil(nbytes / self.chunk))
        for future in [self._pool.submit(work, t) for t in range(active)]:
            future.result()

    def h2d(self, src: Any, dst_ptr: int, device: int) -> None:
        """Copy the bytes of ``src`` (a contiguous uint8 NumPy view) to ``dst_ptr`` on the GPU."""
        import cupy
        import numpy as np

        runtime = cupy.cuda.runtime
        nbytes = int(src.nbytes)
        chunk, step = self.chunk, self.chunk * self.threads

        def work(t: int) -> None:
            runtime.setDevice(device)
            streams, events = self._streams(device)
            stream, slots, buffers = streams[t], events[t], self._buffers[t]
            for j, offset in enumerate(range(t * chunk, nbytes, step)):
                size = min(chunk, nbytes - offset)
                slot = j & 1
                if j >= 2:
                    slots[slot].synchronize()  # the DMA that last used this buffer is done
                np.copyto(buffers[slot].array[:size], src[offset : offset + size])
                runtime.memcpyAsync(dst_ptr + offset, buffers[slot].ptr, size, _H2D, stream.ptr)
                slots[slot].record(stream)
            stream.synchronize()

        with self._lock:
            self._streams(device)
            with cupy.cuda.Device(device):
                runtime.deviceSynchronize()  # the destination may be memory just freed by a kernel
            self._run(work, nbytes)

    def d2h(self, src_ptr: int, dst: Any, device: int) -> None:
        """Copy device bytes at ``src_ptr`` into ``dst`` (a contiguous uint8 NumPy view)."""
        import cupy
        import numpy as np

        runtime = cupy.cuda.runtime
        nbytes = int(dst.nbytes)
        chunk, step = self.chunk, self.chunk * self.threads

        def work(t: int) -> None:
            runtime.setDevice(device)
            streams, events = self._streams(device)
            stream, slots, buffers = streams[t], events[t], self._buffers[t]
            pending: list[tuple[int, int, int]] = []

            def drain(slot: int, offset: int, size: int) -> None:
                slots[slot].synchronize()
                np.copyto(dst[offset : offset + size], buffers[slot].array[:size])

            for j, offset in enumerate(range(t * chunk, nbytes, step)):
                size = min(chunk, nbytes - offset)
                slot = j & 1
                if len(pending) == 2:
                    drain(*pending.pop(0))  # frees this slot's buffer
                runtime.memcpyAsync(buffers[slot].ptr, src_ptr + offset, size, _D2H, stream.ptr)
                slots[slot].record(stream)
                pending.append((slot, offset, size))
            for item in pending:
                drain(*item)

        with self._lock:
            self._streams(device)
            with cupy.cuda.Device(device):
                runtime.deviceSynchronize()  # the source may still be written by a kernel
            self._run(work, nbytes)

    def close(self) -> None:
        with self._lock:
            self._pool.shutdown(wait=True)
            for pair in self._buffers:
                for buffer in pair:
                    buffer.free()
            self._per_device.clear()


_stager: PinnedStager | None = None
_stager_lock = threading.Lock()


def get() -> PinnedStager:
    """The process's stager, created on first use from the current options."""
    global _stager
    capacity = int(config.get("pinned-buffer"))
    threads = int(config.get("transfer-threads")) or default_threads()
    with _stager_lock:
        if _stager is not None and not _stager.matches(capacity, threads):
            _stager.close()
            _stager = None
        if _stager is None:
            _stager = PinnedStager(capacity, threads)
        return _stager


def pinned_bytes() -> int:
    """Page-locked host memory held now (0 when nothing was staged yet or after release)."""
    with _stager_lock:
        return _stager.capacity if _stager is not None else 0


def release() -> None:
    """Free the pinned buffers and stop the copy threads (called by ``%unload_ext``)."""
    global _stager
    with _stager_lock:
        if _stager is not None:
            _stager.close()
            _stager = None


def use_pinned(nbytes: int) -> bool:
    return nbytes >= int(config.get("transfer-threshold"))


def current_device() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDevice())


def to_device(host: Any, device: int | None = None) -> Any:
    """A CuPy array equal to ``cupy.asarray(host)``, copied through pinned memory."""
    import cupy
    import numpy as np

    if not (host.flags.c_contiguous or host.flags.f_contiguous):
        host = np.ascontiguousarray(host)
    order: Literal["C", "F"] = (
        "F" if host.flags.f_contiguous and not host.flags.c_contiguous else "C"
    )
    device = current_device() if device is None else device
    with cupy.cuda.Device(device):
        out = cupy.empty(host.shape, dtype=host.dtype, order=order)
    if host.nbytes:
        raw = host.reshape(-1, order="A").view(np.uint8)
        get().h2d(raw, int(out.data.ptr), device)
    return out


def to_host(dev: Any) -> Any:
    """A NumPy array equal to ``dev.get()``, copied through pinned memory."""
    import cupy
    import numpy as np

    device = int(dev.device.id)
    if not (dev.flags.c_contiguous or dev.flags.f_contiguous):
        with cupy.cuda.Device(device):
            dev = cupy.ascontiguousarray(dev)
    order: Literal["C", "F"] = "F" if dev.flags.f_contiguous and not dev.flags.c_contiguous else "C"
    out = np.empty(dev.shape, dtype=dev.dtype, order=order)
    if out.nbytes:
        raw = out.reshape(-1, order="A").view(np.uint8)
        get().d2h(int(dev.data.ptr), raw, device)
    return out
