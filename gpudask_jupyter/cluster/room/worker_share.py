"""A student's worker on an elastic share: the worker's part of its kernel's share, followed.

A worker's GPU allocations are capped by a resource its own process installs (:mod:`.allocator`),
not by dask-cuda's fixed pool limit, because an elastic share (:mod:`.shares`) moves as students
come and go. The worker finds its kernel's lease in the room (its kernel is its parent, where
the nannies live, or its grandparent, for a worker forked from the kernel's fork server),
installs the cap as it starts, before any task, and looks again every :data:`EVERY` seconds at
the share its kernel found (and at its request to give back the memory its pool keeps cached,
:meth:`.allocator.Capped.give_back`): the kernel measures the room, and its worker, of the same
account, trusts its own kernel's figure and nobody else's. dask-cuda's spilling to host memory
moves with the cap, so that a large computation spills before it fails.
A worker of a planned share holds itself the same way, to the share its lease names. dask-cuda
is asked to leave RMM alone (its set-up, run after this preload, would make a resource of its
own current over the cap); a pool the student asked for is made here, under the cap, and a
resource made current over the cap later is found at the next look and capped again.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from ... import compat, config
from ...lifecycle.periodic import Periodic
from ...machine import availability
from ...machine.processes import descends_from
from . import caps
from .allocator import Capped, pool_upstream
from .leases import RoomDir

log = logging.getLogger(__name__)

#: seconds between two looks at the room
EVERY = 1.0


class WorkerShare:
    """Follows the share of the kernel whose worker this process is, planned or elastic."""

    def __init__(self, worker: Any, directory: Path) -> None:
        self.worker = worker
        self.room = RoomDir(directory)
        self.capped: Any = None
        self.given_back: int | None = None  # the kernel's last request to give back, followed

    def step(self) -> bool:
        """Cap the worker at its part of the share its kernel last found (or was planned);
        False when its kernel holds no lease here (then the worker is left as it is). A GPU
        worker whose kernel holds a lease but that cannot install its cap raises
        :class:`NoCap`: it does not run on a share uncapped."""
        import importlib.util

        me = os.getpid()
        own = [
            lease
            for lease in self.room.leases()
            if lease.uid == os.getuid() and descends_from(me, lease.kernel_pid)
        ]
        if not own:
            return False
        if importlib.util.find_spec("rmm") is None:
            if availability.reason() is not None:  # a CPU worker (stand-in GPUs): nothing to cap
                return False
            raise NoCap("RMM is not installed where the worker runs (the gpu extra brings it)")
        lease = own[0]
        part = caps.worker_part(lease.smallest.share, max(1, len(lease.workers)))
        if self.capped is None:
            upstream = pool_upstream(lease.pool) if lease.pool else None
            self.capped = Capped(part, upstream=upstream)
        elif part != self.capped.cap:
            self.capped.set(part)
        else:
            self.capped.refresh()
        if self.given_back is not None and lease.give_back != self.given_back:
            self.capped.give_back()
        self.given_back = lease.give_back
        if not compat.set_device_spill_limit(self.worker, int(part * caps.SPILL_AT)):
            log.debug("this worker does not spill device memory: its cap alone holds")
        return True


class NoCap(RuntimeError):
    """A worker on a share that cannot hold itself to it."""


def start(worker: Any) -> Periodic | None:
    """From the workers' preload: cap this worker where its kernel holds a share, and keep
    following it; None elsewhere (no room here). :class:`NoCap` where it cannot be capped."""
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
