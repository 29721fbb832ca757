"""What the machine shows of the room's GPUs, read: the memory in use, per process and on the whole
GPU (NVML), and each GPU process's lineage (its ancestors and account, from the process table),
as the typed reading :mod:`.holding` computes holdings from. A holder's processes are found by
walking each GPU process's parents up to the nearest kernel the leases name, not by reading the
whole process table; an account is read only for the pids a lease names among its workers, the
only processes whose account decides whose they are. Each look of every kernel reads this, so
it reads no more of the table than the leases present need.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from ... import config
from ...errors import ClusterError
from ...machine import nvml, processes
from .holding import GpuMemory, Lineage
from .leases import Lease

log = logging.getLogger(__name__)

#: parents walked up from a GPU process to find its holder's kernel
MAX_DEPTH = 32


class Reader(Protocol):
    """Where the room reads the machine's GPUs (``gpudask_jupyter.RoomReader``; the
    ``room-reader`` option names one): which there are, and the memory in use on each. Every
    kernel of the room reads it each second, so both answer at once from what is at hand."""

    def devices(self) -> list[nvml.Device]:
        """The GPUs the room places students on (``gpudask_jupyter.Gpu``: index, UUID, name,
        memory in bytes)."""
        ...

    def memory(self, devices: Sequence[nvml.Device]) -> dict[str, GpuMemory]:
        """For each of ``devices``, by UUID, a ``gpudask_jupyter.GpuMemory``: its total, the
        bytes in use on the whole GPU (None: unknown) and those each process holds there, by
        pid (the room reads each process's ancestry itself)."""
        ...


class NvmlReader:
    """The GPUs as NVML shows them: the ``room-reader`` option's default."""

    def devices(self) -> list[nvml.Device]:
        return nvml.devices()

    def memory(self, devices: Sequence[nvml.Device]) -> dict[str, GpuMemory]:
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
        return out


def reader() -> Reader:
    """The reader the ``room-reader`` option names: NVML's, or ``module:attribute`` imported
    (a site's own inventory, or the stand-in GPUs of a machine without any). Resolved at each
    call, so that the option can change; an import is made once per process by Python."""
    name = str(config.get("room-reader"))
    if name == "nvml":
        return NvmlReader()
    module, _, attribute = name.partition(":")
    try:
        found: Reader = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError, ValueError) as err:
        raise ClusterError(
            f"The room-reader option names {name!r}, which cannot be imported "
            f"({type(err).__name__}: {err})."
        ) from err
    return found


def read(devices: Sequence[nvml.Device], leases: Sequence[Lease]) -> dict[str, GpuMemory]:
    """The memory of ``devices`` now, by uuid, from :func:`reader`, with the lineage of each
    process on them as far as ``leases`` (those of the room now) need it."""
    return traced(reader().memory(devices), leases)


def lineage_of(pids: Iterable[int], leases: Sequence[Lease] | None = None) -> dict[int, Lineage]:
    """Each of ``pids`` as the process table shows it now: itself and its ancestors, nearest
    first, up to the nearest kernel of ``leases`` (or :data:`MAX_DEPTH`, or init); its account
    where a lease names it among its workers. Without ``leases``, every pid's whole ancestry and
    account (a view of the whole machine, as a test's model of it reads it)."""
    kernels = {x.kernel_pid for x in leases if x.kernel_pid > 0} if leases is not None else None
    named = (
        {w for x in leases if x.local is None for w in x.workers} if leases is not None else None
    )
    depth = MAX_DEPTH if kernels is None or kernels else 1  # no kernel to find: the pid alone
    out = {}
    for pid in set(pids):
        chain: list[int] = []
        current: int | None = pid
        for _ in range(depth):
            if current is None:
                break
            chain.append(current)
            if current <= 1 or (kernels is not None and current in kernels):
                break
            current = processes.parent_of(current)
        uid = processes.owner_uid(pid) if named is None or pid in named else None
        out[pid] = Lineage(tuple(chain), uid)
    return out


def traced(
    memory: Mapping[str, GpuMemory],
    leases: Sequence[Lease] | None = None,
    also: Mapping[str, Iterable[int]] | None = None,
) -> dict[str, GpuMemory]:
    """``memory`` with the lineage of each GPU's processes (and of the pids ``also`` names for
    it, by uuid) read from the process table now, as far as ``leases`` need it
    (:func:`lineage_of`)."""
    out = {}
    for uuid, gpu in memory.items():
        pids = [p for p in (*gpu.processes, *(also or {}).get(uuid, ())) if p not in gpu.lineage]
        out[uuid] = replace(gpu, lineage={**gpu.lineage, **lineage_of(pids, leases)})
    return out
