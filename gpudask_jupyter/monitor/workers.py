"""A cluster's workers as the frame shows them, read from the identities the scheduler returns.

Each worker's task counts come from its heartbeats (:func:`.heartbeat.task_counts`), its GPU
from the heartbeat GPU figures: a GPU local NVML also sees keeps its NVML id, one on another
machine becomes a device of its own ("worker:<address>") sampled through the heartbeats. The
worker's process id, which the scheduler knows, finds the worker's share of a local GPU's memory
in NVML's process list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..schema.frame import DeviceInfo, DeviceReading, WorkerGpu, WorkerInfo
from . import heartbeat


@dataclass
class WorkerReport:
    """What one scheduler answer says about the workers."""

    workers: list[WorkerInfo] = field(default_factory=list)
    remote: dict[str, DeviceInfo] = field(default_factory=dict)
    """Devices of other machines, by id ("worker:<address>")."""
    readings: dict[str, DeviceReading] = field(default_factory=dict)
    """The remote devices' values now."""
    local_pids: set[int] = field(default_factory=set)
    """Process ids of the workers on this machine."""


def read_workers(
    identities: dict[str, dict[str, Any]],
    hosts: set[str],
    local_names: dict[str, str],
    ours: Callable[[str], bool],
) -> WorkerReport:
    """The workers of ``identities`` (address -> scheduler's identity); ``hosts`` are this
    machine's names, ``local_names`` map a worker's name to a local GPU's id, ``ours`` says which
    workers the kernel started or lent."""
    view = WorkerReport()
    for address, identity in identities.items():
        name = str(identity.get("name", address))
        host = str(identity.get("host", ""))
        on_this_machine = host in hosts
        local = local_names.get(name) if on_this_machine else None
        gpu = _worker_gpu(address, identity, name, host, local, view)
        view.workers.append(_worker_info(address, identity, name, host, gpu, ours(address)))
        pid = identity.get("pid")
        if on_this_machine and isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
            view.local_pids.add(pid)
    view.workers.sort(key=lambda w: w["name"])
    return view


def _worker_gpu(
    address: str,
    identity: dict[str, Any],
    name: str,
    host: str,
    local: str | None,
    view: WorkerReport,
) -> WorkerGpu | None:
    """The worker's GPU from its heartbeats. A GPU that local NVML does not see (``local`` is
    None: another machine's) becomes a device of its own in ``view.remote``, sampled through the
    heartbeats into ``view.readings``."""
    beat = heartbeat.reported_gpu(identity)
    if beat is None:
        return None
    device = local
    if device is None:
        device = f"worker:{address}"
        view.remote[device] = DeviceInfo(
            id=device,
            label=name,
            name=beat.name or "GPU",
            host=host,
            mig=False,
            memory_total=beat.memory_total,
            power_limit=None,
            cluster_memory=None,
        )
        view.readings[device] = DeviceReading(
            utilization=beat.utilization, memory_used=beat.memory_used
        )
    return WorkerGpu(
        device=device,
        name=beat.name,
        utilization=beat.utilization,
        memory_used=beat.memory_used,
        memory_total=beat.memory_total,
    )


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _worker_info(
    address: str,
    identity: dict[str, Any],
    name: str,
    host: str,
    gpu: WorkerGpu | None,
    ours: bool,
) -> WorkerInfo:
    metrics = identity.get("metrics")
    if not isinstance(metrics, dict):
        metrics = {}
    counts = heartbeat.task_counts(identity)
    return WorkerInfo(
        address=address,
        name=name,
        host=host,
        nthreads=_count(identity.get("nthreads")) or 0,
        memory=_count(metrics.get("memory")),
        memory_limit=_count(identity.get("memory_limit")),
        executing=counts.executing,
        ready=counts.ready,
        in_memory=counts.in_memory,
        gpu=gpu,
        ours=ours,
    )


def memory_by_device(pids: set[int], processes: Iterable[Any]) -> dict[str, int] | None:
    """Bytes each device holds for the processes ``pids`` (NVML's ``GpuProcess`` records), by
    device id; None when none of them appears in the listing at all: the listing then cannot
    see them (another PID namespace, no permission), so their share is unknown, not zero."""
    if not pids:
        return None
    found = False
    held: dict[str, int] = {}
    for process in processes:
        if process.pid not in pids:
            continue
        found = True
        held[process.uuid] = held.get(process.uuid, 0) + int(process.memory_used or 0)
    return held if found else None
