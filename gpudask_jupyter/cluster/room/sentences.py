"""The room: a shared GPU server's students, each on a fair share of its GPUs.

- :mod:`.leases`: the machine-wide lease files, checked so that none can block a start.
- :mod:`.placement`: which GPU a kernel gets and how much of its memory, by the instructor's plan.
- :mod:`.shares`: elastic shares, where there is no plan: they follow the holders present.
- :mod:`.caps`: what holds a share: RMM and CuPy caps in the worker and in the kernel.
- :mod:`.allocator`: a cap on a process's RMM allocations that can move while they stand.
- :mod:`.worker_share`: a worker following its kernel's elastic share.
- :mod:`.holder`: this kernel's one lease, from its first GPU work to its end.
- :mod:`.reading`: the room as ``%gpu_cluster room`` and the views show it.
- :mod:`.frame_part`: the room as the Frame carries it to the panel and the sidebar.
- :mod:`.measure`: what the machine shows of the GPUs' memory and of their processes, read;
  :mod:`.holding`: whose it is (no I/O).
- :mod:`.import_hook`: the kernel placed and capped at its first import of a GPU library.

Only the functions below are called from outside the folder.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import is_device_out_of_memory
from ...machine import gpus, nvml
from ...machine.local_users import shared_machine
from ...text.units import format_bytes
from . import caps, holder, reading
from .holder import Place

if TYPE_CHECKING:
    from ...schema.frame import RoomInfo

log = logging.getLogger(__name__)


def place(
    opts: Any, devices: list[nvml.Device], shared: bool
) -> tuple[Place | None, list[Any], dict[str, Any]]:
    """A start's or a join's place in the room: (what the kernel holds, the GPUs its workers
    get, dask-cuda's keywords that cap them). Off a shared machine: (None, ``devices``, {})."""
    if not holder.places_kernels(shared):
        return None, devices, {}
    if devices:
        allowed = gpus.select(None, nvml.devices(), gpus.kernel_restriction())
    else:  # a CPU cluster, placed on the GPUs the room's reader lists where it lists some
        allowed = [] if nvml.status().available else holder.room_devices()
        if not allowed:
            return None, devices, {}
    named = devices if opts.gpus is not None else None
    held = holder.this_process.take(allowed, named, opts.n_workers if devices else None)
    if not devices:
        return held, devices, {}
    smallest = held.lease.smallest
    device = next(d for d in held.devices if d.uuid == smallest.uuid)
    worker_caps = caps.worker_keywords(
        smallest.share,
        device.memory_total,
        device.label,
        opts.rmm_pool_size,
        opts.device_memory_limit,
    )
    holder.this_process.set_worker_pool(caps.worker_pool(opts.rmm_pool_size, device.memory_total))
    return held, held.devices, worker_caps


def explain_out_of_memory(err: BaseException, from_worker: bool) -> str | None:
    """The sentence for a GPU allocation that failed under this kernel's share, in the kernel or
    (``from_worker``) in a task of its worker: the share, what the capped side holds, who holds
    the rest of the GPU, and what to do; None when ``err`` is no such failure (no lease here,
    or host memory)."""
    lease = holder.this_process.current()
    if lease is None or not is_device_out_of_memory(err):
        return None
    share = holder.share_now(lease)
    label = ", ".join(str(s.index) for s in lease.gpus)
    if from_worker:
        side = f"{format_bytes(caps.worker_part(share))} of it for its worker, which hit that cap"
    else:
        side = (
            f"{format_bytes(caps.kernel_part(share))} of it for this kernel, which holds "
            f"{format_bytes(caps.this_process.held())}"
        )
    others = ""
    try:
        room = reading.read()
    except Exception:  # the sentence stands without the others
        log.debug("room: cannot read it", exc_info=True)
    else:
        for gpu in room.gpus:
            rest = [h for h in gpu.holdings if not h.own]
            if rest and any(s.uuid == gpu.uuid for s in lease.gpus):
                used = sum(h.used or 0 for h in rest)
                others += f"; the {len(rest)} other holder(s) of GPU {gpu.label} hold " + (
                    f"{format_bytes(used)} of {format_bytes(gpu.total)}"
                )
    return (
        f"Out of GPU memory under your share: your share of GPU {label} on this shared machine "
        f"is {format_bytes(share)} now, {side}{others}. Free what you no longer need (del "
        "variables; %gpu_cluster restart frees the worker's), work in smaller pieces, or ask "
        "the instructor (%gpu_cluster room shows the room)."
    )


def before_kernel_gpu_work(cap: bool = True) -> None:
    """Before the kernel's own GPU work (``%%to_gpu``, the first import of a GPU library): on a
    shared machine the kernel takes its place if it has none (pinned to its GPU while CUDA has
    not started in it), then, with ``cap``, its cap."""
    lease = holder.this_process.current()
    if lease is None:
        found = holder.machine_gpus()
        if not found:  # no GPU: nothing to place, nobody asked
            return
        if not holder.places_kernels(bool(shared_machine())):
            return
        allowed = gpus.select(None, found, gpus.kernel_restriction())
        if not allowed:
            return
        lease = holder.this_process.take(allowed, None, None).lease
    if cap:
        install_kernel_cap()
    holder.this_process.note_activity()


def install_kernel_cap() -> None:
    """The kernel's cap at its part of its share now, where it holds a lease."""
    lease = holder.this_process.current()
    if lease is not None:
        caps.this_process.install(holder.share_now(lease))


def out_of_memory(need: str) -> tuple[str, str] | None:
    """(cause, hint) for an allocation of the kernel that failed on a shared machine, where
    "free what you no longer need" is the wrong advice: the share it hit, or who holds the GPU.
    None off a shared machine (the caller says what it says anywhere)."""
    lease = holder.this_process.current()
    if lease is not None and caps.this_process.cap() is not None:
        share = lease.smallest
        return (
            f"{need}, more than this kernel may take: your share of GPU {share.index} is "
            f"{format_bytes(holder.share_now(lease))} on this shared machine, "
            f"{format_bytes(caps.this_process.cap())} of it for this kernel and the rest for its "
            "worker",
            "convert less at a time, spread it over your worker with --distribute, or ask the "
            "instructor for a larger room-share",
        )
    try:
        room = reading.read()
    except Exception:  # the message stands without the room
        log.debug("room: cannot read it", exc_info=True)
        return None
    held = [g for g in room.gpus if g.holdings]
    if not held:
        return None
    others = ", ".join(
        f"GPU {g.label}: {len(g.holdings)} kernel(s) of the room"
        + (f" ({', '.join(h.who for h in g.holdings if h.who)})" if room.names else "")
        for g in held
    )
    return (
        f"{need}; this GPU is shared with other people ({others})",
        "%gpu_cluster room shows who holds what; ask the instructor",
    )


def views_reader(
    kernel_of: Callable[[str], str],
) -> Callable[[float], Callable[[str], RoomInfo] | None]:
    """For a monitor (the panel's in the kernel, the sidebar's in the server): a reading of the
    room at a time, then each frame key's part for its viewer, whose kernel is ``kernel_of(key)``;
    None where there is no room. See :mod:`.frame_part`."""
    # lazy: the frame's schema reads the configuration at import, which imports dask; the
    # room's other sentences (a kernel's placement, its cap) need neither
    from . import frame_part

    return frame_part.reader(kernel_of)
