"""What closes when (:mod:`.closers`: what %unload_ext closes, registered by the code that started
it): the kernel's shutdown request and SIGTERM (:mod:`.shutdown`), Ctrl-C held to a command's
checkpoints (:mod:`.interrupts`), the process that removes what a kernel left once it ended
(:mod:`.undertaker`; what it removes is :mod:`..remains`), the threads that run every few
seconds (:mod:`.periodic`).
"""

from __future__ import annotations

from .closers import (
    CLUSTER,
    FIRST,
    MEMORY,
    VIEWS,
    Stage,
    drop,
    ending,
    mark_ending,
    on_unload,
    unload,
)

__all__ = [
    "CLUSTER",
    "FIRST",
    "MEMORY",
    "VIEWS",
    "Stage",
    "drop",
    "ending",
    "mark_ending",
    "on_unload",
    "unload",
]
