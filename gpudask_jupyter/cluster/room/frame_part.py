"""The room as the panel and the sidebar draw it: the Frame's ``room`` part, from one reading.

A viewer gets what ``%gpu_cluster room`` would show them and nothing more: their own leases
(the one of the kernel the view follows marked "you"), other people by name only where the
``room-names`` option lets this user see names, otherwise counted per GPU (how many, how many
idle, how many above their share). Where there is no room (not a shared machine, the room turned
off with ``room-gpus`` 0, or no lease that counts) there is no part, so the views of a single
user do not change.
"""

from __future__ import annotations

from collections.abc import Callable

from ... import config
from ...machine.local_users import shared_machine
from ...schema.frame import RoomGpu, RoomHolder, RoomInfo
from . import holder, reading


def read(now: float) -> reading.Room | None:
    """The room now as this user may see it; None where there is none."""
    if not holder.places_kernels(bool(shared_machine())):
        return None
    room = reading.read(now)
    if not any(gpu.holdings for gpu in room.gpus):
        return None
    return room


def part(room: reading.Room, kernel: str, now: float) -> RoomInfo:
    """``room``, read at ``now``, as the views show it to the viewer who follows ``kernel``."""
    gpus = []
    for gpu in room.gpus:
        hidden = [h for h in gpu.holdings if not h.who]
        shown = [_holder(h, kernel, now) for h in gpu.holdings if h.who]
        shown.sort(key=lambda h: not h["you"])  # stable: the rest keep the leases' order
        gpus.append(
            RoomGpu(
                id=gpu.uuid,
                label=gpu.label,
                name=gpu.name,
                memory_total=gpu.total,
                memory_used=gpu.used,
                utilization=gpu.utilization,
                holders=len(gpu.holdings),
                not_promised=max(0, gpu.total - gpu.promised),
                shown=shown,
                others=len(hidden),
                others_idle=sum(h.is_idle for h in hidden),
                others_above=sum(h.above for h in hidden),
            )
        )
    return RoomInfo(gpus=gpus, names=room.names, idle_after=float(config.get("room-idle")))


def _holder(holding: reading.Holding, kernel: str, now: float) -> RoomHolder:
    you = holding.own and holding.kernel == kernel
    return RoomHolder(
        who="you" if you else holding.who,
        you=you,
        share=holding.share,
        relied_on=holding.promise if holding.elastic else None,
        used=holding.used,
        utilization=holding.utilization,
        last_work=now - holding.idle,
        above=holding.above,
        idle=holding.is_idle,
    )


def reader(
    kernel_of: Callable[[str], str],
) -> Callable[[float], Callable[[str], RoomInfo] | None]:
    """What a host gives its monitor: a reading of the room at a time, then for each frame key
    the part for its viewer, whose kernel is ``kernel_of(key)``; None where there is no room."""

    def read_parts(now: float) -> Callable[[str], RoomInfo] | None:
        room = read(now)
        if room is None:
            return None
        return lambda key: part(room, kernel_of(key), now)

    return read_parts
