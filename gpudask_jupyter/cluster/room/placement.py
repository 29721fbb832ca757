"""Which GPU a student's kernel gets on a shared machine, and how much of its memory.

The choice reads the leases, not NVML: thirty starts in the same second see each other only
through the leases written under the room's lock, while memory in use lags a start by seconds.
A kernel goes to the GPUs with the fewest holders (then the most memory not yet promised, then
the lowest index), so holders per GPU differ by at most one.

A share is the part of a GPU's memory a holder may allocate. ``auto`` divides the GPU among the
holders it is planned for: the students the room expects (``room-students``; by default the
people with an account here) spread over the GPUs, or more where more have come. What cannot be
capped comes off first: a CUDA context per process (the kernel and its worker) and per planned
holder. A share never exceeds what the other leases left, so promised memory never exceeds the
GPU: when nothing is left, the start fails and says who holds the GPUs. Another student's
lease counts for at most the largest share the plan gives anybody, whatever its file says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ClusterError
from ...machine.nvml import Device
from ...text.units import format_bytes
from .leases import Lease

#: GPU memory a CUDA context takes that no allocator cap can hold (measured: README, "The room")
CONTEXT_RESERVE = 512 * 2**20
#: processes of one holder that each make a context on its GPU: the kernel and its worker
CONTEXTS_PER_HOLDER = 2
#: the smallest share worth giving: below it a start fails instead
MIN_SHARE = 256 * 2**20


@dataclass(frozen=True)
class Placement:
    """The GPUs chosen, the share on each, and the reason in words."""

    devices: list[Device]
    shares: dict[str, int]  # by uuid
    holders: dict[str, int]  # by uuid: holders before this one
    planned: dict[str, int]  # by uuid: holders the share was planned for
    why: str
    spread: int = 0  # holders a GPU gets when the room's students spread evenly
    elastic: bool = False  # the shares follow the holders present (.shares)


def holders_on(leases: Sequence[Lease], uuid: str) -> list[Lease]:
    return [lease for lease in leases if lease.on(uuid) is not None]


def promised(leases: Sequence[Lease], uuid: str, bound: int | None = None) -> int:
    """Memory of GPU ``uuid`` promised to ``leases``, their contexts included; each share
    counted at most ``bound`` (:func:`largest_share`: no lease can promise itself more than a
    plan gives anybody, whatever its file says)."""
    total = 0
    for lease in leases:
        share = lease.on(uuid)
        if share is not None:
            counted = share.share if bound is None else min(share.share, bound)
            total += counted + CONTEXTS_PER_HOLDER * CONTEXT_RESERVE
    return total


def largest_share(total: int, share: str | float | int, students: int, n_devices: int) -> int:
    """The largest share the instructor's plan gives anybody on a GPU of ``total`` bytes: its
    ``auto`` share with nobody else there, or the fixed ``room-share``."""
    if share == "auto":
        return total // planned_holders(students, 1, n_devices, 0) - (
            CONTEXTS_PER_HOLDER * CONTEXT_RESERVE
        )
    if isinstance(share, float):
        return int(total * share)
    return int(share)


def planned_holders(students: int, want: int, n_devices: int, present: int) -> int:
    """Holders a GPU's share is planned for: the room's students spread over its GPUs, and never
    fewer than are there with this one."""
    spread = math.ceil(max(students, 1) * want / max(n_devices, 1))
    return max(spread, present + 1, 1)


def choose(
    devices: Sequence[Device],
    leases: Sequence[Lease],
    want: int,
    share: str | float | int,
    students: int,
    machine_gpus: int | None = None,
    named: bool = False,
) -> Placement:
    """Place one kernel: ``want`` GPUs of ``devices`` given the others' ``leases``; shares are
    planned over ``machine_gpus`` (default: ``devices``, all the room's GPUs). ``named``: the
    user chose ``devices`` (``--gpus``), so they are taken as they are.

    :class:`~...errors.ClusterError` when no GPU has room for another share.
    """
    if not devices:
        raise ClusterError("the room has no GPU to place this kernel on")
    want = min(max(want, 1), len(devices))
    n_machine = machine_gpus or len(devices)
    counts = {d.uuid: len(holders_on(leases, d.uuid)) for d in devices}
    bounds = {d.uuid: largest_share(d.memory_total, share, students, n_machine) for d in devices}
    free = {d.uuid: d.memory_total - promised(leases, d.uuid, bounds[d.uuid]) for d in devices}
    order = sorted(devices, key=lambda d: (counts[d.uuid], -free[d.uuid], d.index, d.uuid))
    shares: dict[str, int] = {}
    planned: dict[str, int] = {}
    chosen: list[Device] = []
    for device in order:
        if len(chosen) == want:
            break
        plan = planned_holders(students, want, machine_gpus or len(devices), counts[device.uuid])
        if share == "auto":
            each = device.memory_total // plan - CONTEXTS_PER_HOLDER * CONTEXT_RESERVE
        elif isinstance(share, float):
            each = int(device.memory_total * share)
        else:
            each = int(share)
        left = free[device.uuid] - CONTEXTS_PER_HOLDER * CONTEXT_RESERVE
        each = min(each, left)
        if each < MIN_SHARE:
            continue
        chosen.append(device)
        shares[device.uuid] = each
        planned[device.uuid] = plan
    if len(chosen) < want:
        raise ClusterError(_full(devices, leases, want, bounds))
    holders = {d.uuid: counts[d.uuid] for d in chosen}
    spread = planned_holders(students, want, machine_gpus or len(devices), 0)
    why = _why(chosen, holders, planned, share, named)
    return Placement(chosen, shares, holders, planned, why, spread)


def _why(
    chosen: Sequence[Device],
    holders: dict[str, int],
    planned: dict[str, int],
    share: str | float | int,
    named: bool,
) -> str:
    parts = []
    for device in chosen:
        before = holders[device.uuid]
        who = "nobody else" if before == 0 else f"{before} other kernel(s)"
        parts.append(f"GPU {device.label} had {who}")
    how = (
        f"planned for {max(planned.values())} holders per GPU"
        if share == "auto"
        else "the room-share option"
    )
    chosen_by = "as --gpus named it" if named else "the fewest holders here"
    return "; ".join(parts) + f" ({chosen_by}); share {how}"


def _full(
    devices: Sequence[Device], leases: Sequence[Lease], want: int, bounds: dict[str, int]
) -> str:
    described = ", ".join(
        f"GPU {d.label}: {len(holders_on(leases, d.uuid))} holders, "
        f"{format_bytes(max(0, d.memory_total - promised(leases, d.uuid, bounds[d.uuid])))} "
        "not promised"
        for d in devices
    )
    return (
        f"No GPU here has room for another share ({described}); {want} GPU(s) were asked for. "
        "%gpu_cluster room shows who holds them; ask the instructor, or wait for one to stop."
    )
