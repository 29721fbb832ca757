"""What the machine shows of the room's GPUs, read: the memory in use, per process and on the whole
GPU (NVML), and each GPU process's lineage (its ancestors and account, from the process table),
as the typed reading :mod:`.holding` computes holdings from. A holder's processes are found by
walking each GPU process's parents, not by reading the whole process table.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from ...machine import nvml, processes
from .holding import GpuMemory, Lineage

log = logging.getLogger(__name__)

#: a test seam for CPU machines: a JSON file ``{uuid: {"used": bytes, "processes": {pid:
#: bytes}}}`` read instead of NVML for the room's test GPUs ("used" defaults to their sum)
TEST_MEMORY = "GPUDASK_ROOM_TEST_MEMORY"
#: parents walked up from a GPU process to find its holder's kernel
MAX_DEPTH = 32


def read(devices: Sequence[nvml.Device]) -> dict[str, GpuMemory]:
    """The memory of ``devices`` now, by uuid, with the lineage of each process on them: NVML's
    figures, or the test seam's."""
    seam = os.environ.get(TEST_MEMORY)
    if seam:
        return _from_seam(seam, devices)
    samples = {s.uuid: s for s in nvml.sample()}
    per_process: dict[str, dict[int, int]] = {d.uuid: {} for d in devices}
    for process in nvml.processes():
        if process.uuid in per_process:
            mine = per_process[process.uuid]
            mine[process.pid] = mine.get(process.pid, 0) + (process.memory_used or 0)
    out = {}
    for device in devices:
        sample = samples.get(device.uuid)
        used = sample.memory_used if sample is not None else None
        out[device.uuid] = GpuMemory(
            device.uuid, device.memory_total, used, per_process[device.uuid]
        )
    return traced(out)


def _from_seam(path: str, devices: Sequence[nvml.Device]) -> dict[str, GpuMemory]:
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, ValueError):
        log.debug("room: the test seam's memory file %s cannot be read", path, exc_info=True)
        raw = {}
    out = {}
    for device in devices:
        mine = raw.get(device.uuid, {}) if isinstance(raw, dict) else {}
        held = {int(pid): int(size) for pid, size in mine.get("processes", {}).items()}
        used = mine.get("used", sum(held.values()))
        out[device.uuid] = GpuMemory(device.uuid, device.memory_total, int(used), held)
    return traced(out)


def lineage_of(pids: Iterable[int]) -> dict[int, Lineage]:
    """Each of ``pids`` as the process table shows it now: its ancestors, nearest first (itself
    included, up to :data:`MAX_DEPTH` or init), and its account."""
    out = {}
    for pid in set(pids):
        chain: list[int] = []
        current: int | None = pid
        for _ in range(MAX_DEPTH):
            if current is None:
                break
            chain.append(current)
            if current <= 1:
                break
            current = processes.parent_of(current)
        out[pid] = Lineage(tuple(chain), processes.owner_uid(pid))
    return out


def traced(
    memory: Mapping[str, GpuMemory], also: Mapping[str, Iterable[int]] | None = None
) -> dict[str, GpuMemory]:
    """``memory`` with the lineage of each GPU's processes (and of the pids ``also`` names for
    it, by uuid) read from the process table now."""
    out = {}
    for uuid, gpu in memory.items():
        pids = [p for p in (*gpu.processes, *(also or {}).get(uuid, ())) if p not in gpu.lineage]
        out[uuid] = replace(gpu, lineage={**gpu.lineage, **lineage_of(pids)})
    return out
