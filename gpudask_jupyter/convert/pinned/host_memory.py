"""Fresh host memory for what %%to_cpu brings back: on huge pages, faulted in by the copy.

Every byte that crosses device→host lands in newly allocated memory, which the kernel must fault
in and zero before the copy out of the pinned ring can fill it: two passes of the CPU over every
byte, and with 4 KiB pages one fault (a trap into the kernel) per 4 KiB. Two things make the
first pass cheaper:

- **Huge pages.** A large destination is an anonymous private mapping whose data starts on a
  2 MiB boundary, advised ``MADV_HUGEPAGE``: one fault per 2 MiB instead of 512. (NumPy's own
  allocator already advises huge pages for arrays of 4 MiB and more, but its data does not start
  on a 2 MiB boundary and it depends on malloc's choices; this one is explicit.) Where the host
  has transparent huge pages switched off, destinations are plain ``numpy.empty`` arrays.
- **Faulting ahead** (off by default). :func:`prefault` asks the kernel to fault a range in for
  writing (``MADV_POPULATE_WRITE``, Linux 5.14) without writing it from user space. The copy
  threads can call it on a piece's destination right after queuing that piece's DMA, so that the
  faults run while the DMAs are in flight. Faulting in by writing is faster than by
  ``MADV_POPULATE_WRITE``, and so is device→host as a whole without it (``benchmarks/transfer.py``
  compares both; the README has the figures), so the copy out of the pinned ring faults the
  pages in itself, one huge page per piece, which it then fills while the zeroed page is still in
  the core's cache; ``Policy(prefault=True)`` keeps the other way for hosts where it pays.

The arrays are ordinary writeable NumPy arrays whose ``base`` (through a memoryview) is the
``mmap`` object: the mapping lives exactly as long as the array or any view of it, and is
unmapped when the last one goes. Pickling, ``np.shares_memory`` and pandas' ``copy=False``
treat them as any other array; like any view, they cannot be resized in place.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import math
import mmap
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

log = logging.getLogger(__name__)

PAGE = mmap.PAGESIZE
HUGE_PAGE = 2 * 2**20
# glibc's malloc serves requests below its largest mmap threshold (32 MiB) from its heap too,
# where memory freed earlier is reused already faulted in: a fresh mapping would be slower there
MIN_BYTES = 32 * 2**20
THP_SETTING = "/sys/kernel/mm/transparent_hugepage/enabled"
_MADV_POPULATE_WRITE = 23  # linux/mman.h, not in Python's mmap module before 3.13

Pages = Literal["huge", "small", "numpy"]


@dataclass(frozen=True)
class Policy:
    """How destinations are allocated and faulted in (the benchmark compares the choices).

    ``pages``: ``huge`` maps them 2 MiB-aligned with ``MADV_HUGEPAGE``, ``small`` maps them with
    ``MADV_NOHUGEPAGE``, ``numpy`` leaves them to ``numpy.empty`` (the path before huge pages).
    ``prefault``: whether the copy threads fault destinations in ahead of the copy.
    """

    pages: Pages = "huge"
    prefault: bool = False
    min_bytes: int = MIN_BYTES


# per process: pinned host memory is the process's: CUDA pins pages per process
policy = Policy()


@contextlib.contextmanager
def using(**changes: Any) -> Iterator[Policy]:
    """Run the body under a changed :data:`policy` (for the benchmark and the tests)."""
    global policy
    previous = policy
    policy = replace(policy, **changes)
    try:
        yield policy
    finally:
        policy = previous


def huge_pages_setting() -> str:
    """The host's transparent huge page mode (``always``, ``madvise``, ``never``), or
    ``unavailable`` where the kernel does not say."""
    try:
        with open(THP_SETTING) as settings:
            text = settings.read()
    except OSError:
        return "unavailable"
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else "unavailable"


@functools.cache
def huge_pages_available() -> bool:
    """Whether ``MADV_HUGEPAGE`` can give huge pages here (looked up once per process)."""
    setting = huge_pages_setting()
    if setting in ("always", "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
        log.debug("transparent huge pages: %s; large %%to_cpu destinations use them", setting)
        return True
    log.debug(
        "transparent huge pages are %s on this host: %%to_cpu destinations use numpy.empty",
        setting,
    )
    return False


def _pages_for(nbytes: int, dtype: Any) -> Pages:
    if policy.pages == "numpy" or nbytes < max(1, policy.min_bytes) or dtype.hasobject:
        return "numpy"
    if policy.pages == "huge" and not huge_pages_available():
        return "numpy"
    return policy.pages


def map_fresh(nbytes: int, huge: bool) -> tuple[mmap.mmap, int]:
    """A private anonymous mapping with room for ``nbytes`` from a 2 MiB-aligned ``offset``;
    returns (mapping, offset). Nothing of it is faulted in yet.

    The whole 2 MiB pages of that room are advised ``MADV_HUGEPAGE`` (``huge``) or
    ``MADV_NOHUGEPAGE``; the partial page at the end and the slack before the aligned start are
    left alone, so no huge page is ever made of memory the array does not use. Private, not
    shared: the kernel's huge page setting for anonymous memory applies to private mappings only.
    """
    length = math.ceil(nbytes / PAGE) * PAGE + HUGE_PAGE
    prot = mmap.PROT_READ | mmap.PROT_WRITE
    mapping = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=prot)
    view = ctypes.c_char.from_buffer(mapping)
    address = ctypes.addressof(view)
    del view  # an exported buffer would keep the mapping from being closed
    offset = -address % HUGE_PAGE
    whole = nbytes - nbytes % HUGE_PAGE
    advice = getattr(mmap, "MADV_HUGEPAGE" if huge else "MADV_NOHUGEPAGE", None)
    if whole and advice is not None:
        try:
            mapping.madvise(advice, offset, whole)
        except OSError:
            log.debug("madvise(%s) of a %d-byte destination failed", advice, whole, exc_info=True)
    return mapping, offset


def empty(shape: tuple[int, ...], dtype: Any, order: Literal["C", "F"] = "C") -> Any:
    """An uninitialised NumPy array, like ``numpy.empty``; a large one lies in a fresh mapping
    of its own, on huge pages where the host has them (see the module's docstring)."""
    import numpy as np

    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    pages = _pages_for(nbytes, dtype)
    if pages == "numpy":
        return np.empty(shape, dtype=dtype, order=order)
    mapping, offset = map_fresh(nbytes, huge=pages == "huge")
    return np.ndarray(shape, dtype=dtype, buffer=mapping, offset=offset, order=order)


def _load_madvise() -> Callable[[int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):
        log.debug("no madvise in this process's C library", exc_info=True)
        return None
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    madvise.restype = ctypes.c_int
    return madvise  # type: ignore[no-any-return]


@functools.cache
def _populate() -> Callable[[int, int, int], int] | None:
    """libc's ``madvise`` where ``MADV_POPULATE_WRITE`` works (tried once on a page of its own),
    else None. A ctypes call releases the GIL, so copy threads fault in parallel."""
    madvise = _load_madvise()
    if madvise is None:
        return None
    probe = mmap.mmap(-1, PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    view = ctypes.c_char.from_buffer(probe)
    try:
        if madvise(ctypes.addressof(view), PAGE, _MADV_POPULATE_WRITE) != 0:
            code = ctypes.get_errno()
            log.debug(
                "MADV_POPULATE_WRITE is not available (%s): %%to_cpu destinations are faulted "
                "in by the copy itself",
                os.strerror(code),
            )
            return None
    finally:
        del view
        probe.close()
    return madvise


def prefault_available() -> bool:
    """Whether :func:`prefault` can fault memory in here (``MADV_POPULATE_WRITE``)."""
    return _populate() is not None


def prefault(address: int, nbytes: int) -> None:
    """Fault ``[address, address + nbytes)`` in for writing, in the kernel, without changing a
    byte of it (the pages around the range's ends included). Only a speed-up: where the kernel
    cannot, the copy that follows faults the pages in itself."""
    if not policy.prefault or nbytes <= 0:
        return
    madvise = _populate()
    if madvise is None:
        return
    start = address - address % PAGE
    length = math.ceil((address + nbytes - start) / PAGE) * PAGE
    if madvise(start, length, _MADV_POPULATE_WRITE) != 0:
        code = ctypes.get_errno()
        log.debug("faulting in %d bytes ahead of a copy failed: %s", length, os.strerror(code))
