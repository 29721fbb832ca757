"""Tasks that no worker will ever run, failed with a sentence instead of waited for forever.

A worker that cannot unpickle what the scheduler sends it closes, and takes its nanny with it
(dask/distributed#1341): a task's function from a module the workers cannot import (one the
kernel imported from a folder it put on ``sys.path`` after the cluster started, one loaded from
a file under a made-up name) ends every worker it is sent to. The cell that waits for the task
then waits forever, with no worker left and nothing said; ``%gpu_cluster status`` shows 0 workers.

On a cluster this kernel started, a scheduler plugin (the scheduler runs in the kernel) looks
again whenever a worker leaves. Once the cluster has no worker while it was asked for some, and
no nanny of it is alive to bring one back, the tasks waiting for a worker fail with a sentence:
what the workers said as they ended (their log is the kernel's, :mod:`.logs`), what it means,
and what to do. A worker that its nanny respawns (one killed for memory) leaves nothing to do;
nor does ``%gpu_cluster scale 0``, which asks for no worker.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any

from .. import compat
from . import logs

log = logging.getLogger(__name__)

NAME = "gpudask-stranded-tasks"
#: seconds the nannies may take to close, or to bring a worker back, once the last one left
SETTLE = 15.0
#: the states of a task that waits for a worker (distributed queues root tasks while none runs)
WAITING = ("no-worker", "queued")
#: the last bytes of the kernel's Dask log read for what the workers said
LOG_TAIL = 256 * 1024
_ERROR = re.compile(r"^(\w+(?:Error|Exception)): (.+)$")
_MODULE = re.compile(r"No module named '([^']+)'")


def watch(cluster: Any) -> None:
    """Have ``cluster``'s scheduler (in this process) fail its stranded tasks with a sentence."""
    plugin = StrandedTasks(cluster)
    cluster.sync(_add, cluster.scheduler, plugin)


async def _add(scheduler: Any, plugin: Any) -> None:
    scheduler.add_plugin(plugin, name=NAME)


def _plugin_base() -> type:
    from distributed.diagnostics.plugin import SchedulerPlugin

    return SchedulerPlugin


class StrandedTasks(_plugin_base()):  # type: ignore[misc]
    """The scheduler plugin; ``cluster`` is the kernel's ``SpecCluster`` (its nannies and the
    workers it was asked for)."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self._looking: asyncio.Task[None] | None = None

    def remove_worker(self, scheduler: Any, worker: str, *, stimulus_id: str, **kw: Any) -> None:
        if scheduler.workers or (self._looking is not None and not self._looking.done()):
            return
        self._looking = asyncio.ensure_future(self._settle(scheduler))

    async def _settle(self, scheduler: Any) -> None:
        deadline = time.monotonic() + SETTLE
        while time.monotonic() < deadline:
            if scheduler.workers or not self.cluster.worker_spec:
                return  # a worker is back, or none was asked for (scale 0, the stop)
            if not any(_alive(nanny) for nanny in list(self.cluster.workers.values())):
                break
            await asyncio.sleep(0.1)
        else:
            return  # a nanny is still bringing its worker back: it may yet
        keys = [ts.key for ts in list(scheduler.tasks.values()) if ts.state in WAITING]
        if not keys:
            return
        message = sentence(len(self.cluster.worker_spec), what_workers_said())
        failed = compat.fail_unrunnable(scheduler, keys, message)
        log.info("%s (%d task(s) failed)", message, len(failed))


def _alive(nanny: Any) -> bool:
    status = getattr(getattr(nanny, "status", None), "name", "")
    return status not in ("closing", "closed", "failed", "closing_gracefully")


def what_workers_said() -> str | None:
    """The error that follows the last failure to unpickle in the kernel's Dask log, where the
    workers' stderr goes (``ModuleNotFoundError: No module named 'x'``); None without one."""
    path = logs.path()
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - LOG_TAIL))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        log.debug("the kernel's Dask log %s cannot be read", path, exc_info=True)
        return None
    found = None
    after = text.rfind("Failed to deserialize")
    for line in text[after:].splitlines() if after >= 0 else ():
        match = _ERROR.match(line.strip())
        if match:
            found = f"{match.group(1)}: {match.group(2)}"
            break
    return found


def sentence(asked: int, said: str | None) -> str:
    """What the cell that waited for a stranded task says."""
    head = (
        f"No worker is left in this kernel's cluster to run this task: the {asked} worker(s) "
        "ended while it was sent to them, and none is coming back."
    )
    module = _MODULE.search(said or "")
    if module:
        return (
            f"{head} Each worker said, as it ended: {said}. The workers cannot import module "
            f"{module.group(1)!r}, which a task's function or data comes from (a folder put on "
            "sys.path after the cluster started is not on theirs). %gpu_cluster restart starts "
            "them with this kernel's module path of now; a function defined in the notebook "
            "travels with the task."
        )
    if said:
        return (
            f"{head} Each worker said, as it ended: {said}. %gpu_cluster restart starts the "
            "workers again."
        )
    return (
        f"{head} %gpu_cluster status --verbose shows the last lines of the cluster's log; "
        "%gpu_cluster restart starts the workers again."
    )
