"""A student's worker on an elastic share: the worker's part of its kernel's share, followed.

A worker's GPU allocations are capped by a resource its own process installs (:mod:`.allocator`),
not by dask-cuda's fixed pool limit, because an elastic share (:mod:`.shares`) moves as students
come and go. The worker finds its kernel's lease in the room (its kernel is its parent process:
the nannies live in the kernel), installs the cap as it starts, before any task, and looks again
every :data:`EVERY` seconds at the share its kernel found: the kernel measures the room, and its
worker, of the same account, trusts its own kernel's figure and nobody else's. dask-cuda's
spilling to host memory moves with the cap, so that a large computation spills before it fails.
Workers of a planned (fixed) share keep dask-cuda's own cap, set as they were made.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ...lifecycle.periodic import Periodic

log = logging.getLogger(__name__)

#: seconds between two looks at the room
EVERY = 1.0


class WorkerShare:
    """Follows the share of the kernel whose worker this process is."""

    def __init__(self, worker: Any, directory: Path) -> None:
        from .leases import RoomDir

        self.worker = worker
        self.room = RoomDir(directory)
        self.capped: Any = None

    def step(self) -> bool:
        """Cap the worker at its part of the share its kernel last found; False when its
        kernel holds no elastic lease here (then the worker is left as it is)."""
        import importlib.util

        from ... import compat
        from . import caps

        if importlib.util.find_spec("rmm") is None:  # a CPU worker (the room's test seam)
            return False
        own = [
            lease
            for lease in self.room.leases()
            if lease.pid == os.getppid() and lease.uid == os.getuid()
        ]
        if not own or not own[0].elastic:
            return False
        part = caps.worker_part(own[0].smallest.share, max(1, len(own[0].workers)))
        if self.capped is None:
            import rmm

            from .allocator import Capped

            self.capped = Capped(part, upstream=rmm.mr.get_current_device_resource())
        elif part != self.capped.cap:
            self.capped.set(part)
        else:
            self.capped.refresh()
        if not compat.set_device_spill_limit(self.worker, int(part * caps.SPILL_AT)):
            log.debug("this worker does not spill device memory: its cap alone holds")
        return True


def start(worker: Any) -> Periodic | None:
    """From the workers' preload: cap this worker where its kernel holds an elastic share, and
    keep following it; None elsewhere (no room here, or a planned share)."""
    from ... import config

    directory = Path(str(config.get("room-dir")))
    if not directory.is_dir():
        return None
    follower = WorkerShare(worker, directory)
    if not follower.step():
        return None
    following = Periodic(
        "gpudask-worker-share", EVERY, follower.step, "cannot follow this worker's share"
    )
    following.start()
    return following
