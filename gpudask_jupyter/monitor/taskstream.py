"""The incremental, bounded buffers behind the panel: GPU samples and task-stream rectangles.

Items get increasing sequence numbers, so a consumer that remembers the last number it saw
receives only what is newer (a delta), and a new consumer receives what is still buffered (a
snapshot). Buffers are bounded twice: by count and by age, so a panel left open for hours does
not grow.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from ..schema.frame import ACTION_COLORS, ERROR_COLOR, OTHER_COLOR, PALETTE, TaskRect

T = TypeVar("T")


class SeqBuffer(Generic[T]):
    """A deque of (sequence, time, item), newest last."""

    def __init__(self, maxlen: int) -> None:
        self._items: deque[tuple[int, float, T]] = deque(maxlen=maxlen)
        self.seq = 0

    def __len__(self) -> int:
        return len(self._items)

    def append(self, t: float, item: T) -> None:
        self.seq += 1
        self._items.append((self.seq, t, item))

    def prune(self, oldest: float) -> None:
        """Drop items older than ``oldest`` (they arrive roughly in time order)."""
        while self._items and self._items[0][1] < oldest:
            self._items.popleft()

    def since(self, cursor: int) -> list[T]:
        """Items with a sequence number above ``cursor``, oldest first."""
        newer = []
        for seq, _, item in reversed(self._items):
            if seq <= cursor:
                break
            newer.append(item)
        newer.reverse()
        return newer

    def window(self, oldest: float) -> list[T]:
        return [item for _, t, item in self._items if t >= oldest]


def prefix_color(slot: int) -> str:
    """The colour of the prefix in colour ``slot`` (:func:`.scheduler_probe.colour_slots`;
    -1: every colour is taken, "other")."""
    return PALETTE[slot] if 0 <= slot < len(PALETTE) else OTHER_COLOR


def rectangles(raw: Iterable[Any]) -> list[TaskRect]:
    """TaskRects from the tuples :func:`~.scheduler_probe.poll` returns."""
    out: list[TaskRect] = []
    for worker, thread, start, stop, action, key, prefix, error, slot in raw:
        if worker is None:
            continue
        color = ERROR_COLOR if error else ACTION_COLORS.get(action) or prefix_color(slot)
        out.append(
            TaskRect(
                worker=str(worker),
                thread=int(thread or 0),
                start=float(start),
                stop=float(stop),
                action=action,
                key=key,
                prefix=prefix,
                color=color,
                error=bool(error),
            )
        )
    return out
