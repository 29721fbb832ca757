"""A Dask preload for the workers of a cluster the kernel starts.

Jupyter interrupts a kernel by signalling its whole process group, and a terminal sends Ctrl+C
to the foreground group: both would reach the worker processes too, which die of it, leaving a
cluster without workers after the user merely stopped a cell. Each worker therefore moves to a
process group of its own as it starts. It still ends with the kernel: distributed's worker
processes exit when the pipe from their parent closes, whatever their group.

A worker's stderr is the kernel's, which ipykernel shows in a cell: it goes to the kernel's
Dask log file instead (:mod:`.logs`), where the kernel says it is.

On a shared machine, the worker of a kernel holding a share caps its own GPU allocations and
follows the share (:mod:`.room.worker_share`), or does not start.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from .room import worker_share

log = logging.getLogger(__name__)


def dask_setup(worker: Any) -> None:
    try:
        os.setpgid(0, 0)
    except OSError:  # not allowed here (a session leader): Ctrl+C may then reach the worker
        log.debug("the worker stays in its parent's process group", exc_info=True)
    target = os.environ.get("GPUDASK_WORKER_LOG")  # logs.WORKER_LOG: not imported, kept light
    if target:
        _stderr_to(target)
    _follow_share(worker)


def _stderr_to(target: str) -> None:
    try:
        descriptor = os.open(target, os.O_WRONLY | os.O_APPEND)
    except OSError:  # gone, or not ours: the cell shows it then
        log.debug("the worker's stderr stays the kernel's", exc_info=True)
        return
    os.dup2(descriptor, 2)
    os.close(descriptor)


def _follow_share(worker: Any) -> None:
    """A worker on a share that cannot hold itself to it does not start: the error, in the
    kernel's Dask log and in the start's failure, says why."""
    try:
        worker_share.start(worker)
    except Exception as err:
        log.error("this worker cannot hold itself to its share of the GPU: %s", err)
        raise worker_share.NoCap(
            f"this worker cannot hold itself to its share of the shared GPU: {err}"
        ) from err
