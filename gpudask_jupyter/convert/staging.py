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
    """One copy thread per two cores, at most 16: memcpy into pinned memory is the bottleneck."""
    return max(2, min(16, (os.cpu_count() or 2) // 2))


class _PinnedBuffer:
    def __init__(self, size: int) -> None:
        import cupy

        self.ptr = int(cupy.cuda.runtime.hostAlloc(size, 0))
        self.size = size

    def free(self) -> None:
        import cupy

        if self.ptr:
            cupy.cuda.runtime.freeHost(self.ptr)
            self.ptr = 0


_CHUNK = 4 * MiB  # large enough for memcpy's non-temporal stores and a DMA near full speed
_MAX_DEPTH = 8


def layout(capacity: int, threads: int) -> tuple[int, int]:
    """(buffers per thread, bytes per buffer) for a pinned budget shared by ``threads``."""
    depth = max(2, min(_MAX_DEPTH, capacity // (threads * _CHUNK)))
    chunk = capacity // (threads * depth)
    chunk = max(MiB, min(64 * MiB, chunk - chunk % (64 * 1024)))
    return depth, chunk


class PinnedStager:
    """A fixed ring of pinned buffers per thread, and the threads that move data through them.

    Each thread owns ``depth`` buffers and a CUDA stream: it copies its next chunk into a free
    buffer (``memmove``, which releases the GIL) and queues that buffer's DMA, so that copies
    on the host and DMAs on the bus overlap. Chunks are dealt out round-robin, so the threads
    walk the data together from the front.
    """

    def __init__(self, capacity: int, threads: int) -> None:
        self.threads = max(1, threads)
        self.depth, self.chunk = layout(capacity, self.threads)
        self.capacity = self.chunk * self.depth * self.threads
        self._buffers = [
            [_PinnedBuffer(self.chunk) for _ in range(self.depth)] for _ in range(self.threads)
        ]
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="gpudask-staging")
        self._per_device: dict[int, tuple[list[Any], list[list[Any]]]] = {}
        self._lock = threading.Lock()

    def matches(self, capacity: int, threads: int) -> bool:
        return self.threads == max(1, threads) and (self.depth, self.chunk) == layout(
            capacity, self.threads
        )

    def _streams(self, device: int) -> tuple[list[Any], list[list[Any]]]:
        import cupy

        if device not in self._per_device:
            with cupy.cuda.Device(device):
                streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(self.threads)]
                events = [
                    [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(self.depth)]
                    for _ in range(self.threads)
                ]
            self._per_device[device] = (streams, events)
        return self._per_device[device]

    def _run(self, work: Any, nbytes: int, device: int) -> None:
        import cupy

        with self._lock:
            self._streams(device)
            with cupy.cuda.Device(device):
                # kernels on other streams may still use the memory we read or write
                cupy.cuda.runtime.deviceSynchronize()
            active = min(self.threads, math.ceil(nbytes / self.chunk))
            for future in [self._pool.submit(work, t) for t in range(active)]:
                future.result()

    def h2d(self, src_ptr: int, dst_ptr: int, nbytes: int, device: int) -> None:
        """Copy ``nbytes`` of host memory at ``src_ptr`` to device memory at ``dst_ptr``."""
        import cupy

        runtime = cupy.cuda.runtime
        chunk, step, depth = self.chunk, self.chunk * self.threads, self.depth

        def work(t: int) -> None:
            runtime.setDevice(device)
            streams, events = self._per_device[device]
            stream, slots, buffers = streams[t], events[t], self._buffers[t]
            for j, offset in enumerate(range(t * chunk, nbytes, step)):
                size = min(chunk, nbytes - offset)
                slot = j % depth
                if j >= depth:
                    slots[slot].synchronize()  # the DMA that last read this buffer is done
                ctypes.memmove(buffers[slot].ptr, src_ptr + offset, size)
                runtime.memcpyAsync(dst_ptr + offset, buffers[slot].ptr, size, _H2D, stream.ptr)
                slots[slot].record(stream)
            stream.synchronize()

        self._run(work, nbytes, device)

    def d2h(self, src_ptr: int, dst_ptr: int, nbytes: int, device: int) -> None:
        """Copy ``nbytes`` of device memory at ``src_ptr`` to host memory at ``dst_ptr``."""
        import cupy

        runtime = cupy.cuda.runtime
        chunk, step, depth = self.chunk, self.chunk * self.threads, self.depth

        def work(t: int) -> None:
            runtime.setDevice(device)
            streams, events = self._per_device[device]
            stream, slots, buffers = streams[t], events[t], self._buffers[t]
            pending: list[tuple[int, int, int]] = []

            def drain(slot: int, offset: int, size: int) -> None:
                slots[slot].synchronize()
                ctypes.memmove(dst_ptr + offset, buffers[slot].ptr, size)

            for j, offset in enumerate(range(t * chunk, nbytes, step)):
                size = min(chunk, nbytes - offset)
                slot = j % depth
                if len(pending) == depth:
                    drain(*pending.pop(0))  # frees this slot's buffer
                runtime.memcpyAsync(buffers[slot].ptr, src_ptr + offset, size, _D2H, stream.ptr)
                slots[slot].record(stream)
                pending.append((slot, offset, size))
            for item in pending:
                drain(*item)

        self._run(work, nbytes, device)

    def close(self) -> None:
        with self._lock:
            self._pool.shutdown(wait=True)
            for ring in self._buffers:
                for buffer in ring:
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
        get().h2d(host.ctypes.data, int(out.data.ptr), host.nbytes, device)
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
        get().d2h(int(dev.data.ptr), out.ctypes.data, out.nbytes, device)
    return out
