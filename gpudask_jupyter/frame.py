"""The Frame: one JSON-able schema for what the panel widget and the sidebar draw.

A Monitor (in the kernel for the widget, in the Jupyter server for the sidebar) produces frames;
the view (``labextension/src/view``, bundled into both) consumes them. A consumer keeps a cursor:
its first frame is a *snapshot* (everything still in the buffers), later ones are *deltas* (only
samples and task rectangles newer than the cursor). Lists that are small and change as a whole
(devices, workers, progress, processes, messages) are sent whole in every frame.

Times are seconds since the epoch on the monitoring host's clock; task start/stop times are
the workers' clocks (the same clock for a local cluster). ``VERSION`` changes with any
incompatible change; the view refuses frames of another version with a message.
"""

from __future__ import annotations

from typing import Literal, TypedDict

VERSION = 1

#: order of the per-device values in a sample
SAMPLE_FIELDS = (
    "utilization",  # percent, or null
    "memory_used",  # bytes, or null
    "temperature",  # degrees C, or null
    "power",  # watts, or null
    "pcie_tx",  # bytes/s device→host, or null (sampled every few seconds only)
    "pcie_rx",  # bytes/s host→device, or null
)


class NvmlInfo(TypedDict):
    available: bool
    reason: str  # why not available, in words ("" when available)
    driver: str | None


class DeviceInfo(TypedDict):
    id: str  # the key of this device in samples: a GPU/MIG UUID, or "worker:<address>"
    label: str  # "0", "0:1" (MIG), or the worker's name for a GPU seen through heartbeats
    name: str  # "NVIDIA H200", shown as text
    host: str  # "" for this machine, else the worker's host
    mig: bool
    memory_total: int | None
    power_limit: float | None  # watts


class Sample(TypedDict):
    t: float
    values: dict[str, list[float | None]]  # device id -> values in SAMPLE_FIELDS order


class WorkerGpu(TypedDict):
    device: str | None  # device id in ``devices`` (local UUID or "worker:<address>")
    name: str | None
    utilization: float | None
    memory_used: int | None
    memory_total: int | None


class WorkerInfo(TypedDict):
    address: str
    name: str
    host: str
    nthreads: int
    memory: int | None  # host memory used, bytes
    memory_limit: int | None
    executing: int
    ready: int
    in_memory: int
    gpu: WorkerGpu | None


Action = Literal["compute", "transfer", "disk-read", "disk-write", "deserialize"]


class TaskRect(TypedDict):
    worker: str  # worker address
    thread: int  # the worker thread's id (lanes: one per worker thread)
    start: float
    stop: float
    action: Action
    key: str  # the task key as text (user-controlled: always shown through textContent)
    prefix: str  # the key's prefix, e.g. "read_parquet"
    color: str  # "#rrggbb": by prefix for compute; fixed for transfer/disk/deserialize
    error: bool


class PrefixProgress(TypedDict):
    prefix: str
    total: int
    done: int  # in memory, released or forgotten after running
    processing: int
    erred: int


class ClusterInfo(TypedDict):
    state: Literal["running", "closed", "unreachable"]
    mode: str  # "gpu", "cpu" or "attached"
    address: str
    dashboard: str | None
    message: str  # why closed/unreachable, in words ("" when running)


class GpuProcess(TypedDict):
    device: str
    pid: int
    memory: int | None


class Processes(TypedDict):
    own: list[GpuProcess]
    others: int  # processes of other users: only counted


class Frame(TypedDict):
    version: int
    kind: Literal["snapshot", "delta"]
    time: float
    interval: float  # seconds between samples now
    history: float  # seconds of history the monitor keeps
    nvml: NvmlInfo
    devices: list[DeviceInfo]
    samples: list[Sample]
    cluster: ClusterInfo | None
    workers: list[WorkerInfo]
    tasks: list[TaskRect]
    progress: list[PrefixProgress]
    processes: Processes | None
    messages: list[str]


INTERVAL_RANGE = (0.25, 10.0)
HISTORY_RANGE = (10.0, 3600.0)


def clamp_interval(seconds: float) -> float:
    low, high = INTERVAL_RANGE
    return min(high, max(low, float(seconds)))


def clamp_history(seconds: float) -> float:
    low, high = HISTORY_RANGE
    return min(high, max(low, float(seconds)))
