"""What the monitor knows of each cluster it follows, read from the scheduler once per tick.

Clusters come from a *sources* function the monitor's owner registers: the kernel's current
cluster for a panel, the registry entries of every kernel for the sidebar. A ClusterTracker per
source asks the scheduler one question per tick (:mod:`.scheduler_probe`): new task-stream
records, progress per task prefix, the workers with their heartbeat figures and the resources
waiting tasks ask of no worker. The question is a call that returns at once (:mod:`.callers`),
so the sampler asks every cluster together and none waits for another.

A tracker's state: "connecting" until its first call ends, then "running" or "unreachable";
"closed" when the kernel's client was closed; "stopped" once its source is gone (the cluster was
stopped, its kernel shut down or restarted). A stopped tracker is asked nothing more but keeps
what it had (task stream, progress, workers) with the time it stopped, until a new cluster
takes its place or its history ages out. A tracker's *epoch* is new for every cluster, so a
consumer's cursor into an earlier cluster's task stream is never mistaken for one into this one.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import logging
import socket
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .. import config
from ..gpu_time import readings as gpu_readings
from ..gpu_time.facts import TOPIC as GPU_TIME_TOPIC
from ..schema.frame import (
    OTHER_COLOR,
    PALETTE,
    ClusterState,
    DeviceInfo,
    DeviceReading,
    GpuTime,
    GpuTimeRow,
    PrefixProgress,
    ResourceWait,
    TaskRect,
    WorkerInfo,
)
from . import callers, scheduler_probe
from .callers import Caller
from .taskstream import SeqBuffer, prefix_color, rectangles
from .workers import memory_by_device, read_workers

log = logging.getLogger(__name__)

MAX_TASKS = 50_000
CALL_TIMEOUT = 5.0
"""Seconds a scheduler has to answer one call (connecting included)."""
CONNECT_TIMEOUT = 3.0
RETRY_SECONDS = 5.0
"""Between attempts to reach a scheduler that did not answer."""
MAX_PROGRESS_ROWS = 50
MAX_GPU_EVENTS = 5000
"""GPU-time events kept: one a second per busy worker, so an hour of history for a worker."""
#: seconds a prefix keeps its colour after its last task: the longest window a view may show
COLOUR_LEASE = config.OPTIONS["history"].clamp(float("inf"))


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
    caller: Callable[[], Caller]
    """Makes the way to ask the scheduler (called once per tracker; connects lazily)."""
    mode: str
    address: str
    dashboard: str | None = None
    ours: Callable[[str], bool] | None = None
    """Whether the worker at an address was started or lent by this kernel; None: all of them
    for a cluster the kernel started (mode "gpu" or "cpu"), none for one it attached to. A kernel
    that joins its own workers to another scheduler passes their addresses here."""
    ended: str = ""
    """Set when the cluster's kernel is known to be gone (why, in words): the tracker stops."""
    stopping: Callable[[], bool] | None = None
    """Whether the cluster is being stopped on purpose (its kernel's ``stop``): a scheduler that
    stops answering then is a stop, not a lost contact to warn about."""
    stopped_at: Callable[[], float | None] | None = None
    """When the cluster's kernel began to stop it, as the kernel noted (None: not known): every
    view of a stopped cluster then gives that one time, not the moment its monitor noticed."""

    def is_ours(self, address: str) -> bool:
        if self.ours is not None:
            return self.ours(address)
        return self.mode in {"gpu", "cpu"}


@dataclass
class Note:
    """Something that happened to the cluster, shown in the frame's messages for a while."""

    time: float
    text: str
    kind: str = ""
    """Notes of one kind replace each other: the workers that came and went, the contact with
    the scheduler. A panel shows where things stand, not a box per event."""


def _changed(addresses: list[str], verb: str) -> str:
    """ "worker tcp://… left the cluster", "3 workers joined (tcp://…, tcp://…, …)"."""
    if len(addresses) == 1:
        return f"worker {addresses[0]} {verb}"
    named = ", ".join(addresses[:2]) + (", …" if len(addresses) > 2 else "")
    return f"{len(addresses)} workers {verb} ({named})"


def _describe(err: BaseException) -> str:
    if isinstance(err, TimeoutError):
        return f"no answer within {CALL_TIMEOUT:g} s"
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


class ClusterTracker:
    """What the monitor knows of one cluster: workers, task stream, progress, notes."""

    def __init__(self, source: Source, epoch: int) -> None:
        scheduler_probe.ship_by_value()
        self.source = source
        self.epoch = epoch
        self.caller: Caller | None = None
        self.state: ClusterState = "connecting"
        self.message = ""
        self.stopped_at: float | None = None
        self.answers = 0
        self.workers: list[WorkerInfo] = []
        self.remote: dict[str, DeviceInfo] = {}
        self.remote_readings: dict[str, DeviceReading] = {}
        self.local_pids: set[int] = set()
        self.cluster_memory: dict[str, int] | None = None
        self.progress: list[PrefixProgress] = []
        self.waiting: list[ResourceWait] = []
        self.tasks: SeqBuffer[TaskRect] = SeqBuffer(MAX_TASKS)
        self.notes: deque[Note] = deque(maxlen=50)
        #: each prefix's colour as the scheduler last gave it (its tasks or its progress)
        self.colors: dict[str, str] = {}
        #: the workers' GPU-time events (:mod:`..gpu_time`), newest last
        self.gpu_events: deque[tuple[float, dict[str, Any]]] = deque(maxlen=MAX_GPU_EVENTS)
        self._events_since = 0.0
        self.pending: concurrent.futures.Future[Any] | None = None
        self._cursor: int | None = None
        self._known: set[str] = set()
        self._next_retry = 0.0

    @property
    def live(self) -> bool:
        return self.stopped_at is None

    def begin(self, now: float) -> concurrent.futures.Future[Any] | None:
        """Ask the scheduler (unless a question is still out, or it is too early to retry)."""
        if not self.live or self.pending is not None or now < self._next_retry:
            return self.pending
        if self.caller is None:
            self.caller = self.source.caller()
        if getattr(self.caller, "closed", False):
            self.state, self.message = "closed", "the cluster's client was closed"
            return None
        poll = callers.shipped("poll")
        self.pending = self.caller.call(
            poll,
            CALL_TIMEOUT,
            cursor=self._cursor,
            slots=len(PALETTE),
            lease=COLOUR_LEASE,
            events=GPU_TIME_TOPIC,
            events_since=self._events_since,
        )
        return self.pending

    def collect(self, now: float, hosts: set[str], local_names: dict[str, str], lock: Any) -> None:
        """Take the scheduler's answer if it came (the buffers change inside ``lock``, so a
        frame built meanwhile never sees half an update)."""
        future = self.pending
        if future is None or not future.done():
            return
        self.pending = None
        try:
            result = future.result()
        except Exception as err:
            log.debug("polling the scheduler at %s failed", self.source.address, exc_info=True)
            with lock:
                self._lost(now, err)
            return
        with lock:
            if self.live:
                self._apply(now, result, hosts, local_names)

    def _lost(self, now: float, err: BaseException) -> None:
        self._next_retry = now + RETRY_SECONDS
        if not self.live:
            return
        if self._stopping():
            self.stop(now, "")
            return
        self.close()  # reconnect on the next attempt
        if self.state == "running":
            self._note(now, f"lost contact with the scheduler at {self.source.address}", "contact")
            self.message = f"the scheduler at {self.source.address} does not answer"
        else:
            self.message = f"cannot reach the scheduler at {self.source.address}"
        self.message += f" ({_describe(err)})"
        self.state = "unreachable"

    def _apply(
        self, now: float, result: dict[str, Any], hosts: set[str], local_names: dict[str, str]
    ) -> None:
        if self.state == "unreachable":
            self._note(now, f"the scheduler at {self.source.address} answers again", "contact")
        self.state, self.message = "running", ""
        self.answers += 1
        self._cursor = int(result["index"])
        for rect in rectangles(result["tasks"]):
            self.tasks.append(rect["stop"], rect)
            if rect["action"] == "compute" and not rect["error"]:
                self.colors[rect["prefix"]] = rect["color"]
        self.colors.update((name, prefix_color(r[5])) for name, r in result["progress"].items())
        self.progress = sorted(
            (
                PrefixProgress(
                    prefix=name,
                    total=r[0],
                    done=r[1],
                    processing=r[2],
                    erred=r[3],
                    running=r[4],
                    color=prefix_color(r[5]),
                )
                for name, r in result["progress"].items()
            ),
            key=lambda p: (p["done"] >= p["total"], p["prefix"]),
        )[:MAX_PROGRESS_ROWS]
        for stamp, msg in result.get("events") or ():
            self.gpu_events.append((float(stamp), msg))
            self._events_since = max(self._events_since, float(stamp))
        waiting = result.get("waiting") or {}
        self.waiting = [ResourceWait(resource=str(k), tasks=int(v)) for k, v in waiting.items()]
        self._read_workers(now, result["workers"], hosts, local_names)

    def _read_workers(
        self,
        now: float,
        identities: dict[str, dict[str, Any]],
        hosts: set[str],
        local_names: dict[str, str],
    ) -> None:
        view = read_workers(identities, hosts, local_names, self.source.is_ours)
        current = set(identities)
        left = sorted(self._known - current)
        joined = sorted(current - self._known) if self._known else []
        if left or joined:
            changes = [_changed(left, "left the cluster")] if left else []
            changes += [_changed(joined, "joined")] if joined else []
            self._note(now, f"{'; '.join(changes)} ({len(current)} now)", "workers")
        self._known = current
        self.workers = view.workers
        self.remote, self.remote_readings = view.remote, view.readings
        self.local_pids = view.local_pids

    def held_memory(self, processes: Iterable[Any] | None) -> None:
        """This cluster's share of each local device, from NVML's process list (None: no list)."""
        if self.live:
            self.cluster_memory = (
                None if processes is None else memory_by_device(self.local_pids, processes)
            )

    def _note(self, now: float, text: str, kind: str) -> None:
        """A note that replaces the earlier one of its kind."""
        self._forget(kind)
        self.notes.append(Note(now, text, kind))

    def _forget(self, kind: str) -> None:
        kept = [note for note in self.notes if note.kind != kind]
        self.notes.clear()
        self.notes.extend(kept)

    def _stopping(self) -> bool:
        stopping = self.source.stopping
        try:
            return stopping is not None and stopping()
        except Exception:
            log.debug("asking whether %s is stopping failed", self.source.address, exc_info=True)
            return False

    def stop(self, now: float, why: str) -> None:
        """The source is gone: ask nothing more, keep the history, say when (as its kernel
        noted it, where it did) and why."""
        self.close()
        self.pending = None
        self.stopped_at = min(now, self._noted_stop() or now)
        self.state = "stopped"
        self._forget("workers")  # who came and went no longer matters once all are gone
        self.message = why or "the cluster was stopped"
        self.remote_readings = {}
        workers = []
        for worker in self.workers:  # new dicts: a frame being sent may hold the old ones
            worker = worker.copy()
            worker["executing"] = 0  # nothing runs on a stopped cluster
            workers.append(worker)
        self.workers = workers
        self.progress = [
            PrefixProgress(
                prefix=p["prefix"],
                total=p["total"],
                done=p["done"],
                processing=0,
                erred=p["erred"],
                running=0,
                color=p["color"],
            )
            for p in self.progress
        ]

    def gpu_time(self, oldest: float) -> GpuTime:
        """GPU time per prefix of the tasks that ended after ``oldest``, each prefix in its
        task stream colour."""
        rows = [
            GpuTimeRow(
                prefix=p.prefix,
                color=self.colors.get(p.prefix, OTHER_COLOR),
                tasks=p.tasks,
                wall=p.wall,
                gpu=p.gpu,
                peak=p.peak,
                htod=p.htod,
                dtoh=p.dtoh,
                shared=p.shared,
            )
            for p in gpu_readings.per_prefix(self.gpu_events, start=oldest)
        ]
        sources = gpu_readings.sources_of(self.gpu_events)
        return GpuTime(rows=rows, source=sources.summary(), measuring=sources.measuring)

    def _noted_stop(self) -> float | None:
        noted = self.source.stopped_at
        try:
            return noted() if noted is not None else None
        except Exception:
            log.debug("reading when %s was stopped failed", self.source.address, exc_info=True)
            return None

    def close(self) -> None:
        caller, self.caller = self.caller, None
        if caller is not None:
            try:
                caller.close()
            except Exception:
                log.debug("closing the connection to %s failed", self.source.address, exc_info=True)


class Trackers:
    """One ClusterTracker per source: replaced when the source's token changes, stopped (its
    history kept) when the source goes, dropped when that history is older than ``history``."""

    def __init__(self, sources: Callable[[], dict[str, Source]]) -> None:
        self._sources = sources
        self._trackers: dict[str, ClusterTracker] = {}
        self._epochs = itertools.count(1)

    def get(self, key: str) -> ClusterTracker | None:
        return self._trackers.get(key)

    def reconcile(self, now: float, history: float, lock: Any) -> bool:
        """Follow what the sources say now; whether any cluster came, went or stopped."""
        sources = self._sources()
        changed = False
        with lock:
            for key, tracker in list(self._trackers.items()):
                source = sources.get(key)
                fresh = source is not None and not source.ended
                if fresh and source is not None and source.token != tracker.source.token:
                    tracker.close()
                    del self._trackers[key]
                elif tracker.live and not fresh:
                    tracker.stop(now, source.ended if source is not None else "")
                elif not tracker.live and now - (tracker.stopped_at or now) > history:
                    del self._trackers[key]
                else:
                    continue
                changed = True
            for key, source in sources.items():
                if key not in self._trackers and not source.ended:
                    self._trackers[key] = ClusterTracker(source, next(self._epochs))
                    changed = True
        return changed

    def live(self) -> list[tuple[str, ClusterTracker]]:
        return [(key, t) for key, t in self._trackers.items() if t.live]

    def close(self) -> None:
        """Let go of every connection; what the trackers hold stays readable."""
        for tracker in self._trackers.values():
            tracker.close()
            tracker.pending = None
