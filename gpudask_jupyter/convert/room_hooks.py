"""What the conversions are told of the room of a shared GPU server, instead of importing it: a
hook run before the kernel's own GPU work (the room places the kernel and caps it), and one that
explains an allocation that failed under the kernel's share. The extension tells them when it
is loaded, and ``gpudask_jupyter.to_gpu`` does the first time it is taken from the package
(``gpudask_jupyter._tell_conversions_of_the_room``); a conversion called otherwise does
its GPU work unplaced and explains an out-of-memory as anywhere.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

#: (cause, hint) of an allocation that failed under a share, or None off a shared machine
Explain = Callable[[str], "tuple[str, str] | None"]


def _nothing() -> None:
    return None


def _unexplained(need: str) -> tuple[str, str] | None:
    return None


@dataclass(frozen=True)
class RoomHooks:
    before_gpu_work: Callable[[], None] = _nothing
    out_of_memory: Explain = _unexplained


# per process: the room places and caps the process's own GPU work (a lease names its process),
# so what the conversions are told of it is the process's
_lock = threading.Lock()
_told = RoomHooks()


def tell(hooks: RoomHooks) -> None:
    """From now on, the conversions run ``hooks``."""
    global _told
    with _lock:
        _told = hooks


def forget() -> None:
    """Back to no room (a test's)."""
    tell(RoomHooks())


def before_gpu_work() -> None:
    """Before the kernel's own GPU work: what the room does then, if it was told."""
    _told.before_gpu_work()


def out_of_memory(need: str) -> tuple[str, str] | None:
    """The room's (cause, hint) of an allocation that failed under the kernel's share."""
    return _told.out_of_memory(need)
