"""A consumer's place in the monitor's buffers: what it has received, so the next frame is a delta.

The cursor leaves the process only as text: the sidebar gets it with each frame and sends it
back with the next request; a panel keeps the object. Text that is not a cursor this module wrote
is refused (:class:`BadCursor`), which the server answers with a 400.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TEXT = re.compile(r"[0-9]{1,18}\.[0-9]{1,18}\.[0-9]{1,18}")


class BadCursor(ValueError):
    """Text that is not a cursor (the browser's request was tampered with or garbled)."""


@dataclass(frozen=True)
class Cursor:
    samples: int
    """Sequence number of the last GPU sample sent."""
    tasks: int
    """Sequence number of the last task rectangle sent, in the cluster tracker of ``epoch``."""
    epoch: int
    """The cluster tracker the task numbers belong to (0: no cluster); another one means the
    cluster changed and the consumer needs a snapshot."""

    def encode(self) -> str:
        return f"{self.samples}.{self.tasks}.{self.epoch}"

    @staticmethod
    def validate(text: str) -> None:
        """Raise :class:`BadCursor` unless ``text`` is an encoded cursor."""
        if not _TEXT.fullmatch(text):
            raise BadCursor(f"not a cursor: {text[:40]!r}")

    @classmethod
    def decode(cls, text: str | None) -> Cursor | None:
        """The cursor ``text`` encodes; None for no text (the consumer wants a snapshot)."""
        if not text:
            return None
        cls.validate(text)
        samples, tasks, epoch = (int(part) for part in text.split("."))
        return cls(samples, tasks, epoch)

    def resumes(self, epoch: int, samples_seq: int) -> bool:
        """Whether a delta can follow this cursor: same cluster tracker, and no sample numbers
        from the future (a cursor of a monitor that has since restarted)."""
        return self.epoch == epoch and self.samples <= samples_seq
