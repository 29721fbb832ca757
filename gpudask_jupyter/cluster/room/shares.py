"""Elastic shares: a GPU's memory divided among the holders who are there, as they come and go.

Where the instructor set no plan (``room-students`` 0, ``room-share`` auto), the room cannot
know how many students will come: accounts appear as students log in, and on some servers all
students share one account. So shares are planned from the holders present, not from people
counted in advance, and they follow the room as it fills:

* each student (account) may take an equal part of what the GPU's students do not hold, the
  *level*, or what the student's processes hold if that is more: ``max(held, level)``, where
  the parts of all students, with what processes outside the room take, add up to the GPU's
  usable memory (a water-filling). A student's part is divided among that student's kernels
  the same way (:func:`split`). Alone, a student may take the whole GPU; with 16 students, a
  sixteenth of it, more for those who already hold more; a student with four notebooks open
  divides a sixteenth four ways, and a swarm of leases or processes of one account takes
  nothing from any other;
* what each holder holds, and what processes outside the room take, is what the machine shows
  at the moment the cap is computed (:mod:`.measure`), measured by whoever computes it: a
  newcomer choosing its GPU, every holder's kernel once a second (its worker follows the share
  its own kernel found), a view. No figure in another student's lease counts, so no file can
  lower anybody's cap, and no plan made by one holder outlives the room it was made in: when a
  holder leaves, its memory is lent back at the next look, and taken again as students arrive.

Memory a holder's allocators keep for reuse after it was freed (CUDA's asynchronous pool, CuPy's
pool) is held as far as NVML can tell. A holder whose hold is above the level
(:func:`above_level`) is asked by its own kernel to give that back
(:meth:`.caps.KernelCap.give_back`), so that a student who once took most of the GPU alone
shrinks to an equal part when others come, instead of keeping, cached, what nobody uses.

A start is refused only where no GPU has :data:`.placement.MIN_SHARE` that no holder holds.
The CUDA contexts no cap can hold are set aside first (:data:`.placement.CONTEXT_RESERVE` per
process).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence

from ...errors import ClusterError
from ...machine.nvml import Device
from ...text.units import format_bytes
from . import holding
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


def usable(total: int, holders: int, contexts: int | None = None) -> int:
    """A GPU's memory that caps can share among ``holders``: their contexts set aside (two
    each, or ``contexts`` in all, as :attr:`.holding.Holding.contexts` counts them)."""
    if contexts is None:
        contexts = CONTEXTS_PER_HOLDER * holders
    return max(0, total - CONTEXT_RESERVE * contexts)


def _memory(total: int, held: holding.Holding, extra_contexts: int = 0) -> int:
    """What the holders' caps share on a GPU of ``total`` bytes: its contexts and what
    processes outside the room take set aside."""
    return usable(total, 0, held.contexts + extra_contexts) - held.outside


def split(memory: int, held: holding.Holding) -> tuple[dict[str, int], dict[str, int]]:
    """Every holder's cap, by lease key, when its holders' caps share ``memory``; and each
    holder's fair part (what :func:`standing` compares its hold with): an equal part, among
    its account's kernels, of the level an account may take whatever the others hold. First
    among the accounts (an account's hold is what all its kernels hold; its cap
    ``max(hold, λ)``), then each account's cap among its own kernels the same way: one
    student's many kernels, leases or processes share that student's part, and take nothing
    from anybody else's."""
    groups = held.by_account()
    account_held = {uid: sum(held.holders[key] for key in keys) for uid, keys in groups.items()}
    water = level(memory, list(account_held.values()))
    caps: dict[str, int] = {}
    levels: dict[str, int] = {}
    for uid, keys in groups.items():
        mine = [held.holders[key] for key in keys]
        inner = level(max(account_held[uid], water), mine)
        for key in keys:
            caps[key] = max(held.holders[key], inner)
            levels[key] = water // len(keys)
    return caps, levels


def caps(total: int, held: holding.Holding) -> dict[str, int]:
    """Every holder's cap on a GPU of ``total`` bytes, by lease key, from what they hold."""
    return split(_memory(total, held), held)[0]


def offer(total: int, held: holding.Holding, uid: int) -> int:
    """The cap a newcomer kernel of account ``uid`` would get on a GPU of ``total`` bytes whose
    holders hold ``held``."""
    account = uid
    key = "\0newcomer"
    grown = holding.Holding(
        {**held.holders, key: 0},
        held.outside,
        {**held.processes, key: 0},
        {**held.accounts, key: account},
    )
    # the newcomer's kernel and worker make their contexts as it starts
    memory = usable(total, 0, held.contexts + CONTEXTS_PER_HOLDER) - held.outside
    return split(memory, grown)[0][key]


def held_on(
    uuid: str,
    leases: Sequence[Lease],
    memory: Mapping[str, holding.GpuMemory],
    own: Lease | None = None,
    own_held: int = 0,
) -> holding.Holding:
    """What the holders of GPU ``uuid`` among ``leases`` (``own`` among them, even if its file
    is missing) hold there now, as :func:`.holding.attribute` finds it."""
    present = holders_on(leases, uuid)
    if own is not None and own.on(uuid) is not None and own.key not in {h.key for h in present}:
        present.append(own)
    gpu = memory.get(uuid) or holding.GpuMemory(uuid, 0, None)
    return holding.attribute(gpu, present, own, own_held)


def standing(
    lease: Lease,
    leases: Sequence[Lease],
    memory: Mapping[str, holding.GpuMemory],
    own_held: int = 0,
    margin: int = 0,
) -> tuple[dict[str, int], bool]:
    """``lease``'s elastic cap now on each of its GPUs, by uuid (on a GPU this process cannot
    see, what the holder last found), computed by the lease's own holder (which may count
    ``own_held``, its kernel's own figure); and whether it holds more than ``margin`` above the
    level on one of them: there its own hold, not an equal part, makes its cap, and keeps the
    others below one. What is held is measured once per GPU for both."""
    found: dict[str, int] = {}
    above = False
    for share in lease.gpus:
        gpu = memory.get(share.uuid)
        if gpu is None:
            found[share.uuid] = share.share
            continue
        held = held_on(share.uuid, leases, memory, lease, own_held)
        capped, levels = split(_memory(gpu.total, held), held)
        found[share.uuid] = capped[lease.key]
        above = above or held.holders[lease.key] > levels[lease.key] + margin
    return found, above


def cap_of(
    lease: Lease,
    leases: Sequence[Lease],
    memory: Mapping[str, holding.GpuMemory],
    own_held: int = 0,
) -> int:
    """``lease``'s elastic cap now on the GPU of its lease where it is least (:func:`standing`)."""
    return min(standing(lease, leases, memory, own_held)[0].values())


def above_level(
    lease: Lease,
    leases: Sequence[Lease],
    memory: Mapping[str, holding.GpuMemory],
    own_held: int = 0,
    margin: int = 0,
) -> bool:
    """Whether ``lease``'s holder holds more than ``margin`` above the level on one of its GPUs
    (:func:`standing`)."""
    return standing(lease, leases, memory, own_held, margin)[1]


def choose_elastic(
    devices: Sequence[Device],
    leases: Sequence[Lease],
    want: int,
    memory: Mapping[str, holding.GpuMemory],
    named: bool = False,
    *,
    uid: int,
) -> Placement:
    """Place one kernel where the instructor set no plan: ``want`` GPUs of ``devices``, those
    with the largest cap a newcomer would get there (then the fewest holders, the lowest
    index), given what the machine shows each holder holds (``memory``). Where other students
    hold GPUs too, this student's own GPUs come first: a second notebook then divides the
    student's own part instead of making the student one more on another GPU (where every
    lease is this account's, one account for the class, kernels spread as the offers say).
    Refused only where no GPU has :data:`MIN_SHARE` that its holders do not hold."""
    if not devices:
        raise ClusterError("the room has no GPU to place this kernel on")
    want = min(max(want, 1), len(devices))
    me = uid  # the account the kernel is placed for
    counts = {d.uuid: len(holders_on(leases, d.uuid)) for d in devices}
    shared = any(lease.uid != me for lease in leases)
    mine = {
        d.uuid: shared and any(x.uid == me for x in holders_on(leases, d.uuid)) for d in devices
    }
    held = {d.uuid: held_on(d.uuid, leases, memory) for d in devices}
    offers = {d.uuid: offer(d.memory_total, held[d.uuid], me) for d in devices}
    order = sorted(
        devices,
        key=lambda d: (not mine[d.uuid], -offers[d.uuid], counts[d.uuid], d.index, d.uuid),
    )
    chosen = [d for d in order if offers[d.uuid] >= MIN_SHARE][:want]
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
        {d.uuid: offers[d.uuid] for d in chosen},
        holders,
        {d.uuid: holders[d.uuid] + 1 for d in chosen},
        why,
        spread,
        elastic=True,
    )


def _all_held(
    devices: Sequence[Device],
    leases: Sequence[Lease],
    held: Mapping[str, holding.Holding],
    want: int,
) -> str:
    def holding(device: Device) -> str:
        found = held[device.uuid]
        outside = f", other processes {format_bytes(found.outside)}" if found.outside else ""
        return (
            f"GPU {device.label}: {len(holders_on(leases, device.uuid))} holders hold "
            f"{format_bytes(sum(found.holders.values()))}{outside} of "
            f"{format_bytes(device.memory_total)}"
        )

    described = ", ".join(holding(d) for d in devices)
    return (
        f"Every GPU here is held by the students on it ({described}); {want} GPU(s) were asked "
        "for. %gpu_cluster room shows who holds what; ask the instructor, or wait for one to "
        "free memory or stop."
    )
