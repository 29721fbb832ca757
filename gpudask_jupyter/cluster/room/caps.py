"""Holding a share: what caps the memory a student's worker and kernel take on their GPU.

A share is split between the kernel (``%%to_gpu``, cuDF and CuPy in the notebook) and its
workers: :data:`KERNEL_PART` of it for the kernel, the rest for the workers. Each side is capped
by its own allocator, because no cap spans two processes:

* a worker by a limiting adaptor its own process makes current as it starts (:mod:`.worker_share`)
  over CUDA's asynchronous allocator, or over the RMM pool ``--rmm-pool-size`` asked for (made
  there, not by dask-cuda, whose RMM set-up would make its own pool current over the cap), CuPy
  routed through it, and dask-cuda's spilling to host memory set below it so that a large
  computation spills before it fails; a worker that cannot install its cap does not start;
* the kernel by an RMM limiting adaptor of its part (cuDF allocates through RMM), with CuPy routed
  through RMM as well; where RMM is missing, by CuPy's own limit (``CUPY_GPU_MEMORY_LIMIT``).

The kernel is also pinned to its GPU (``CUDA_VISIBLE_DEVICES``) when CUDA has not started in it
yet, so its own ``%%to_gpu`` lands on the GPU it was given, not on GPU 0 with everybody else's.
What no allocator caps is the CUDA context of each process (:data:`.placement.CONTEXT_RESERVE`),
which the placement sets aside.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
from typing import Any

from ...errors import ClusterError
from ...machine import gpus, nvml
from ...text.units import format_bytes, parse_bytes
from .allocator import Capped

log = logging.getLogger(__name__)

#: the part of a share the kernel may take; the workers share the rest
KERNEL_PART = 0.5
#: dask-cuda spills a worker's data to host memory above this part of the worker's cap
SPILL_AT = 0.8


def kernel_part(share: int) -> int:
    return int(share * KERNEL_PART)


def worker_part(share: int, n_workers: int = 1) -> int:
    return int(share * (1 - KERNEL_PART)) // max(n_workers, 1)


def _size(value: int | float | str | None, total: int) -> int | None:
    """A dask-cuda size (bytes, a fraction of the GPU, or text such as ``4GiB``) in bytes."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return parse_bytes(value)
        value = number
    return int(value * total) if 0 < value <= 1 else int(value)


def worker_keywords(
    share: int,
    total: int,
    label: str,
    rmm_pool_size: int | float | str | None,
    device_memory_limit: int | float | str | None,
) -> dict[str, Any]:
    """dask-cuda's keywords for a worker on GPU ``label`` (of ``total`` bytes) held within its
    part of ``share``; :class:`~...errors.ClusterError`, naming the share, for a pool or a spill
    limit asked beyond it. The worker caps itself (:mod:`.worker_share`), over the pool asked
    for, which it makes itself: dask-cuda is asked to spill below the cap and to leave RMM
    alone (its set-up would make a resource of its own current over the cap)."""
    cap = worker_part(share)
    pool = _size(rmm_pool_size, total)
    if pool is not None and pool > cap:
        raise ClusterError(
            f"--rmm-pool-size asks for {format_bytes(pool)}, but your share of GPU {label} is "
            f"{format_bytes(share)} on this shared machine (its worker may take "
            f"{format_bytes(cap)}, the kernel the rest); ask for {format_bytes(cap)} or less, "
            "or leave the pool out. Nothing was started."
        )
    limit = _size(device_memory_limit, total)
    if limit is not None and limit > cap:
        raise ClusterError(
            f"--device-memory-limit {format_bytes(limit)} is above the {format_bytes(cap)} "
            f"your worker may take on GPU {label} (your share is {format_bytes(share)}). "
            "Nothing was started."
        )
    return {
        "device_memory_limit": limit if limit is not None else int(cap * SPILL_AT),
        "rmm_pool_size": None,
        "rmm_async": False,
    }


def worker_pool(
    rmm_pool_size: int | float | str | None, total: int, rmm_async: bool = False
) -> int:
    """Bytes of the RMM pool a worker on a share makes under its own cap (0: none, its memory
    comes from CUDA's asynchronous allocator, as ``--rmm-async`` asks)."""
    del rmm_async  # the cap's own upstream already is CUDA's asynchronous allocator
    return _size(rmm_pool_size, total) or 0


def cuda_started() -> bool:
    """Whether this process already holds a CUDA context (NVML lists it on a GPU): then
    ``CUDA_VISIBLE_DEVICES`` no longer changes what it uses. A library merely imported (its
    driver library mapped, no context yet) does not count; :func:`kernel_devices` checks after."""
    return os.getpid() in {process.pid for process in nvml.processes()}


def kernel_devices() -> set[str]:
    """The UUIDs of the GPUs on which this process holds a CUDA context (NVML's list)."""
    return {process.uuid for process in nvml.processes() if process.pid == os.getpid()}


def pin_kernel(identifiers: list[str], share: int) -> bool:
    """Restrict the kernel to its GPUs and cap CuPy's pool there, while CUDA has not started in
    it; False (logged) when it has, and the kernel keeps the GPU it already uses."""
    if cuda_started():
        log.info("CUDA already runs in this kernel: its own GPU work stays where it is")
        return False
    gpus.restrict_kernel(identifiers)
    os.environ.setdefault("CUPY_GPU_MEMORY_LIMIT", str(kernel_part(share)))
    return True


class KernelCap:
    """The cap on a kernel's own GPU allocations: one per process (:data:`this_process`); a
    test can make others."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cap: int | None = None  # the cap installed (None: none yet)
        self._capped: Any = None  # the allocator.Capped, where RMM holds the cap

    def install(self, share: int) -> int | None:
        """Cap the kernel's own allocations on its GPU at its part of ``share``; a later call
        with another share moves the cap (an elastic share, :mod:`.shares`), what is held
        staying. RMM where it is installed (cuDF and CuPy through it, :mod:`.allocator`), else
        CuPy's pool limit. Returns the cap, or None where neither library is here."""
        with self._lock:
            cap = kernel_part(share)
            if self._cap == cap:
                return self._cap
            if importlib.util.find_spec("rmm") is not None:
                if self._capped is None:
                    self._capped = Capped(cap)
                else:
                    self._capped.set(cap)
            elif "cupy" in sys.modules or importlib.util.find_spec("cupy") is not None:
                import cupy

                cupy.get_default_memory_pool().set_limit(size=cap)
            else:
                return None
            self._cap = cap
            log.info("this kernel's GPU allocations are capped at %s", format_bytes(cap))
            return cap

    def refresh(self) -> None:
        """Give the cap back what buffers made under an earlier cap have freed."""
        if self._capped is not None:
            self._capped.refresh()

    def give_back(self) -> bool:
        """Hand back to CUDA what the kernel's allocator keeps for reuse after it was freed
        (RMM's asynchronous pool, :meth:`.allocator.Capped.give_back`, or CuPy's own pool);
        False where there is nothing of the kind to give back."""
        if self._capped is not None:
            return bool(self._capped.give_back())
        cupy = sys.modules.get("cupy")
        if cupy is not None and self._cap is not None:
            cupy.get_default_memory_pool().free_all_blocks()
            log.info("the GPU memory CuPy kept for reuse in this kernel is given back")
            return True
        return False

    def held(self) -> int:
        """Bytes the kernel's capped allocations hold now (0 without a cap)."""
        if self._capped is not None:
            return int(self._capped.held())
        cupy = sys.modules.get("cupy")
        if cupy is not None and self._cap is not None:
            return int(cupy.get_default_memory_pool().used_bytes())
        return 0

    def cap(self) -> int | None:
        """The cap installed (None: none)."""
        return self._cap


# per process: the cap on this process's own GPU allocations; RMM's resource of a device is
# the process's
this_process = KernelCap()
