"""What the monitor knows of each cluster it follows, read from the scheduler once per tick.

Clusters come from a *sources* function the monitor's owner registers: the kernel's current
cluster for a panel, the registry entries of every kernel for the sidebar. A ClusterTracker per
source reads the scheduler with one call per tick (:mod:`..scheduler_probe`): new task-stream
records, progress per task prefix and the workers with their heartbeat GPU figures, which is how
GPUs on other machines appear. A tracker's *epoch* is new for every cluster, so a consumer's
cursor into an earlier cluster's task stream is never mistaken for one into this one.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import compat, heartbeat, scheduler_probe
from ..frame import (
    ClusterState,
    DeviceInfo,
    DeviceReading,
    PrefixProgress,
    TaskRect,
    WorkerGpu,
    WorkerInfo,
)
from ..taskstream import SeqBuffer, rectangles

log = logging.getLogger(__name__)

MAX_TASKS = 50_000
CALL_TIMEOUT = 5.0
RETRY_SECONDS = 5.0  # between attempts to connect to a scheduler that did not answer
MAX_PROGRESS_ROWS = 50

_probe_lock = threading.Lock()
_probe_registered = False


def _register_probe() -> None:
    """Ship the probe to the scheduler by value: a scheduler elsewhere need not install us."""
    global _probe_registered
    with _probe_lock:
        if not _probe_registered:
            import cloudpickle

            cloudpickle.register_pickle_by_value(scheduler_probe)
            cloudpickle.register_pickle_by_value(compat)  # the probe calls it in the scheduler
            _probe_registered = True


def local_hosts() -> set[str]:
    """Names and addresses of this machine: a worker on one of them shares our NVML GPUs."""
    hosts = {"127.0.0.1", "::1", "localhost", socket.gethostname(), socket.getfqdn()}
    with contextlib.suppress(OSError):
        hosts.update(socket.gethostbyname_ex(socket.gethostname())[2])
    return hosts


@dataclass
class Source:
    """A cluster to follow. ``token`` changes when the cluster is a different one."""

    token: object
    client: Callable[[], Any]  # returns a connected distributed.Client
    owns_client: bool  # close the client when the source goes away
    mode: str
    address: str
    dashboard: str | None = None


@dataclass
class Note:
    """Something that happened to the cluster, shown in the frame's messages for a while."""

    time: float
    text: str


class ClusterTracker:
    """What the monitor knows of one cluster: workers, task stream, progress, notes."""

    def __init__(self, source: Source, epoch: int) -> None:
        _register_probe()
        self.source = source
        self.epoch = epoch
        self.client: Any = None
        self.state: ClusterState = "running"
        self.message = ""
        self.workers: list[WorkerInfo] = []
        self.remote: dict[str, DeviceInfo] = {}
        self.remote_readings: dict[str, DeviceReading] = {}
        self.progress: list[PrefixProgress] = []
        self.tasks: SeqBuffer[TaskRect] = SeqBuffer(MAX_TASKS)
        self.notes: deque[Note] = deque(maxlen=50)
        self._cursor: int | None = None
        self._known: set[str] = set()
        self._next_retry = 0.0

    def _connect(self, now: float) -> bool:
        if self.client is not None:
            return True
        if now < self._next_retry:
            return False
        try:
            self.client = self.source.client()
        except Exception as err:
            log.debug("cannot connect to the scheduler at %s", self.source.address, exc_info=True)
            self.state = "unreachable"
            self.message = f"cannot reach the scheduler at {self.source.address}: {err}"
            self._next_retry = now + RETRY_SECONDS
            return False
        return True

    def poll(self, now: float, hosts: set[str], local_names: dict[str, str], lock: Any) -> None:
        """Ask the scheduler (outside ``lock``), then update the buffers (inside it), so that a
        frame built meanwhile never sees half an update."""
        if not self._connect(now):
            return
        client = self.client
        if getattr(client, "status", "running") in {"closed", "closing"}:
            with lock:
                self.state, self.message = "closed", "the cluster's client was closed"
            return
        try:
            result = compat.run_on_scheduler(
                client, scheduler_probe.poll, CALL_TIMEOUT, cursor=self._cursor
            )
        except Exception as err:
            log.debug("polling the scheduler at %s failed", self.source.address, exc_info=True)
            with lock:
                self._lost(now, err)
            return
        with lock:
            self._apply(now, result, hosts, local_names)

    def _lost(self, now: float, err: Exception) -> None:
        if self.state == "running":
            self.notes.append(
                Note(now, f"lost contact with the scheduler at {self.source.address}")
            )
        self.state = "unreachable"
        self.message = (
            f"the scheduler at {self.source.address} does not answer ({type(err).__name__}: {err})"
        )

    def _apply(
        self, now: float, result: dict[str, Any], hosts: set[str], local_names: dict[str, str]
    ) -> None:
        if self.state != "running":
            self.notes.append(Note(now, f"the scheduler at {self.source.address} answers again"))
        self.state, self.message = "running", ""
        self._cursor = int(result["index"])
        for rect in rectangles(result["tasks"]):
            self.tasks.append(rect["stop"], rect)
        self.progress = sorted(
            (
                PrefixProgress(prefix=name, total=r[0], done=r[1], processing=r[2], erred=r[3])
                for name, r in result["progress"].items()
            ),
            key=lambda p: (p["done"] >= p["total"], p["prefix"]),
        )[:MAX_PROGRESS_ROWS]
        self._read_workers(now, result["workers"], hosts, local_names)

    def _read_workers(
        self,
        now: float,
        identities: dict[str, dict[str, Any]],
        hosts: set[str],
        local_names: dict[str, str],
    ) -> None:
        workers: list[WorkerInfo] = []
        remote: dict[str, DeviceInfo] = {}
        readings: dict[str, DeviceReading] = {}
        for address, identity in identities.items():
            name = str(identity.get("name", address))
            host = str(identity.get("host", ""))
            local = local_names.get(name) if host in hosts else None
            gpu = _worker_gpu(address, identity, name, host, local, remote, readings)
            workers.append(_worker_info(address, identity, name, host, gpu))
        current = set(identities)
        for gone in sorted(self._known - current):
            self.notes.append(Note(now, f"worker {gone} left the cluster"))
        for new in sorted(current - self._known) if self._known else ():
            self.notes.append(Note(now, f"worker {new} joined"))
        self._known = current
        self.workers = sorted(workers, key=lambda w: w["name"])
        self.remote, self.remote_readings = remote, readings

    def close(self) -> None:
        if self.source.owns_client and self.client is not None:
            try:
                self.client.close(timeout=2)
            except Exception:
                log.debug("closing the client of %s failed", self.source.address, exc_info=True)
        self.client = None


def _worker_gpu(
    address: str,
    identity: dict[str, Any],
    name: str,
    host: str,
    local: str | None,
    remote: dict[str, DeviceInfo],
    readings: dict[str, DeviceReading],
) -> WorkerGpu | None:
    """The worker's GPU from its heartbeats. A GPU that local NVML does not see (``local`` is
    None: another machine's) becomes a device of its own in ``remote``, sampled through the
    heartbeats into ``readings``."""
    beat = heartbeat.reported_gpu(identity)
    if beat is None:
        return None
    device = local
    if device is None:
        device = f"worker:{address}"
        remote[device] = DeviceInfo(
            id=device,
            label=name,
            name=beat.name or "GPU",
            host=host,
            mig=False,
            memory_total=beat.memory_total,
            power_limit=None,
            cluster_memory=None,
        )
        readings[device] = DeviceReading(utilization=beat.utilization, memory_used=beat.memory_used)
    return WorkerGpu(
        device=device,
        name=beat.name,
        utilization=beat.utilization,
        memory_used=beat.memory_used,
        memory_total=beat.memory_total,
    )


def _worker_info(
    address: str, identity: dict[str, Any], name: str, host: str, gpu: WorkerGpu | None
) -> WorkerInfo:
    metrics = identity.get("metrics") or {}
    return WorkerInfo(
        address=address,
        name=name,
        host=host,
        nthreads=int(identity.get("nthreads", 0)),
        memory=metrics.get("memory"),
        memory_limit=identity.get("memory_limit"),
        executing=int(metrics.get("executing", 0)),
        ready=int(metrics.get("ready", 0)),
        in_memory=int(metrics.get("in_memory", 0)),
        gpu=gpu,
        ours=False,
    )


class Trackers:
    """One ClusterTracker per source, replaced when the source's token changes."""

    def __init__(self, sources: Callable[[], dict[str, Source]]) -> None:
        self._sources = sources
        self._trackers: dict[str, ClusterTracker] = {}
        self._epochs = itertools.count(1)

    def get(self, key: str) -> ClusterTracker | None:
        return self._trackers.get(key)

    def reconcile(self, lock: Any) -> list[ClusterTracker]:
        """Follow what the sources say now; the trackers to poll this tick."""
        sources = self._sources()
        with lock:
            for key in list(self._trackers):
                tracker = self._trackers[key]
                if key not in sources or sources[key].token != tracker.source.token:
                    tracker.close()
                    del self._trackers[key]
            for key, source in sources.items():
                if key not in self._trackers:
                    self._trackers[key] = ClusterTracker(source, next(self._epochs))
            return list(self._trackers.values())

    def close(self) -> None:
        for tracker in self._trackers.values():
            tracker.close()
        self._trackers.clear()
