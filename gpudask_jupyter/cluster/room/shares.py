"""Elastic shares: a GPU's memory divided among the holders who are there, as they come and go.

Where the instructor set no plan (``room-students`` 0, ``room-share`` auto), the room cannot
know how many students will come: accounts appear as students log in, and on some servers all
students share one account. So shares are planned from the holders present, not from people
counted in advance, and they follow the room as it fills:

* each holder may take an equal part of what the GPU's holders do not hold, the *level*, or
  what it holds itself if that is more: ``cap = max(held, level)`` where the caps of all
  holders add up to the GPU's memory (a water-filling). Alone, a student may take the whole
  GPU; with 16 holders, a sixteenth of it, more for those who already hold more;
* a newcomer measures what each holder holds (NVML, per process; the kernel's own figure in
  its lease where NVML sees nothing) and writes it into its lease: the *plan*. Every holder's
  cap follows from the newest lease's plan alone, so every process of every holder computes the
  same caps, and a cap never falls below what its holder held when the plan was made: what a
  student holds is never taken back from under them;
* when a holder leaves, its memory is lent back at once to the others (the plan of the newest
  lease that remains, without the one who left), and taken again as students arrive.

A start is refused only where no GPU has :data:`.placement.MIN_SHARE` that no holder holds.
The CUDA contexts no cap can hold are set aside first (:data:`.placement.CONTEXT_RESERVE` per
process).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence

from ...errors import ClusterError
from ...machine import nvml
from ...text.units import format_bytes
from .leases import Lease
from .placement import CONTEXT_RESERVE, CONTEXTS_PER_HOLDER, MIN_SHARE, Placement, holders_on

log = logging.getLogger(__name__)


def level(memory: int, held: Sequence[int]) -> int:
    """The water level ``λ`` at which ``Σ max(held_i, λ) == memory`` (0 when what is held
    already fills ``memory``): every holder's cap is ``max(held_i, λ)``."""
    if not held:
        return max(0, memory)
    ordered = sorted((max(0, h) for h in held), reverse=True)
    rest = memory
    for taken, amount in enumerate(ordered):  # the largest holders keep what they hold
        candidate = rest // (len(ordered) - taken)
        if candidate >= amount:
            return max(0, candidate)
        rest -= amount
    return 0


def usable(total: int, holders: int) -> int:
    """A GPU's memory that caps can share among ``holders``: its contexts set aside."""
    return max(0, total - CONTEXTS_PER_HOLDER * CONTEXT_RESERVE * holders)


#: the plan's entry for GPU memory held by processes that hold no lease (a user on the GPU
#: before the room began, a job outside the notebooks): no holder's cap may count on it
OUTSIDE = "outside"


def plan_for(
    device: nvml.Device, leases: Sequence[Lease], held: Mapping[str, int]
) -> tuple[int, dict[str, int]]:
    """A newcomer's cap on ``device`` and the plan it writes: what each of the GPU's
    ``leases`` holds (``held``, by :attr:`Lease.key`, and :data:`OUTSIDE`)."""
    present = holders_on(leases, device.uuid)
    fixed = sum(_planned(lease, device.uuid) for lease in present if device.uuid not in lease.plan)
    elastic = [lease for lease in present if device.uuid in lease.plan]
    plan = {lease.key: max(0, held.get(lease.key, 0)) for lease in elastic}
    outside = max(0, held.get(OUTSIDE, 0))
    memory = usable(device.memory_total, len(present) + 1) - fixed - outside
    cap = level(memory, [*plan.values(), 0])
    return cap, {**plan, OUTSIDE: outside} if outside else plan


def caps_on(uuid: str, total: int, leases: Sequence[Lease]) -> dict[str, int]:
    """Every holder's cap on GPU ``uuid`` (``total`` bytes), by :attr:`Lease.key`, from the plan
    of the newest elastic lease on it. A lease with a planned, fixed share (an instructor's
    plan, or an older package) keeps that share; the others divide the rest."""
    present = holders_on(leases, uuid)
    fixed = {lease.key: _planned(lease, uuid) for lease in present if uuid not in lease.plan}
    elastic = [lease for lease in present if uuid in lease.plan]
    caps = dict(fixed)
    if not elastic:
        return caps
    newest = max(elastic, key=lambda lease: (lease.taken, lease.pid))
    plan = newest.plan[uuid]
    held = {lease.key: 0 if lease is newest else plan.get(lease.key, 0) for lease in elastic}
    memory = usable(total, len(present)) - sum(fixed.values()) - plan.get(OUTSIDE, 0)
    water = level(memory, list(held.values()))
    caps.update({key: max(amount, water) for key, amount in held.items()})
    return caps


def _planned(lease: Lease, uuid: str) -> int:
    share = lease.on(uuid)
    return share.share if share is not None else 0


def held_now(
    leases: Sequence[Lease],
    uuids: Sequence[str],
    per_process: Sequence[nvml.GpuProcess],
    in_use: Mapping[str, int | None],
) -> dict[str, dict[str, int]]:
    """By GPU of ``uuids``, what each lease's processes hold there now: NVML's per-process
    memory less a context per process, or the kernel's own figure in its lease where that is
    more; and under :data:`OUTSIDE`, what processes that hold no lease take of the GPU's memory
    in use (``in_use``: NVML's figure for the whole GPU, where known), their contexts included.
    The process table is read once for all of them."""
    family_of = families(leases)
    out: dict[str, dict[str, int]] = {}
    for uuid in uuids:
        held: dict[str, int] = {}
        ours = 0
        for lease in holders_on(leases, uuid):
            family = family_of[lease.pid]
            mine = [p.memory_used or 0 for p in per_process if p.uuid == uuid and p.pid in family]
            ours += sum(mine)
            measured = max(0, sum(mine) - CONTEXT_RESERVE * len(mine))
            held[lease.key] = max(measured, lease.held)
        total = in_use.get(uuid)
        if total is not None:
            held[OUTSIDE] = max(0, total - ours)
        out[uuid] = held
    return out


def families(leases: Sequence[Lease]) -> dict[int, set[int]]:
    """Each lease's processes by its kernel's pid: the kernel, every process below it (nannies,
    workers) and the workers its lease names, from one reading of the process table for the
    whole room (a tree walk per lease would read it once per lease, every few seconds)."""
    children: dict[int, list[int]] = {}
    try:
        import psutil

        for process in psutil.process_iter(["ppid"]):
            children.setdefault(process.info["ppid"], []).append(process.pid)
    except Exception:  # psutil.Error: the kernels and their named workers still count
        log.debug("room: cannot read the process table", exc_info=True)
    found = {}
    for lease in leases:
        below: set[int] = set()
        stack = [lease.pid]
        while stack:
            for child in children.get(stack.pop(), []):
                if child not in below:
                    below.add(child)
                    stack.append(child)
        found[lease.pid] = {lease.pid, *lease.workers, *below}
    return found


def choose_elastic(
    devices: Sequence[nvml.Device],
    leases: Sequence[Lease],
    want: int,
    held: Mapping[str, Mapping[str, int]],
    named: bool = False,
) -> Placement:
    """Place one kernel where the instructor set no plan (:mod:`.shares`): ``want`` GPUs of
    ``devices``, those with the largest cap a newcomer would get there (then the fewest
    holders, the lowest index), given what each holder holds (``held``: by GPU uuid, by
    :attr:`.leases.Lease.key`). Refused only where no GPU has :data:`MIN_SHARE` that its
    holders do not hold."""
    if not devices:
        raise ClusterError("the room has no GPU to place this kernel on")
    want = min(max(want, 1), len(devices))
    counts = {d.uuid: len(holders_on(leases, d.uuid)) for d in devices}
    offers = {d.uuid: plan_for(d, leases, held.get(d.uuid, {})) for d in devices}
    order = sorted(devices, key=lambda d: (-offers[d.uuid][0], counts[d.uuid], d.index, d.uuid))
    chosen = [d for d in order if offers[d.uuid][0] >= MIN_SHARE][:want]
    if len(chosen) < want:
        raise ClusterError(_all_held(devices, leases, held, want))
    holders = {d.uuid: counts[d.uuid] for d in chosen}
    spread = math.ceil((sum(counts.values()) + 1) * want / len(devices))
    parts = []
    for device in chosen:
        before = holders[device.uuid]
        who = "nobody else" if before == 0 else f"{before} other kernel(s)"
        parts.append(f"GPU {device.label} had {who}")
    chosen_by = "as --gpus named it" if named else "the most memory its holders do not hold"
    why = "; ".join(parts) + f" ({chosen_by}); shares follow the holders present"
    return Placement(
        chosen,
        {d.uuid: offers[d.uuid][0] for d in chosen},
        holders,
        {d.uuid: holders[d.uuid] + 1 for d in chosen},
        why,
        spread,
        {d.uuid: offers[d.uuid][1] for d in chosen},
    )


def _all_held(
    devices: Sequence[nvml.Device],
    leases: Sequence[Lease],
    held: Mapping[str, Mapping[str, int]],
    want: int,
) -> str:
    described = ", ".join(
        f"GPU {d.label}: {len(holders_on(leases, d.uuid))} holders hold "
        f"{format_bytes(sum(held.get(d.uuid, {}).values()))} of {format_bytes(d.memory_total)}"
        for d in devices
    )
    return (
        f"Every GPU here is held by the students on it ({described}); {want} GPU(s) were asked "
        "for. %gpu_cluster room shows who holds what; ask the instructor, or wait for one to "
        "free memory or stop."
    )
