"""The pinned ring's shape, and the pieces its copy threads take in turn (see :mod:`.staging`).

The ring is small on purpose (:func:`shape`): two buffers of at most 4 MiB per copy thread, so
that it stays in the CPU's last-level cache and the memory bus carries only the user's bytes, and
never larger than the ``pinned-buffer`` budget.
Device→host a piece is one huge page (2 MiB) of the destination, which the kernel zeroes and the
copy fills while it is still in the core's cache. Smaller pieces lose: the per-piece work in
Python, under the GIL, then outweighs the copy. ``benchmarks/transfer.py --sweep`` measures the
choice; the README's performance section has the figures.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from .host_memory import HUGE_PAGE

MiB = 2**20
# a buffer: pieces smaller than this spend more of their time in Python (under the GIL) than in
# their copy and their DMA; larger ones make the ring outgrow the CPU's cache
_CHUNK = 4 * MiB
_GOOD_CHUNK = MiB  # below this, fewer threads with larger buffers beat more threads
_ALIGN = 64 * 1024
_DEPTH = 2  # buffers per thread: one filling or draining while the other's DMA runs
# device→host, a piece is one huge page of the destination: zeroed by the kernel and filled by
# the copy while it is still in the core's cache
_DOWN_PIECE = HUGE_PAGE


@dataclass(frozen=True)
class Shape:
    """A ring: ``threads`` copy threads with ``depth`` buffers of ``chunk`` bytes each."""

    threads: int
    depth: int
    chunk: int

    @property
    def nbytes(self) -> int:
        return self.threads * self.depth * self.chunk


def shape(capacity: int, threads: int) -> Shape | None:
    """The ring for a pinned budget of ``capacity`` bytes and up to ``threads`` copy threads:
    two buffers per thread, of at most 4 MiB, so that the whole ring stays small enough to live
    in the CPU's last-level cache. The budget is a bound, never exceeded (on a shared server it
    is what each kernel may lock of the host's memory): a small budget gets fewer threads before
    it gets buffers under 1 MiB, and None when not even one thread's two buffers of 64 KiB fit
    (then nothing is pinned, and copies take the library's own way)."""

    def chunk_for(n: int) -> int:
        chunk = min(_CHUNK, capacity // (n * _DEPTH))
        return chunk - chunk % _ALIGN

    threads = max(1, threads)
    if chunk_for(threads) < _GOOD_CHUNK:
        threads = max(1, min(threads, capacity // (_DEPTH * _GOOD_CHUNK)))
    chunk = chunk_for(threads)
    if chunk < _ALIGN:
        return None
    return Shape(threads, _DEPTH, chunk)


def piece_size(chunk: int, to_device: bool) -> int:
    """Bytes a copy thread moves at a time in this direction, with buffers of ``chunk`` bytes."""
    return chunk if to_device else min(chunk, _DOWN_PIECE)


@dataclass(frozen=True)
class Segment:
    """``nbytes`` to copy between host address ``host`` and device address ``device``."""

    host: int
    device: int
    nbytes: int


class PieceQueue:
    """The job's next piece (host address, device address, size) for whichever thread asks."""

    def __init__(self, segments: Sequence[Segment], chunk: int) -> None:
        self._segments = [s for s in segments if s.nbytes > 0]
        self._chunk = chunk
        self._index = 0
        self._offset = 0
        self._lock = threading.Lock()
        self.count = sum(math.ceil(s.nbytes / chunk) for s in self._segments)

    def next(self) -> tuple[int, int, int] | None:
        with self._lock:
            if self._index >= len(self._segments):
                return None
            segment = self._segments[self._index]
            offset = self._offset
            size = min(self._chunk, segment.nbytes - offset)
            self._offset += size
            if self._offset >= segment.nbytes:
                self._index, self._offset = self._index + 1, 0
            return segment.host + offset, segment.device + offset, size

    def cancel(self) -> None:
        with self._lock:
            self._index = len(self._segments)
