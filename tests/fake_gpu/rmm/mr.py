"""RMM's memory resources as far as the room uses them, with the accounting of the real ones."""

from __future__ import annotations

from typing import Any


class CudaMemoryResource:
    pass


class CudaAsyncMemoryResource:
    pass


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
        return self, nbytes


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
