"""A cap on one process's GPU allocations that can change while its allocations stand.

RMM's ``LimitingResourceAdaptor`` holds a process to a limit fixed when it is made, and an
elastic share (:mod:`.shares`) changes as students come and go. Every allocation of cuDF, of
CuPy (routed through RMM here) and of anything else that allocates through RMM asks the current
device resource, while each buffer goes back to the resource that made it. So a new cap is a new
adaptor, made current, over the same upstream resource, limited to the cap less what the earlier
adaptors still hold; those keep their buffers until they are freed. As they are, :meth:`Capped.
refresh` makes a new adaptor that counts the room they left. The allocation path stays RMM's own
C++ (no Python call per allocation); a change costs one adaptor.

Memory the process allocates outside RMM on purpose (a ``--distribute`` partition's block, which
must be one ``cudaMalloc`` to be exported whole) is :meth:`Capped.reserve`\\ d first: counted
against the same cap, refused when it does not fit. Where someone else makes another resource
current over ours (dask-cuda's RMM set-up, a user's ``rmm.reinitialize``), :meth:`Capped.
refresh` puts the cap back over it; RMM statistics over the cap, which only count what passes,
stay.

CUDA's asynchronous allocator, as RMM makes it, keeps what was freed for reuse: NVML shows it held
by the process, so a student who once took most of the GPU alone would keep it, cached, after
others came. :meth:`Capped.give_back` hands it back by making a new pool the upstream of the
allocations to come; the old pool goes, with what it keeps, when the last buffer made from it is
freed (RMM's buffers keep their resource alive until then). A pool the student asked for
(``--rmm-pool-size``) is memory held on purpose and is kept.
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
        self._own_pool = upstream is None  # CUDA's asynchronous pool, made here: renewable
        self._upstream = upstream if upstream is not None else rmm.mr.CudaAsyncMemoryResource()
        self._adaptors: list[Any] = []
        self._current: Any = None
        self._earlier = 0  # what the earlier adaptors held when the current one was made
        self.reserved = 0  # bytes allocated outside RMM and counted here
        self.cap = 0
        self.set(cap)
        _route_cupy()
        process_cap.set(self)

    def held(self) -> int:
        """Bytes this process's capped allocations hold now, reservations included."""
        with self._lock:
            return self._held() + self.reserved

    def _held(self) -> int:
        return sum(adaptor.get_allocated_bytes() for adaptor in self._adaptors)

    def set(self, cap: int) -> None:
        """Hold the process to ``cap`` bytes from now on (what it holds stays)."""
        with self._lock:
            self._make(cap)

    def _make(self, cap: int) -> None:
        import rmm

        self._prune()
        held = self._held()
        adaptor = rmm.mr.LimitingResourceAdaptor(
            self._upstream, allocation_limit=max(0, cap - held - self.reserved)
        )
        rmm.mr.set_current_device_resource(adaptor)
        self._earlier = held
        self._adaptors.append(adaptor)
        self._current = adaptor
        self.cap = cap
        log.debug(
            "GPU allocations capped at %d bytes (%d held, %d reserved)", cap, held, self.reserved
        )

    def _prune(self) -> None:
        """Let go of the earlier adaptors that hold nothing (and of their upstream with them)."""
        self._adaptors = [
            a for a in self._adaptors if a is self._current or a.get_allocated_bytes() > 0
        ]

    def give_back(self) -> bool:
        """Hand back to CUDA the memory this process's pool keeps for reuse: the allocations to
        come are made from a new pool, and the old one goes, with what it keeps, once nothing
        made from it is held. False where the pool is not this object's to renew (a pool the
        user asked for, a resource someone else made current)."""
        import rmm

        with self._lock:
            if not self._own_pool:
                return False
            self._upstream = rmm.mr.CudaAsyncMemoryResource()
            self._make(self.cap)
            self._prune()
            log.info("the GPU memory this process kept for reuse is given back")
            return True

    def refresh(self) -> None:
        """Give back to the current adaptor what earlier ones have freed since it was made, and
        put the cap back where another resource was made current over it."""
        import rmm

        with self._lock:
            current = rmm.mr.get_current_device_resource()
            if current is not self._current and not _observes(current, self._current):
                log.warning(
                    "another GPU memory resource was made current over this process's cap "
                    "(%s): the cap is put back over it",
                    type(current).__name__,
                )
                self._upstream = current
                self._own_pool = False
                self._make(self.cap)
                return
            self._prune()  # an earlier pool goes with the last buffer made from it
            earlier = sum(a.get_allocated_bytes() for a in self._adaptors if a is not self._current)
            if self._earlier - earlier >= REFRESH_AFTER:
                self._make(self.cap)

    def reserve(self, nbytes: int) -> bool:
        """Count ``nbytes`` allocated outside RMM against the cap; False (nothing counted) when
        they do not fit in what the cap leaves."""
        with self._lock:
            if self._held() + self.reserved + nbytes > self.cap:
                return False
            self.reserved += nbytes
            self._make(self.cap)
            return True

    def release(self, nbytes: int) -> None:
        """``nbytes`` reserved earlier are freed."""
        with self._lock:
            self.reserved = max(0, self.reserved - nbytes)
            self._make(self.cap)


def _observes(resource: Any, cap: Any) -> bool:
    """Whether ``resource`` only counts the allocations on their way to ``cap``: RMM statistics
    over it (the GPU-time plugin's memory peaks, :mod:`...gpu_time.memory_peaks`) leave the cap
    in place, where any other resource made current over it is capped again."""
    import rmm

    while isinstance(resource, rmm.mr.StatisticsResourceAdaptor):
        resource = resource.get_upstream()
        if resource is cap:
            return True
    return False


class ProcessCap:
    """The cap this process installed, for code that allocates outside RMM (None: no cap)."""

    def __init__(self) -> None:
        self._capped: Capped | None = None

    def set(self, capped: Capped) -> None:
        self._capped = capped

    def get(self) -> Capped | None:
        return self._capped


#: this process's cap (one per process: RMM's current resource is the process's)
# per process: RMM's current resource of a device is the process's
process_cap = ProcessCap()


def _route_cupy() -> None:
    """CuPy allocates through RMM, so that the cap holds for it too (where CuPy is here)."""
    import importlib.util

    if importlib.util.find_spec("cupy") is None:
        return
    import cupy
    from rmm.allocators.cupy import rmm_cupy_allocator

    cupy.cuda.set_allocator(rmm_cupy_allocator)


def pool_upstream(pool: int) -> Any:
    """The upstream of a worker that asked for an RMM pool of ``pool`` bytes (``--rmm-pool-size``
    on a share): a pool of plain CUDA memory, made here so that the cap stays over it (dask-cuda
    would make its own pool current, over the cap)."""
    import rmm

    rounded = -(-pool // 256) * 256
    return rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size=rounded)
