"""A cap on one process's GPU allocations that can change while its allocations stand.

RMM's ``LimitingResourceAdaptor`` holds a process to a limit fixed when it is made, and an
elastic share (:mod:`.shares`) changes as students come and go. Every allocation of cuDF, of
CuPy (routed through RMM here) and of anything else that allocates through RMM asks the current
device resource, while each buffer goes back to the resource that made it. So a new cap is a new
adaptor, made current, over the same upstream resource, limited to the cap less what the earlier
adaptors still hold; those keep their buffers until they are freed. As they are, :meth:`Capped.
refresh` makes a new adaptor that counts the room they left. The allocation path stays RMM's own
C++ (no Python call per allocation); a change costs one adaptor.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

#: bytes freed by earlier adaptors after which :meth:`Capped.refresh` gives them back
REFRESH_AFTER = 64 * 2**20


class Capped:
    """This process's allocations on its current GPU, held to :attr:`cap` bytes."""

    def __init__(self, cap: int, upstream: Any = None) -> None:
        """``upstream``: where the memory comes from (a pool the user asked for), by default
        CUDA's own asynchronous allocator."""
        import rmm

        self._lock = threading.Lock()
        self._upstream = upstream if upstream is not None else rmm.mr.CudaAsyncMemoryResource()
        self._adaptors: list[Any] = []
        self._current: Any = None
        self._earlier = 0  # what the earlier adaptors held when the current one was made
        self.cap = 0
        self.set(cap)
        _route_cupy()

    def held(self) -> int:
        """Bytes this process's capped allocations hold now."""
        with self._lock:
            return sum(adaptor.get_allocated_bytes() for adaptor in self._adaptors)

    def set(self, cap: int) -> None:
        """Hold the process to ``cap`` bytes from now on (what it holds stays)."""
        import rmm

        with self._lock:
            self._adaptors = [
                a for a in self._adaptors if a is self._current or a.get_allocated_bytes() > 0
            ]
            held = sum(adaptor.get_allocated_bytes() for adaptor in self._adaptors)
            adaptor = rmm.mr.LimitingResourceAdaptor(
                self._upstream, allocation_limit=max(0, cap - held)
            )
            rmm.mr.set_current_device_resource(adaptor)
            self._earlier = held
            self._adaptors.append(adaptor)
            self._current = adaptor
            self.cap = cap
        log.debug("GPU allocations capped at %d bytes (%d held)", cap, held)

    def refresh(self) -> None:
        """Give back to the current adaptor what earlier ones have freed since it was made."""
        with self._lock:
            earlier = sum(a.get_allocated_bytes() for a in self._adaptors if a is not self._current)
            stale = self._earlier - earlier >= REFRESH_AFTER
        if stale:
            self.set(self.cap)


def _route_cupy() -> None:
    """CuPy allocates through RMM, so that the cap holds for it too (where CuPy is here)."""
    import importlib.util

    if importlib.util.find_spec("cupy") is None:
        return
    import cupy
    from rmm.allocators.cupy import rmm_cupy_allocator

    cupy.cuda.set_allocator(rmm_cupy_allocator)
