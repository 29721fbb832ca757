"""Per cell, in the kernel: the kernel's own GPU work (cuDF, CuPy, ``%%to_gpu`` / ``%%to_cpu``),
and the stretch of time the cell ran, with which ``%gpu_cluster profile`` takes the cluster's
share of the cell from the workers' events.

IPython's ``pre_run_cell`` and ``post_run_cell`` events bracket each cell. The kernel's source
(:mod:`.sources`) is made at the first cell that runs with a GPU library imported, never before:
a kernel that does not use the GPU gets no CUPTI and no NVML from this. Readings are joined to a
cell when asked (a sample of NVML comes after the cell it belongs to). Bytes that
``%%to_gpu`` / ``%%to_cpu`` moved are noted by the magic itself, so they are counted whatever the
source (NVML gives no bytes; where CUPTI also counts them, the magic's figure is used, not both).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from .. import config
from .memory_peaks import Peaks
from .sources import Choice, Source, choose
from .timeline import Busy, Copy, TaskRun, Usage, attribute

log = logging.getLogger(__name__)

#: cells remembered for ``%gpu_cluster profile``
KEPT = 200
#: libraries whose import means the kernel computes on a GPU
GPU_LIBRARIES = ("cupy", "cudf", "rmm", "numba.cuda", "torch")


@dataclass(slots=True)
class Cell:
    number: int
    start: float
    stop: float | None = None
    peak: int | None = None
    moved: Usage = field(default_factory=Usage)
    """Bytes a ``%%to_gpu`` / ``%%to_cpu`` of this cell moved, as it reported them."""


class CellLog:
    """The kernel's cells and GPU readings. ``wanted``: a source to ask for (default: the
    ``gpu-time`` option as it is when the first GPU cell runs); ``make_source`` replaces the
    choice (a test's stand-in)."""

    def __init__(
        self,
        wanted: str | None = None,
        make_source: Any = None,
    ) -> None:
        self.wanted = wanted
        self._make_source = make_source
        self._lock = threading.Lock()
        self.cells: deque[Cell] = deque(maxlen=KEPT)
        self.source: Source | None = None
        self.reason = "the kernel has not used a GPU library yet"
        self._tried = False
        self._peaks = Peaks()
        self._busy: list[Busy] = []
        self._copies: list[Copy] = []

    # -- IPython's events ----------------------------------------------------------------------

    def pre_run_cell(self, info: Any = None) -> None:
        if not self._tried and (self._make_source is not None or _uses_gpu()):
            self._start_source()
        with self._lock:  # numbered at its end: IPython's result carries the number
            self.cells.append(Cell(0, time.time()))
        self._peaks.begin()

    def post_run_cell(self, result: Any = None) -> None:
        with self._lock:
            if not self.cells or self.cells[-1].stop is not None:
                return
            cell = self.cells[-1]
            cell.stop = time.time()
            number = getattr(result, "execution_count", None)
            cell.number = number if isinstance(number, int) else 0
        cell.peak = self._peaks.end()
        self._read()

    def note_moved(self, direction: str, nbytes: int) -> None:
        """A ``%%to_gpu`` (``direction`` "htod") or ``%%to_cpu`` ("dtoh") of the running cell
        moved ``nbytes``."""
        with self._lock:
            if not self.cells:
                return
            moved = self.cells[-1].moved
            if direction == "htod":
                moved.htod += nbytes
            else:
                moved.dtoh += nbytes

    # -- reading -------------------------------------------------------------------------------

    def _start_source(self) -> None:
        self._tried = True
        try:
            if self._make_source is not None:
                choice: Choice = self._make_source()
            else:
                choice = choose(self.wanted or str(config.get("gpu-time")))
        except Exception as err:
            log.warning("the kernel's GPU time cannot be measured", exc_info=True)
            choice = Choice(None, f"GPU time is not measured: {err}")
        self.source, self.reason = choice.source, choice.reason
        if choice.rmm is not None:
            self._peaks = Peaks(choice.rmm)
        log.info("the kernel's GPU time: %s", self.reason)

    def _read(self) -> float:
        """Take the source's new readings; the time they are complete up to."""
        if self.source is None:
            return time.time()
        try:
            reading = self.source.read()
        except Exception:
            log.warning("the kernel's GPU time was not read", exc_info=True)
            return time.time()
        horizon = time.time() - 3600
        with self._lock:
            self._busy = [b for b in self._busy if b.end > horizon] + reading.busy
            self._copies = [c for c in self._copies if c.start > horizon] + reading.copies
        return reading.covered

    def usage(self, cell: Cell, patience: float = 3.0) -> Usage:
        """The kernel's own GPU time and bytes in ``cell``; waits (at most ``patience``
        seconds) for the source to cover the cell's end."""
        stop = cell.stop if cell.stop is not None else time.time()
        deadline = time.monotonic() + patience
        while self._read() < stop and time.monotonic() < deadline:
            time.sleep(0.05)
        run = TaskRun(str(cell.number), "cell", None, cell.start, stop)
        with self._lock:
            found = attribute([run], self._busy, self._copies).by_task[run.key]
        if cell.moved.htod or cell.moved.dtoh:  # the magic's own count, not CUPTI's as well
            found.htod, found.dtoh = cell.moved.htod, cell.moved.dtoh
        return found

    def last(self) -> Cell | None:
        """The last finished cell (from inside a cell: the one before it)."""
        with self._lock:
            done = [c for c in self.cells if c.stop is not None]
        return done[-1] if done else None

    def find(self, number: int) -> Cell | None:
        with self._lock:
            for cell in reversed(self.cells):
                if cell.number == number and cell.stop is not None:
                    return cell
        return None


def _uses_gpu() -> bool:
    return any(name in sys.modules for name in GPU_LIBRARIES)
