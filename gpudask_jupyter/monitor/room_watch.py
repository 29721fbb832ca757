"""The room of a shared GPU server, read for the frames every few seconds on the sampling thread.

The host says how to read it (``Monitor(sources, room=...)``): a function of the time that
returns, for each frame key, the room as that key's viewer may see it, or None where there is
no room. Reading it costs more than a tick (the lease files, NVML's process list, each kernel's
child processes) and it changes slowly (a lease's last work is written every 30 s at most), so
it is read at most every :data:`READ_EVERY` seconds, on the monitor's own thread like everything
else the monitor reads. A failure is logged and said in the frames' messages, in words; the
frames carry no room until a reading succeeds.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

from ..schema.frame import RoomInfo

log = logging.getLogger(__name__)

READ_EVERY = 5.0
"""Seconds between two readings of the room."""

RoomParts = Callable[[str], RoomInfo]
RoomRead = Callable[[float], RoomParts | None]
"""A reading of the room at a time (seconds since the epoch): each frame key's part, or None."""


class RoomWatch:
    """The last reading of the room, renewed by :meth:`tick` at most every ``every`` seconds."""

    def __init__(self, read: RoomRead | None, every: float = READ_EVERY) -> None:
        self._read = read
        self._every = every
        self._parts: RoomParts | None = None
        self._last = -math.inf
        self.problem = ""
        """Why the room cannot be read now, in words ("" when it can)."""
        self.reads = 0
        self._part_failed = False

    def tick(self) -> None:
        """Read the room again if the last reading is ``every`` seconds old (the sampler's
        tick calls this, on the monitor's thread)."""
        if self._read is None or time.monotonic() - self._last < self._every:
            return
        self._last = time.monotonic()
        self.reads += 1
        try:
            parts = self._read(time.time())
        except Exception as err:
            problem = f"The room cannot be read now ({type(err).__name__}: {err}); see the log."
            level = logging.DEBUG if problem == self.problem else logging.WARNING
            log.log(level, "reading the room failed", exc_info=True)
            self._parts, self.problem = None, problem
            return
        self._parts, self.problem = parts, ""

    def part(self, key: str) -> RoomInfo | None:
        """The room as the viewer of frame key ``key`` may see it; None where there is none."""
        parts = self._parts
        if parts is None:
            return None
        try:
            return parts(key)
        except Exception:  # a view without its room is still a view
            level = logging.DEBUG if self._part_failed else logging.WARNING
            log.log(level, "the room's part of a frame failed", exc_info=True)
            self._part_failed = True
            return None
