"""The Frame: one JSON-able schema for what the panel widget and the sidebar draw.

A Monitor (in the kernel for the widget, in the Jupyter server for the sidebar) produces frames;
the view (``labextension/src/view``, bundled into both) consumes them. A consumer keeps a cursor:
its first frame is a *snapshot* (everything still in the buffers), later ones are *deltas* (only
samples and task rectangles newer than the cursor). Lists that are small and change as a whole
(devices, workers, progress, processes, messages) are sent whole in every frame.

Times are seconds since the epoch on the monitoring host's clock; task start/stop times are
the workers' clocks (the same clock for a local cluster). ``VERSION`` changes with any
incompatible change; the view refuses frames of another version with a message.

This module is the one description of the Frame: ``scripts/generate_ts.py`` writes the
TypeScript types and constants from it (``labextension/src/view/frame.generated.ts``), and
``tests/cpu/test_schema.py`` fails when that file is not what the script would write. The
docstrings under the fields become the TypeScript comments.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, TypedDict

from .. import config

VERSION = 3
"""Frames of another version are refused by the view, with a message."""


@dataclass(frozen=True, slots=True)
class DeviceReading:
    """One device's values in a sample, by name; on the wire a list in this field order, which
    is the order of the view's ``SAMPLE_FIELDS``. ``None`` where the device does not report it."""

    utilization: float | None = None
    """Percent."""
    memory_used: int | None = None
    """Bytes."""
    temperature: float | None = None
    """Degrees C."""
    power: float | None = None
    """Watts."""
    pcie_tx: int | None = None
    """Bytes/s device to host (sampled every few seconds only)."""
    pcie_rx: int | None = None
    """Bytes/s host to device (sampled every few seconds only)."""

    def values(self) -> DeviceValues:
        """The wire form: the values in field order."""
        return [getattr(self, name) for name in SAMPLE_FIELDS]

    @classmethod
    def from_values(cls, values: DeviceValues) -> DeviceReading:
        """A reading back from its wire form (what a frame's sample holds)."""
        named: dict[str, Any] = dict(zip(SAMPLE_FIELDS, values, strict=True))
        return cls(**named)


SAMPLE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(DeviceReading))
"""The per-device values of a sample, in their order on the wire (DeviceReading)."""

DeviceValues = list[float | None]
"""One device's values in a sample: DeviceReading's fields, in their order."""


class NvmlInfo(TypedDict):
    available: bool
    reason: str
    """Why not available, in words ("" when available)."""
    driver: str | None


class DeviceInfo(TypedDict):
    id: str
    """The key of this device in samples: a GPU/MIG UUID, or "worker:<address>"."""
    label: str
    """The device's title: "0", "0:1" (MIG), or the worker's name for a GPU seen through
    heartbeats."""
    name: str
    """The model, e.g. "NVIDIA H200": user-visible text."""
    host: str
    """The worker's host; empty for this machine."""
    mig: bool
    memory_total: int | None
    power_limit: float | None
    """Watts."""
    cluster_memory: int | None
    """Bytes of this device held now by the cluster's worker processes (the rest of the used
    memory is other processes'); None where unknown (no NVML process list, a remote GPU)."""


class Sample(TypedDict):
    t: float
    values: dict[str, DeviceValues]
    """Device id -> values in SAMPLE_FIELDS order."""


class WorkerGpu(TypedDict):
    """A worker's GPU as its heartbeats report it."""

    device: str | None
    """Device id in the frame's devices (local UUID or "worker:<address>")."""
    name: str | None
    utilization: float | None
    memory_used: int | None
    memory_total: int | None


class WorkerInfo(TypedDict):
    address: str
    name: str
    host: str
    nthreads: int
    memory: int | None
    """Host memory used, bytes."""
    memory_limit: int | None
    executing: int
    """Tasks running now (the worker's own count, from its heartbeat)."""
    ready: int
    """Tasks ready to run, waiting for a thread."""
    in_memory: int
    """Task results the worker holds."""
    gpu: WorkerGpu | None
    ours: bool
    """Started or lent by this kernel (``start``, ``join``); false for the other workers of a
    scheduler it attached to or joined."""


WORKER_COUNTS: dict[str, str] = {
    "executing": "running",
    "ready": "ready",
    "in_memory": "results held",
}
"""The words for a worker's task counts, the same in the panel, the sidebar, ``status`` and the
panel's text: "in memory" beside "Host memory" read as a size."""


PALETTE: list[str] = [
    "#3f69d3",
    "#889800",
    "#f85000",
    "#f80098",
    "#00a0a0",
    "#906830",
    "#008040",
    "#a800f8",
    "#a080b8",
    "#0098d8",
    "#a05868",
    "#007890",
    "#00a810",
    "#e848f8",
    "#b08800",
    "#c08060",
    "#60a078",
    "#707020",
    "#a05098",
    "#b05020",
]
"""The colours of task prefixes (the n-th prefix the scheduler saw takes the n-th, cycling) and
of GPUs (the n-th GPU of a view), made by ``scripts/palette.py``: each seen on both JupyterLab
themes (3:1 contrast), none greyish or near a fixed action colour, every first n as far apart as
such colours can be, so that a pipeline of up to 20 prefixes shows no colour twice. Dask's own
per-prefix colours (Viridis) do not meet the contrast at either end. ``tests/cpu/test_palette.py``
measures these with a colour library and checks the list is the script's."""

Action = Literal["compute", "transfer", "disk-read", "disk-write", "deserialize"]
"""What a worker thread did during a task-stream rectangle."""

ACTION_COLORS: dict[str, str] = {
    "transfer": "#d9534f",
    "disk-read": "#f0ad4e",
    "disk-write": "#f0ad4e",
    "deserialize": "#9e9e9e",
}
"""The colours of what is not a computation: the Dask dashboard's red, orange and grey."""

ERROR_COLOR = "#000000"
"""The fill of a task that failed."""

OTHER_COLOR = "#707080"
"""The fill of compute prefixes beyond the palette's colours in a view ("other"): a neutral
slate, told apart from every palette and action colour (``tests/cpu/test_palette.py``), so that
no two prefixes a view draws ever share a colour."""


class TaskRect(TypedDict):
    worker: str
    """Worker address."""
    thread: int
    """The worker thread's id: one lane per (worker, thread)."""
    start: float
    stop: float
    action: Action
    key: str
    """The task key as text: user-controlled, only ever shown through textContent."""
    prefix: str
    """The key's prefix, e.g. "read_parquet"."""
    color: str
    """As "#rrggbb": by prefix for compute (the PALETTE colour of the prefix's slot, kept by the
    scheduler for every view of the cluster; OTHER_COLOR when every colour is taken); fixed for
    the other actions."""
    error: bool


class PrefixProgress(TypedDict):
    prefix: str
    total: int
    done: int
    """In memory, released or forgotten after running."""
    processing: int
    """Given to a worker: running there or waiting for one of its threads."""
    color: str
    """The prefix's colour, as its tasks' rectangles have it."""
    running: int
    """Running on a worker thread now, from the workers' heartbeats: never more than their
    threads, so the view can say "running" of these and "waiting" of the rest."""
    erred: int


ClusterState = Literal["connecting", "running", "closed", "unreachable", "stopped"]
"""Whether the monitor reaches the cluster's scheduler: "connecting" until its first answer,
"unreachable" when it does not answer (or never did), "closed" when its client was closed, and
"stopped" once the kernel stopped it (its history stays, greyed, until a new cluster starts)."""


class ClusterInfo(TypedDict):
    state: ClusterState
    mode: str
    """One of "gpu", "cpu", "attached", "joined" (this kernel lent workers to a scheduler
    elsewhere; its own are the workers marked ``ours``) or "gateway" (a cluster of
    dask-gateway)."""
    address: str
    dashboard: str | None
    message: str
    """Why closed/unreachable, in words ("" when running)."""
    stopped_at: float | None
    """When the cluster stopped (state "stopped"), seconds since the epoch; else None."""


class ResourceWait(TypedDict):
    """Tasks that wait for a worker resource (``resources={"GPU": 1}``) no worker offers."""

    resource: str
    tasks: int


class ProcessInfo(TypedDict):
    """A compute process of the current user on one device."""

    device: str
    pid: int
    memory: int | None


class Processes(TypedDict):
    own: list[ProcessInfo]
    others: int
    """Processes of other users: only counted."""


class RoomHolder(TypedDict):
    """A holder of a share of one GPU whom the viewer may see: their own kernels always, other
    people only where the ``room-names`` option shows this user names."""

    who: str
    """"you" (the kernel this view follows), "you (kernel 1234)" (another kernel of this user)
    or a user name: user-visible text."""
    you: bool
    """The lease of the kernel this view follows."""
    share: int
    """Bytes of the GPU's memory the holder may take."""
    relied_on: int | None
    """Where the share is lent (a room nobody planned: shares follow the holders present), the
    bytes the room keeps for this holder whoever comes; None where the share itself is promised
    (a planned room). "15 GiB share" beside "15 GiB not promised" read as a bug without it."""
    used: int | None
    """Bytes in use on this GPU by the holder's processes; None where unknown (no NVML)."""
    utilization: float | None
    """Percent of the GPU's multiprocessors the holder's processes use, where NVML samples it
    per process; else None."""
    last_work: float
    """When the holder last worked (a magic, a task), seconds since the epoch."""
    above: bool
    """Using more than the share and its CUDA contexts."""
    idle: bool
    """No work for longer than the room's idle time (``RoomInfo.idle_after``)."""


class RoomGpu(TypedDict):
    """One GPU of the room: what it has, who holds it, what is left."""

    id: str
    """The GPU's UUID: a device's id where the frame lists it."""
    label: str
    name: str
    """The model, e.g. "NVIDIA H200": user-visible text."""
    memory_total: int
    memory_used: int | None
    """Bytes in use on the GPU, everybody's; None where unknown (no NVML)."""
    utilization: float | None
    """Percent, the whole GPU."""
    holders: int
    """Leases on this GPU, the viewer's included."""
    not_promised: int
    """Bytes of its memory no share (nor its CUDA contexts) is promised: what is left to give."""
    shown: list[RoomHolder]
    """The holders the viewer may see, the kernel this view follows first."""
    others: int
    """Holders not shown: other people, counted only."""
    others_idle: int
    others_above: int
    """Of the holders not shown, how many use more than their share."""


class RoomInfo(TypedDict):
    """The room of a shared GPU server (students, each with a lease on a share of a GPU) as this
    user may see it; read every few seconds."""

    gpus: list[RoomGpu]
    names: bool
    """Whether this user sees other holders' names (the ``room-names`` option)."""
    idle_after: float
    """Seconds without work after which a holder counts as idle (the ``room-idle`` option)."""


class GpuTimeRow(TypedDict):
    """One task prefix's GPU time in the view's window, from the workers' GPU-time plugin."""

    prefix: str
    color: str
    """As the task stream draws the prefix."""
    tasks: int
    """Tasks of the prefix that ended in the window."""
    wall: float
    """Seconds the tasks ran, summed."""
    gpu: float
    """Seconds the GPU worked for them, summed."""
    peak: int | None
    """Bytes: the highest of the tasks' RMM peaks above their start; None where not measured."""
    htod: int
    """Bytes copied host to device by the tasks (0 where the source counts no copies)."""
    dtoh: int
    """Bytes copied device to host."""
    shared: bool
    """Some task ran beside another on its worker: their shared moments were split evenly."""


class GpuTime(TypedDict):
    rows: list[GpuTimeRow]
    """Most GPU seconds first."""
    source: str
    """How the workers measure, in words: the source and its resolution per worker, or
    why they do not."""
    measuring: int
    """Workers that measure GPU time (0: none can here, a cluster without GPUs: the view shows
    no GPU time section)."""


class Frame(TypedDict):
    version: int
    kind: Literal["snapshot", "delta"]
    time: float
    interval: float
    """Seconds between samples now."""
    history: float
    """Seconds of history the monitor keeps."""
    nvml: NvmlInfo
    devices: list[DeviceInfo]
    samples: list[Sample]
    cluster: ClusterInfo | None
    workers: list[WorkerInfo]
    tasks: list[TaskRect]
    progress: list[PrefixProgress]
    processes: Processes | None
    waiting: list[ResourceWait]
    """Resources asked for by waiting tasks and offered by no worker: such tasks never run."""
    messages: list[str]
    room: RoomInfo | None
    """The room of a shared GPU server; None off a shared machine or while no lease counts."""
    gpu_time: GpuTime | None
    """Where the GPU's time went per task prefix in the window; None without a cluster."""


def _limits(option: str) -> tuple[float, float]:
    limits = config.OPTIONS[option].limits
    assert limits is not None, option
    return limits


#: the ranges and defaults are the options' (config.OPTIONS), written nowhere else
INTERVAL_RANGE = _limits("refresh-interval")
HISTORY_RANGE = _limits("history")
DEFAULT_INTERVAL: float = config.OPTIONS["refresh-interval"].default_value
DEFAULT_HISTORY: float = config.OPTIONS["history"].default_value


def clamp_interval(seconds: float) -> float:
    return config.OPTIONS["refresh-interval"].clamp(seconds)


def clamp_history(seconds: float) -> float:
    return config.OPTIONS["history"].clamp(seconds)
