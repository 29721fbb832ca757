"""The cluster as ``--distribute`` and ``--gather`` see it, and waiting on its workers.

Which workers share this machine is not decided by host name (a container, a second user or a
port forward would fool it): the kernel writes a random token into an owner-only file in its
shared memory, and a worker is local when it can read that token back. Only then can it open
the kernel's segments. Each worker also says whether it could hold GPU partitions.

Waiting on the workers is bounded by their liveness: a task restricted to a worker that died
would wait forever, so the wait checks, between short waits, that every worker it depends on is
still in the cluster and still sends heartbeats (a stopped or frozen process stays in the
cluster for minutes), and fails with a sentence naming the worker otherwise. How long a silent
worker is waited for is the ``worker-timeout`` option, which the sentence names.
"""

from __future__ import annotations

import importlib.util
import logging
import secrets
import sys
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .... import compat, config
from ....errors import ClusterError, is_out_of_memory
from ....lifecycle import interrupts
from ....monitor import heartbeat
from ...failures import PartitionError
from .. import shared_memory
from ..worker import tasks as worker_tasks

log = logging.getLogger(__name__)

NO_CLUSTER = "start or attach a cluster first: %gpu_cluster start"
PAUSE_GRACE = 10.0  # seconds a needed worker may stay paused before the transfer gives up
_POLL = 0.5


def worker_timeout() -> float:
    """Seconds a silent worker is waited for (the ``worker-timeout`` option)."""
    return float(config.get("worker-timeout"))


def default_client(what: str) -> Any:
    """The Dask client this kernel uses (``distributed.default_client()``)."""
    try:
        from distributed import default_client as current
    except ImportError:
        raise ClusterError(f"{what} needs distributed, which is not installed") from None
    try:
        return current()
    except ValueError:
        raise ClusterError(f"{what} needs a Dask cluster and there is none: {NO_CLUSTER}") from None


@dataclass(frozen=True)
class WorkerView:
    address: str
    local: bool  # on this machine, and can open the kernel's shared memory
    package: bool  # can run this package's tasks (see :mod:`..worker.tasks`)
    no_gpu: Mapping[str, str | None]  # "frames" / "arrays" → why no GPU partitions (None: can)
    gpu: str | None = None  # a local worker's GPU (:func:`..device_blocks.identity`)


class Failed(Exception):
    """A transfer failed on the cluster; ``cause`` is the sentence for the user, ``kind`` says
    whether a worker "left", ran out of "memory", or raised an "error"."""

    def __init__(self, cause: str, error: BaseException | None = None, kind: str = "error"):
        super().__init__(cause)
        self.cause, self.error, self.kind = cause, error, kind


def workers_now(client: Any) -> dict[str, dict[str, Any]]:
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # distributed before the n_workers argument
        info = client.scheduler_info()
    found: dict[str, dict[str, Any]] = info.get("workers", {})
    return found


def _foreign(address: str, identity: dict[str, Any], why: BaseException | None) -> WorkerView:
    """A worker that cannot run this package's tasks: GPU or not, from its heartbeat."""
    log.debug("worker %s cannot run gpudask tasks: %r", address, why)
    no = None if heartbeat.reported_gpu(identity) is not None else "its heartbeat reports no GPU"
    return WorkerView(address, False, False, {"frames": no, "arrays": no})


def survey(client: Any, segments: shared_memory.Segments | None) -> list[WorkerView]:
    """Every worker of the cluster, local or not, GPU or not (``segments``: where the token
    file goes; None when this machine has no usable shared memory)."""
    token = secrets.token_hex(16)
    path = ""
    if segments is not None:
        path = segments.create(".probe")
        with shared_memory.opened(path, writable=True) as fd:
            shared_memory.write_at(fd, token.encode(), 0)
    try:
        found = compat.run_on_workers(client, worker_tasks.probe, worker_timeout(), path, token)
    except TimeoutError:
        raise ClusterError(
            f"the cluster's workers did not answer within {worker_timeout():g} s (the "
            "worker-timeout option); check them with %gpu_cluster status"
        ) from None
    finally:
        if segments is not None:
            segments.remove(path)
    if not found:
        raise ClusterError(f"the cluster has no workers; {NO_CLUSTER} or scale it up")
    identities: dict[str, dict[str, Any]] = {}
    views = []
    for address, answer in sorted(found.items()):
        if isinstance(answer, dict):
            no_gpu = {"frames": answer["frames"], "arrays": answer["arrays"]}
            local = bool(answer["local"]) and bool(path)
            gpu = answer.get("gpu") if local else None
            views.append(WorkerView(address, local, True, no_gpu, gpu))
            continue
        identities = identities or workers_now(client)
        why = answer if isinstance(answer, BaseException) else None
        views.append(_foreign(address, identities.get(address, {}), why))
    return views


KERNEL_NEEDS = {"frames": ("cudf", "dask_cudf"), "arrays": ("cupy",)}


def why_not_gpu(views: Sequence[WorkerView], kind: str) -> str | None:
    """Why partitions of ``kind`` ("frames" or "arrays") cannot live on the workers' GPUs."""
    for view in views:
        reason = view.no_gpu.get(kind)
        if reason:
            return f"worker {view.address}: {reason}"
    for module in KERNEL_NEEDS[kind]:
        if module not in sys.modules and importlib.util.find_spec(module) is None:
            return f"the kernel cannot import {module}, which a GPU collection needs"
    return None


def _failure(future: Any, where: str | None) -> Failed:
    """Why ``future`` failed, as a sentence; ``where``: the worker it was pinned to, if any."""
    place = f"on worker {where}" if where else "on the cluster"
    error: BaseException | None = None
    try:
        error = future.exception(timeout=worker_timeout())
    except Exception as err:  # a cancelled or lost future has no exception of its own
        log.debug("no exception for %s", future.key, exc_info=True)
        return Failed(f"a task {place} did not finish ({future.status}: {err})", err, "left")
    text = f"{type(error).__name__}: {error}"
    memory = error is not None and is_out_of_memory(error)
    kind = "memory" if memory else "error"
    if isinstance(error, PartitionError):
        return Failed(f"{place}: {error}", error, kind)
    if memory and where:
        return Failed(f"worker {where} ran out of memory ({text})", error, kind)
    return Failed(f"{place}: {text}", error, kind)


def left(address: str) -> str:
    return (
        f"worker {address} left the cluster during the transfer "
        "(it died, was killed, or ran out of memory)"
    )


class _Liveness:
    """What the waits know of the workers they depend on: since when each one is paused, and
    when its heartbeat (``last_seen``) was last seen to move, on this process's clock."""

    def __init__(self) -> None:
        self.paused: dict[str, float] = {}
        self.beats: dict[str, tuple[Any, float]] = {}

    def check(self, client: Any, needed: Collection[str]) -> None:
        """:class:`Failed` when a worker of ``needed`` has left, has been paused (its memory
        nearly full) for ``PAUSE_GRACE`` seconds, or has sent no heartbeat for the
        ``worker-timeout`` option's seconds."""
        if not needed:
            return
        now, clock = workers_now(client), time.monotonic()
        for address in sorted(needed):
            if address not in now:
                raise Failed(left(address), kind="left")
            identity = now[address]
            if identity.get("status") != "paused":
                self.paused.pop(address, None)
            elif clock - self.paused.setdefault(address, clock) > PAUSE_GRACE:
                raise Failed(
                    f"worker {address} has been paused for {PAUSE_GRACE:g} s: its memory is "
                    "nearly full (Dask pauses a worker above distributed.worker.memory.pause of "
                    "its limit)",
                    kind="memory",
                )
            beat = identity.get("last_seen")
            seen, since = self.beats.get(address, (None, clock))
            if beat != seen:
                self.beats[address] = (beat, clock)
            elif clock - since > worker_timeout():
                raise Failed(
                    f"worker {address} has not answered for {worker_timeout():g} s (the "
                    "worker-timeout option): it may be stopped, frozen or swapped out",
                    kind="left",
                )


def completed(client: Any, futures: Sequence[Any], where: Mapping[str, str]) -> Iterator[Any]:
    """``futures`` as each one finishes; :class:`Failed` when one fails, or when a worker they
    depend on (``where``: future key → worker address; every worker of the cluster when it says
    none) leaves the cluster, stays paused, or stops sending heartbeats."""
    from distributed import wait

    pending = list(futures)
    needed: Collection[str] = set(where.values()) or set(workers_now(client))
    liveness = _Liveness()
    while pending:
        interrupts.checkpoint()
        try:
            with client.as_current():  # wait() finds the client by itself otherwise
                result = wait(pending, timeout=_POLL, return_when="FIRST_COMPLETED")
        except TimeoutError:
            liveness.check(client, needed)
            continue
        for future in result.done:
            if future.status != "finished":
                raise _failure(future, where.get(future.key))
        yield from result.done
        pending = list(result.not_done)


def wait_for(client: Any, futures: Sequence[Any], where: Mapping[str, str]) -> None:
    """Wait until ``futures`` are done (see :func:`completed`)."""
    for _ in completed(client, futures, where):
        pass
