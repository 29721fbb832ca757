"""The Monitor, which samples GPUs and clusters on its own thread and hands out Frames
(:mod:`.service`), and its parts: who wants frames (:mod:`.consumers`), the thread and one tick
(:mod:`.sampling`), the GPUs (:mod:`.local_gpus`), each cluster (:mod:`.trackers`), the room
(:mod:`.room_watch`), a frame from what they found (:mod:`.assembly`).
"""

from __future__ import annotations

from .assembly import assemble
from .consumers import Consumers
from .cursor import BadCursor, Cursor
from .room_watch import RoomRead
from .sampling import THREAD_NAME, Sampler, SamplingThread
from .service import (
    Monitor,
)
from .trackers import Source

__all__ = [
    "THREAD_NAME",
    "BadCursor",
    "Consumers",
    "Cursor",
    "Monitor",
    "RoomRead",
    "Sampler",
    "SamplingThread",
    "Source",
    "assemble",
]
