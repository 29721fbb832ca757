"""The room as its people see it: every GPU, who holds it, what they use against their share.

One reading (:func:`read`) feeds the ``%gpu_cluster room`` table and the views. Memory in use
is NVML's per-process figure summed over a holder's kernel and its worker processes (the lease
names them; the kernel's descendants are found too), so it is true even where a cap could not
hold, and every share shown is computed from it as each holder computes its own (:mod:`.shares`).
Other students are shown as counts unless the ``room-names`` option lets this user see names
(the instructors, or ``all``): a student sees their own lease and how many others share each GPU,
how many of those are idle or above their share, never who.
"""

from __future__ import annotations

import getpass
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ... import config
from ...machine import nvml, processes
from ...text.table import Table
from ...text.units import format_bytes, format_seconds
from . import holder, holding, measure, placement, shares
from .leases import Lease

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Holding:
    """One lease on one GPU, as the viewer may see it."""

    who: str  # "you", a user name, or "" when the viewer sees counts only
    own: bool
    share: int
    used: int | None  # bytes in use on this GPU by the holder's processes (None: unknown)
    idle: float  # seconds since the holder last worked
    above: bool  # using more than the share (and its contexts)
    is_idle: bool
    utilization: int | None = None  # % of the GPU's multiprocessors its processes use (NVML)
    kernel: str = ""  # the holder's kernel id (the views mark the one they follow "you")
    promise: int | None = None  # what the room keeps for it (None: its share, fixed by a plan)
    elastic: bool = False  # its share follows the holders present (.shares)
    uid: int = -1  # the holder's account


@dataclass
class GpuRoom:
    label: str
    uuid: str
    name: str
    total: int
    used: int | None
    utilization: int | None
    holdings: list[Holding] = field(default_factory=list)
    contexts: int = 0  # bytes set aside for its holders' CUDA contexts (.holding.Holding.contexts)

    @property
    def promised(self) -> int:
        """What the room keeps for its holders: a planned share whole, an elastic one what its
        holder holds (the rest of it is lent, and a newcomer may take it), and their contexts."""
        return self.contexts + sum(
            (h.share if h.promise is None else h.promise) for h in self.holdings
        )

    @property
    def accounts(self) -> int:
        """The students (accounts) holding this GPU."""
        return len({h.uid for h in self.holdings})


@dataclass
class Room:
    gpus: list[GpuRoom]
    names: bool  # whether the viewer sees other holders' names
    directory: str
    problem: str = ""  # why the room cannot be read ("" when it can)
    skipped: dict[int, int] = field(default_factory=dict)  # files that did not count, by uid


def sees_names(user: str | None = None) -> bool:
    """Whether ``user`` (this user) may see other holders' names: the ``room-names`` option."""
    setting = str(config.get("room-names"))
    if setting == "all":
        return True
    if setting == "none":
        return False
    return (user or getpass.getuser()) in setting.split(",")


def read(now: float | None = None) -> Room:
    """The room now, as this user may see it."""
    directory = holder.this_process.room_dir()
    names = sees_names()
    if not directory.path.is_dir():
        return Room([], names, str(directory.path), "nobody has taken a share here yet")
    devices = holder.room_devices()
    utilization = nvml.process_utilization()
    busy_pids: dict[str, list[int]] = {}
    for uuid, pid in utilization:
        busy_pids.setdefault(uuid, []).append(pid)
    present = directory.leases()
    room = build(
        devices,
        present,
        measure.traced(measure.read(devices, present), present, busy_pids),
        time.time() if now is None else now,
        names,
        str(directory.path),
        utilization,
        {s.uuid: s.utilization for s in nvml.sample()},
    )
    room.skipped = dict(directory.skipped)
    return room


def build(
    devices: Sequence[nvml.Device],
    leases: Sequence[Lease],
    memory: Mapping[str, holding.GpuMemory],
    now: float,
    names: bool,
    directory: str,
    utilization: Mapping[tuple[str, int], int] | None = None,
    busy: Mapping[str, int | None] | None = None,
) -> Room:
    """The room from its parts, as a viewer who may (``names``) or may not see names sees it:
    ``memory`` as :func:`.measure.read` gives it, ``utilization`` NVML's per-process figures
    by (GPU UUID, pid), ``busy`` each GPU's. Every share is computed here from what the
    machine shows (:mod:`.shares`), as each holder computes its own."""
    idle_after = float(config.get("room-idle"))
    reserve = placement.CONTEXTS_PER_HOLDER * placement.CONTEXT_RESERVE
    elastic = holder.elastic()
    bound = None if elastic else _largest_shares(devices)
    rooms = []
    for device in devices:
        gpu_memory = memory.get(device.uuid) or holding.GpuMemory(device.uuid, 0, None)
        gpu = GpuRoom(
            device.label,
            device.uuid,
            device.name,
            device.memory_total,
            gpu_memory.used,
            (busy or {}).get(device.uuid),
        )
        present = placement.holders_on(leases, device.uuid)
        held = holding.attribute(gpu_memory, present)
        gpu.contexts = (
            held.contexts if elastic else placement.CONTEXTS_PER_HOLDER * len(present)
        ) * placement.CONTEXT_RESERVE
        caps = shares.caps(device.memory_total, held) if elastic else {}
        owner_of = holding.owners(
            present, {pid for (uuid, pid) in utilization or {}}, gpu_memory.lineage
        )
        for lease in present:
            share = lease.on(device.uuid)
            assert share is not None
            used = _used_by(lease, gpu_memory, present)
            now_share = caps[lease.key] if elastic else min(share.share, (bound or {})[device.uuid])
            percent = [
                value
                for (uuid, pid), value in (utilization or {}).items()
                if uuid == device.uuid and owner_of.get(pid) == lease.key
            ]
            gpu.holdings.append(
                Holding(
                    who=_who(lease, names),
                    own=lease.uid == os.getuid(),
                    share=now_share,
                    used=used,
                    idle=max(0.0, now - lease.active),
                    above=used is not None and used > now_share + reserve,
                    is_idle=now - lease.active > idle_after,
                    utilization=max(percent) if percent else None,
                    kernel=lease.kernel,
                    promise=held.holders[lease.key] if elastic else None,
                    elastic=elastic,
                    uid=lease.uid,
                )
            )
        rooms.append(gpu)
    return Room(rooms, names, directory)


def _largest_shares(devices: Sequence[nvml.Device]) -> dict[str, int]:
    """What a planned room's plan gives anybody at most, by GPU (:mod:`.placement`)."""
    students = max(int(config.get("room-students")), 1)
    return {
        d.uuid: placement.largest_share(
            d.memory_total, config.get("room-share"), students, len(devices) or 1
        )
        for d in devices
    }


def _used_by(lease: Lease, memory: holding.GpuMemory, present: Sequence[Lease]) -> int | None:
    """What ``lease``'s processes use of this GPU, as NVML shows it (None where it hides
    them)."""
    if not memory.visible:
        return None
    owner_of = holding.owners(present, memory.processes, memory.lineage)
    return sum(size for pid, size in memory.processes.items() if owner_of.get(pid) == lease.key)


def _who(lease: Lease, names: bool) -> str:
    if lease.pid == os.getpid():
        return "you"
    if lease.uid == os.getuid():
        # the notebook, which a student can find; a kernel's number, which they cannot, only
        # where no notebook is known
        notebook = processes.notebook_of(lease.pid)
        return f"you ({notebook})" if notebook else f"you (kernel {lease.pid})"
    return lease.user if names else ""


def _memory(used: int | None, total: int) -> str:
    return f"{format_bytes(used)} / {format_bytes(total)}" if used is not None else "–"


def _share(h: Holding) -> str:
    """A holder's share; a lent one says so, with what the holder can rely on."""
    if h.elastic and h.promise is not None:
        return f"{format_bytes(h.share)} lent ({format_bytes(h.promise)} relied on)"
    return format_bytes(h.share)


def table(room: Room) -> Table:
    """``%gpu_cluster room``: a row per GPU, then a row per holder the viewer may see."""
    students = len({h.uid for g in room.gpus for h in g.holdings})
    kernels = sum(len(g.holdings) for g in room.gpus)
    title = f"The room: {len(room.gpus)} GPU(s), {students} student(s), {kernels} kernel(s)"
    out = Table(title, ["GPU", "holder", "share", "in use", "last work", "note"])
    for gpu in room.gpus:
        left = max(0, gpu.total - gpu.promised)
        util = f", {gpu.utilization}% busy" if gpu.utilization is not None else ""
        out.add(
            f"{gpu.label} {gpu.name}",
            f"{gpu.accounts} student(s), {len(gpu.holdings)} kernel(s)",
            f"{format_bytes(left)} not promised",
            _memory(gpu.used, gpu.total) + util,
            "",
            "",
        )
        hidden = [h for h in gpu.holdings if not h.who]
        own = [h for h in gpu.holdings if h.own]
        if len(own) > 1:  # the student's kernels, under the share they divide
            out.add(
                "",
                f"you: {len(own)} kernels",
                format_bytes(sum(h.share for h in own)) + " in all",
                format_bytes(sum(h.used or 0 for h in own)),
                "",
                "your kernels share your part",
            )
        for h in gpu.holdings:
            if h.who:
                out.add(
                    "",
                    h.who,
                    _share(h),
                    _memory(h.used, h.share)
                    + (f", {h.utilization}% busy" if h.utilization is not None else ""),
                    f"{format_seconds(h.idle)} ago",
                    _note(h),
                )
        if hidden:
            idle = sum(h.is_idle for h in hidden)
            above = sum(h.above for h in hidden)
            notes = [f"{idle} idle" if idle else "", f"{above} above their share" if above else ""]
            accounts = len({h.uid for h in hidden})
            out.add(
                "",
                f"{accounts} other student(s), {len(hidden)} kernel(s)",
                format_bytes(sum(h.share for h in hidden)),
                format_bytes(sum(h.used or 0 for h in hidden)),
                "",
                ", ".join(n for n in notes if n),
            )
    if room.problem:
        out.notes.append(room.problem)
    if kernels > 1 and students == 1:
        out.notes.append(
            "every kernel here is of one account, so its kernels share the GPUs among them (where "
            "all students share one account, that is per kernel, not per student)"
        )
    if room.skipped:
        files, accounts = sum(room.skipped.values()), len(room.skipped)
        out.notes.append(
            f"{files} file(s) of {accounts} account(s) in the room's folders do not count (not "
            "leases of a live kernel of their account); they were skipped"
        )
    if any(h.elastic for gpu in room.gpus for h in gpu.holdings):
        out.notes.append(
            f"shares follow the holders present (no room-students): {holder.ELASTIC.lower()}; "
            "not promised: what a newcomer could take"
        )
    if not room.names:
        out.notes.append("other students are shown as counts (the room-names option shows names)")
    out.notes.append(
        f"idle: no work for {format_seconds(float(config.get('room-idle')))}; leases in "
        f"{room.directory}"
    )
    return out


def _note(h: Holding) -> str:
    notes = []
    if h.above:
        notes.append("above the share")
    if h.is_idle:
        notes.append("idle")
    return ", ".join(notes)
