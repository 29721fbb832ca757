"""RMM's memory resources as far as the room uses them, with the accounting of the real ones."""

from __future__ import annotations

import weakref
from typing import Any

_pools: weakref.WeakSet[CudaAsyncMemoryResource] = weakref.WeakSet()


class CudaMemoryResource:
    pass


class CudaAsyncMemoryResource:
    """CUDA's asynchronous pool as RMM makes it: what is freed stays in the pool for reuse (its
    release threshold is the whole GPU) until the pool itself goes."""

    def __init__(self) -> None:
        self.in_use = 0
        self.kept = 0  # what the pool has from CUDA: in use, or freed and kept
        _pools.add(self)

    def allocate(self, nbytes: int) -> None:
        self.in_use += nbytes
        self.kept = max(self.kept, self.in_use)

    def deallocate(self, nbytes: int) -> None:
        self.in_use -= nbytes


def device_memory() -> int:
    """What NVML would show this process holding: what every live pool has from CUDA."""
    return sum(pool.kept for pool in list(_pools))


class PoolMemoryResource:
    def __init__(
        self,
        upstream: Any,
        initial_pool_size: int | None = None,
        maximum_pool_size: int | None = None,
    ) -> None:
        if initial_pool_size is not None and initial_pool_size % 256:
            raise ValueError("Error, Initial pool size required to be a multiple of 256 bytes")
        self.upstream = upstream
        self.initial_pool_size = initial_pool_size


class LimitingResourceAdaptor:
    def __init__(self, upstream: Any, allocation_limit: int) -> None:
        self.upstream = upstream
        self.limit = allocation_limit
        self.allocated = 0

    def get_allocated_bytes(self) -> int:
        return self.allocated

    def get_allocation_limit(self) -> int:
        return self.limit

    def allocate(self, nbytes: int) -> tuple[LimitingResourceAdaptor, int]:
        if self.allocated + nbytes > self.limit:
            raise MemoryError(
                "std::bad_alloc: out_of_memory: RMM failure at:limiting_resource_adaptor.hpp:"
                "152: Exceeded memory limit"
            )
        self.allocated += nbytes
        if isinstance(self.upstream, CudaAsyncMemoryResource):
            self.upstream.allocate(nbytes)
        return self, nbytes


class StatisticsResourceAdaptor:
    """Counts what passes through it on the way to ``upstream`` (the GPU-time plugin's memory
    peaks put one on top): its counters form a stack, as RMM's do."""

    def __init__(self, upstream: Any) -> None:
        self.upstream = upstream
        self.windows: list[list[int]] = [[0, 0]]

    def get_upstream(self) -> Any:
        return self.upstream

    def allocate(self, nbytes: int) -> tuple[Any, int]:
        buffer = self.upstream.allocate(nbytes)
        for window in self.windows:
            window[0] += nbytes
            window[1] = max(window[1], window[0])
        return buffer

    def push_counters(self) -> Any:
        self.windows.append([0, 0])

    def pop_counters(self) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(peak_bytes=self.windows.pop()[1])

    @property
    def allocation_counts(self) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(peak_bytes=self.windows[-1][1])


_current: list[Any] = [CudaMemoryResource()]


def set_current_device_resource(resource: Any) -> None:
    _current[0] = resource


def get_current_device_resource() -> Any:
    return _current[0]


def allocate(nbytes: int) -> tuple[Any, int]:
    """An allocation through the current resource, as cuDF and CuPy make theirs."""
    return _current[0].allocate(nbytes)


def deallocate(buffer: tuple[Any, int]) -> None:
    """A buffer goes back to the resource that made it."""
    buffer[0].allocated -= buffer[1]
    if isinstance(buffer[0].upstream, CudaAsyncMemoryResource):
        buffer[0].upstream.deallocate(buffer[1])
