"""The Monitor: samples GPUs and clusters on its own thread and hands out Frames.

One Monitor per process: in a kernel it serves every panel of that kernel, in the Jupyter
server every browser tab. It never runs on the kernel's main thread or the server's event loop:
a long cell does not stop the panel, and the panel holds the GIL only for the few hundred
microseconds a tick takes. It samples at the shortest interval any consumer asked for (clamped)
and keeps the longest history any consumer asked for (clamped, and bounded in count).

Clusters come from a *sources* function called each tick: the kernel's current cluster, or the
registry entries of every kernel for the server. A ClusterTracker per source reads the
scheduler with one call per tick (:mod:`.scheduler_probe`): new task-stream records, progress
per task prefix and the workers with their heartbeat GPU figures, which is how GPUs on other
machines appear.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import compat, config, heartbeat, lifecycle, nvml, scheduler_probe
from .frame import (
    HISTORY_RANGE,
    INTERVAL_RANGE,
    VERSION,
    ClusterInfo,
    DeviceInfo,
    Frame,
    PrefixProgress,
    Processes,
    Sample,
    TaskRect,
    WorkerInfo,
    clamp_history,
    clamp_interval,
)
from .taskstream import SeqBuffer, rectangles

MAX_SAMPLES = math.ceil(HISTORY_RANGE[1] / INTERVAL_RANGE[0]) + 10
MAX_TASKS = 50_000
PCIE_EVERY = 5.0  # seconds: NVML's PCIe counters block for ~20 ms per device and direction
NOTE_SECONDS = 120.0
CALL_TIMEOUT = 5.0

_pickle_registered = False


def _register_probe() -> None:
    global _pickle_registered
    if not _pickle_registered:
        import cloudpickle

        cloudpickle.register_pickle_by_value(scheduler_probe)
        cloudpickle.register_pickle_by_value(compat)  # the probe calls it inside the scheduler
        _pickle_registered = True


def _local_hosts() -> set[str]:
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
class _Note:
    time: float
    text: str


class ClusterTracker:
    """What the monitor knows of one cluster: workers, task stream, progress, notes."""

    def __init__(self, source: Source, epoch: int) -> None:
        self.source = source
        self.epoch = epoch
        self.client: Any = None
        self.state = "running"
        self.message = ""
        self.workers: list[WorkerInfo] = []
        self.remote: dict[str, DeviceInfo] = {}
        self.remote_values: dict[str, list[float | None]] = {}
        self.progress: list[PrefixProgress] = []
        self.tasks: SeqBuffer[TaskRect] = SeqBuffer(MAX_TASKS)
        self.notes: deque[_Note] = deque(maxlen=50)
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
            self.state = "unreachable"
            self.message = f"cannot reach the scheduler at {self.source.address}: {err}"
            self._next_retry = now + 5.0
            return False
        return True

    def poll(
        self, now: float, local_hosts: set[str], local_names: dict[str, str], lock: Any
    ) -> None:
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
            with lock:
                was = self.state
                self.state = "unreachable"
                self.message = (
                    f"the scheduler at {self.source.address} does not answer "
                    f"({type(err).__name__}: {err})"
                )
                if was == "running":
                    self.notes.append(
                        _Note(now, f"lost contact with the scheduler at {self.source.address}")
                    )
            return
        with lock:
            self._apply(now, result, local_hosts, local_names)

    def _apply(
        self, now: float, result: dict[str, Any], local_hosts: set[str], local_names: dict[str, str]
    ) -> None:
        if self.state != "running":
            self.notes.append(_Note(now, f"the scheduler at {self.source.address} answers again"))
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
        )[:50]
        self._read_workers(now, result["workers"], local_hosts, local_names)

    def _read_workers(
        self,
        now: float,
        identities: dict[str, dict[str, Any]],
        local_hosts: set[str],
        local_names: dict[str, str],
    ) -> None:
        workers: list[WorkerInfo] = []
        remote: dict[str, DeviceInfo] = {}
        values: dict[str, list[float | None]] = {}
        for address, identity in identities.items():
            metrics = identity.get("metrics") or {}
            beat = heartbeat.reported_gpu(identity)
            name = str(identity.get("name", address))
            host = str(identity.get("host", ""))
            gpu = None
            if beat is not None:
                device = local_names.get(name) if host in local_hosts else None
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
                    )
                    values[device] = [beat.utilization, beat.memory_used, None, None, None, None]
                gpu = {
                    "device": device,
                    "name": beat.name,
                    "utilization": beat.utilization,
                    "memory_used": beat.memory_used,
                    "memory_total": beat.memory_total,
                }
            workers.append(
                WorkerInfo(
                    address=address,
                    name=name,
                    host=host,
                    nthreads=int(identity.get("nthreads", 0)),
                    memory=metrics.get("memory"),
                    memory_limit=identity.get("memory_limit"),
                    executing=int(metrics.get("executing", 0)),
                    ready=int(metrics.get("ready", 0)),
                    in_memory=int(metrics.get("in_memory", 0)),
                    gpu=gpu,  # type: ignore[typeddict-item]
                )
            )
        current = set(identities)
        for gone in sorted(self._known - current):
            self.notes.append(_Note(now, f"worker {gone} left the cluster"))
        for new in sorted(current - self._known) if self._known else ():
            self.notes.append(_Note(now, f"worker {new} joined"))
        self._known = current
        self.workers = sorted(workers, key=lambda w: w["name"])
        self.remote, self.remote_values = remote, values

    def close(self) -> None:
        if self.source.owns_client and self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close(timeout=2)
        self.client = None


@dataclass
class Subscriber:
    callback: Callable[[], None]
    interval: float
    history: float
    processes: bool = False
    last: float = field(default=0.0)


class Monitor:
    def __init__(self, sources: Callable[[], dict[str, Source]]) -> None:
        self._sources = sources
        self._lock = threading.RLock()
        self._gpu: SeqBuffer[Sample] = SeqBuffer(MAX_SAMPLES)
        self._trackers: dict[str, ClusterTracker] = {}
        self._epochs = itertools.count(1)
        self._subscribers: dict[int, Subscriber] = {}
        self._tokens = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._last_pcie = 0.0
        self._pcie: dict[str, tuple[int | None, int | None]] = {}
        self._processes: Processes | None = None
        self._limits: dict[str, float | None] = {}
        self._error = ""
        self._local_hosts = _local_hosts()
        self.default_interval = clamp_interval(config.get("refresh-interval"))
        self.default_history = clamp_history(config.get("history"))
        self.requests: dict[str, tuple[float, float]] = {}  # consumer -> (interval, when)
        _register_probe()

    # -- consumers ----------------------------------------------------------------------------

    def subscribe(
        self,
        callback: Callable[[], None],
        interval: float | None = None,
        history: float | None = None,
        processes: bool = False,
    ) -> int:
        token = next(self._tokens)
        with self._lock:
            self._subscribers[token] = Subscriber(
                callback,
                clamp_interval(interval or self.default_interval),
                clamp_history(history or self.default_history),
                processes,
            )
        self.start()
        self._wake.set()
        return token

    def update(self, token: int, **changes: Any) -> None:
        with self._lock:
            sub = self._subscribers.get(token)
            if sub is None:
                return
            if "interval" in changes:
                sub.interval = clamp_interval(changes["interval"])
            if "history" in changes:
                sub.history = clamp_history(changes["history"])
            if "processes" in changes:
                sub.processes = bool(changes["processes"])
        self._wake.set()

    def unsubscribe(self, token: int) -> None:
        with self._lock:
            self._subscribers.pop(token, None)
            empty = not self._subscribers
        if empty and not self.requests:
            self.stop()

    def request(self, consumer: str, interval: float) -> None:
        """A polling consumer (a sidebar) asks for samples at ``interval``; kept for 30 s."""
        with self._lock:
            self.requests[consumer] = (clamp_interval(interval), time.monotonic())
        self.start()

    def _prune_requests(self) -> None:
        now = time.monotonic()
        with self._lock:
            self.requests = {k: v for k, v in self.requests.items() if now - v[1] < 30}

    @property
    def interval(self) -> float:
        self._prune_requests()
        with self._lock:
            asked = [s.interval for s in self._subscribers.values()]
            asked += [v[0] for v in self.requests.values()]
        return min(asked) if asked else self.default_interval

    @property
    def history(self) -> float:
        with self._lock:
            asked = [s.history for s in self._subscribers.values()]
        return max(asked) if asked else self.default_history

    # -- the thread ---------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="gpudask-monitor", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        self._stop.set()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        with self._lock:
            for tracker in self._trackers.values():
                tracker.close()
            self._trackers.clear()

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def _idle(self) -> bool:
        """Nobody subscribed and no poll in the last 30 s: sampling would be wasted."""
        self._prune_requests()
        with self._lock:
            return not self._subscribers and not self.requests

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._idle():
                with self._lock:
                    if self._thread is threading.current_thread():
                        self._thread = None
                return
            started = time.monotonic()
            try:
                self.tick()
                self._notify()
                self._error = ""
            except Exception as err:  # keep sampling; the next frame carries the message
                with self._lock:
                    self._error = f"monitor error: {type(err).__name__}: {err}"
            self._wake.wait(max(0.0, self.interval - (time.monotonic() - started)))
            self._wake.clear()

    def _notify(self) -> None:
        now = time.monotonic()
        with self._lock:
            due = [s for s in self._subscribers.values() if now - s.last >= s.interval * 0.95]
            for sub in due:
                sub.last = now
        for sub in due:
            try:
                sub.callback()
            except Exception:  # a broken consumer must not stop the others
                continue

    # -- sampling -----------------------------------------------------------------------------

    def _reconcile(self) -> None:
        sources = self._sources()
        with self._lock:
            for key in list(self._trackers):
                tracker = self._trackers[key]
                if key not in sources or sources[key].token != tracker.source.token:
                    tracker.close()
                    del self._trackers[key]
            for key, source in sources.items():
                if key not in self._trackers:
                    self._trackers[key] = ClusterTracker(source, next(self._epochs))

    def _local_names(self) -> dict[str, str]:
        names: dict[str, str] = {}
        for device in nvml.devices():
            names[device.uuid] = device.uuid
            if not device.is_mig:
                names[str(device.index)] = device.uuid
        return names

    def tick(self) -> None:
        """One round: NVML, then every cluster; safe to call from any thread (tests do)."""
        now = time.time()
        self._reconcile()
        local_names = self._local_names()
        with self._lock:
            trackers = list(self._trackers.values())
            want_processes = any(s.processes for s in self._subscribers.values())
        for tracker in trackers:
            tracker.poll(now, self._local_hosts, local_names, self._lock)
        values: dict[str, list[float | None]] = {}
        if nvml.status().available:
            pcie = now - self._last_pcie >= PCIE_EVERY and self.interval <= PCIE_EVERY
            readings = nvml.sample(pcie=pcie)
            self._limits = {r.uuid: r.power_limit_watts for r in readings}
            if pcie:
                self._last_pcie = now
                self._pcie = {
                    r.uuid: (r.pcie_tx_bytes_per_s, r.pcie_rx_bytes_per_s) for r in readings
                }
            for r in readings:
                tx, rx = self._pcie.get(r.uuid, (None, None))
                values[r.uuid] = [
                    r.utilization,
                    r.memory_used,
                    r.temperature,
                    r.power_watts,
                    tx,
                    rx,
                ]
        for tracker in trackers:
            values.update(tracker.remote_values)
        processes = None
        if want_processes:
            found = nvml.processes()
            processes = Processes(
                own=[
                    {"device": p.uuid, "pid": p.pid, "memory": p.memory_used}
                    for p in found
                    if p.own
                ],
                others=sum(1 for p in found if not p.own),
            )
        with self._lock:
            self._gpu.append(now, Sample(t=now, values=values))
            oldest = now - self.history
            self._gpu.prune(oldest)
            for tracker in trackers:
                tracker.tasks.prune(oldest)
            self._processes = processes

    # -- frames -------------------------------------------------------------------------------

    def frame(
        self, key: str, cursor: str | None = None, history: float | None = None
    ) -> tuple[Frame, str]:
        """The frame for cluster ``key`` since ``cursor`` (None: a snapshot) and the next cursor."""
        history = clamp_history(history or self.history)
        now = time.time()
        with self._lock:
            tracker = self._trackers.get(key)
            epoch = tracker.epoch if tracker is not None else 0
            gpu_seq = task_seq = 0
            snapshot = True
            if cursor:
                try:
                    g, t, e = (int(part) for part in cursor.split("."))
                except ValueError:
                    g = t = e = -1
                if e == epoch and 0 <= g <= self._gpu.seq:
                    gpu_seq, task_seq, snapshot = g, t, False
            samples = self._gpu.window(now - history) if snapshot else self._gpu.since(gpu_seq)
            devices = self._device_list(tracker)
            wanted = {d["id"] for d in devices}
            samples = [
                Sample(t=s["t"], values={k: v for k, v in s["values"].items() if k in wanted})
                for s in samples
            ]
            tasks: list[TaskRect] = []
            cluster: ClusterInfo | None = None
            workers: list[WorkerInfo] = []
            progress: list[PrefixProgress] = []
            messages = self._messages(tracker, now)
            if tracker is not None:
                tasks = (
                    tracker.tasks.window(now - history)
                    if snapshot
                    else tracker.tasks.since(task_seq)
                )
                cluster = ClusterInfo(
                    state=tracker.state,  # type: ignore[typeddict-item]
                    mode=tracker.source.mode,
                    address=tracker.source.address,
                    dashboard=tracker.source.dashboard,
                    message=tracker.message,
                )
                workers, progress = list(tracker.workers), list(tracker.progress)
            state = nvml.status()
            frame = Frame(
                version=VERSION,
                kind="snapshot" if snapshot else "delta",
                time=now,
                interval=self.interval,
                history=history,
                nvml={
                    "available": state.available,
                    "reason": state.reason,
                    "driver": state.driver_version,
                },
                devices=devices,
                samples=samples,
                cluster=cluster,
                workers=workers,
                tasks=tasks,
                progress=progress,
                processes=self._processes,
                messages=messages,
            )
            next_cursor = f"{self._gpu.seq}.{tracker.tasks.seq if tracker else 0}.{epoch}"
        return frame, next_cursor

    def _device_list(self, tracker: ClusterTracker | None) -> list[DeviceInfo]:
        devices = [
            DeviceInfo(
                id=d.uuid,
                label=d.label,
                name=d.name,
                host="",
                mig=d.is_mig,
                memory_total=d.memory_total,
                power_limit=self._limits.get(d.uuid),
            )
            for d in nvml.devices()
        ]
        if tracker is not None:
            devices += list(tracker.remote.values())
        return devices

    def _messages(self, tracker: ClusterTracker | None, now: float) -> list[str]:
        """Notes the structured fields do not carry (the view words NVML's reason, a missing
        or unreachable cluster itself, in terms that fit its host)."""
        messages = [self._error] if self._error else []
        if tracker is not None:
            messages += [n.text for n in tracker.notes if now - n.time < NOTE_SECONDS]
        return messages


# -- the kernel's monitor -----------------------------------------------------------------------

_kernel_monitor: Monitor | None = None
_kernel_lock = threading.Lock()


def _kernel_sources() -> dict[str, Source]:
    import sys

    cluster = sys.modules.get("gpudask_jupyter.cluster")
    session = cluster.current() if cluster is not None else None
    if session is None or not session.alive:
        return {}
    return {
        "kernel": Source(
            token=session,
            client=lambda: session.client,
            owns_client=False,
            mode=session.mode,
            address=session.address,
            dashboard=session.dashboard_link,
        )
    }


def kernel_monitor() -> Monitor:
    global _kernel_monitor
    with _kernel_lock:
        if _kernel_monitor is None:
            _kernel_monitor = Monitor(_kernel_sources)
            lifecycle.on_unload(stop_all, lifecycle.VIEWS)
        return _kernel_monitor


def stop_all() -> None:
    """Stop the kernel's sampler and close its panels (``%unload_ext``)."""
    global _kernel_monitor
    import sys

    widget = sys.modules.get("gpudask_jupyter.widget")
    if widget is not None:
        widget.close_all()
    with _kernel_lock:
        monitor, _kernel_monitor = _kernel_monitor, None
    if monitor is not None:
        monitor.stop()
