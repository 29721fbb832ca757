"""Frame assembly: what one consumer of one cluster gets from the sampler's buffers.

A consumer without a cursor (or with one that cannot continue: another cluster, a restarted
monitor) gets a *snapshot* of the history it asked for; otherwise a *delta* of the samples and
task rectangles after its cursor. Samples carry only the devices the frame lists: this machine's
GPUs and those the cluster's workers report from other machines.
"""

from __future__ import annotations

import time

from ..machine import nvml
from ..schema.frame import VERSION, ClusterInfo, DeviceInfo, Frame, NvmlInfo, Sample, TaskRect
from .cursor import Cursor
from .sampling import Sampler
from .trackers import ClusterTracker

NOTE_SECONDS = 120.0
"""How long a note about the cluster (a worker left, the scheduler answers again) is shown."""


def assemble(
    sampler: Sampler, key: str, since: Cursor | None, history: float, interval: float, error: str
) -> tuple[Frame, Cursor]:
    """The frame for cluster ``key`` after ``since`` (None: a snapshot) and the next cursor.
    ``error`` is the monitor's last failure in words ("" when none)."""
    now = time.time()
    with sampler.lock:
        tracker = sampler.trackers.get(key)
        epoch = tracker.epoch if tracker is not None else 0
        resume = since if since is not None and since.resumes(epoch, sampler.samples.seq) else None
        devices = _devices(sampler, tracker)
        if resume is None:
            samples = sampler.samples.window(now - history)
        else:
            samples = sampler.samples.since(resume.samples)
        frame = Frame(
            version=VERSION,
            kind="snapshot" if resume is None else "delta",
            time=now,
            interval=interval,
            history=history,
            nvml=_nvml_info(),
            devices=devices,
            samples=_only(samples, devices),
            cluster=None,
            workers=[],
            tasks=[],
            progress=[],
            processes=sampler.processes,
            waiting=[],
            messages=[m for m in (error, sampler.room.problem) if m],
            room=sampler.room.part(key),
            gpu_time=None,
        )
        if tracker is not None:
            _add_cluster(frame, tracker, None if resume is None else resume.tasks, now)
        next_cursor = Cursor(sampler.samples.seq, tracker.tasks.seq if tracker else 0, epoch)
    return frame, next_cursor


def _devices(sampler: Sampler, tracker: ClusterTracker | None) -> list[DeviceInfo]:
    """This machine's devices, with the cluster's share of each where known, then the GPUs the
    cluster's workers report from other machines."""
    local = sampler.local.devices()
    if tracker is None:
        return local
    held = tracker.cluster_memory
    if held is not None:
        for device in local:
            device["cluster_memory"] = held.get(device["id"], 0)
    return local + list(tracker.remote.values())


def _nvml_info() -> NvmlInfo:
    state = nvml.status()
    return NvmlInfo(available=state.available, reason=state.reason, driver=state.driver_version)


def _only(samples: list[Sample], devices: list[DeviceInfo]) -> list[Sample]:
    """The samples with the values of ``devices`` only (another cluster's remote GPUs out)."""
    wanted = {d["id"] for d in devices}
    return [
        Sample(t=s["t"], values={k: v for k, v in s["values"].items() if k in wanted})
        for s in samples
    ]


def _add_cluster(
    frame: Frame, tracker: ClusterTracker, task_cursor: int | None, now: float
) -> None:
    """The cluster's part of the frame; tasks after ``task_cursor`` (None: the history's)."""
    tasks: list[TaskRect] = (
        tracker.tasks.window(now - frame["history"])
        if task_cursor is None
        else tracker.tasks.since(task_cursor)
    )
    frame["cluster"] = ClusterInfo(
        state=tracker.state,
        mode=tracker.source.mode,
        address=tracker.source.address,
        dashboard=tracker.source.dashboard,
        message=tracker.message,
        stopped_at=tracker.stopped_at,
    )
    frame["tasks"] = tasks
    frame["waiting"] = list(tracker.waiting)
    frame["workers"] = list(tracker.workers)
    frame["progress"] = list(tracker.progress)
    frame["gpu_time"] = tracker.gpu_time(now - frame["history"])
    frame["messages"] += [n.text for n in tracker.notes if now - n.time < NOTE_SECONDS]
