"""This kernel's lease: taken when it first needs a GPU on a shared machine, ended with it.

On a machine other people use (the ``shared-machine`` option), a start without ``--gpus``
places the kernel's cluster on its share of the GPUs (:mod:`.placement`) instead of taking every
GPU; a start with ``--gpus`` leases what it names and says when that GPU is already shared by
more than its plan. The kernel keeps one lease for the life of its cluster: a ``--replace`` or a
second start reuses its GPUs (the kernel is pinned to them). ``stop`` ends it, unless the kernel
itself holds GPU data under its cap; the kernel's end ends it in every case (shutdown, restart,
SIGTERM through the closers; a SIGKILL leaves a file whose process is gone, which no longer
counts and is removed at the owner's next start).
"""

from __future__ import annotations

import atexit
import contextlib
import getpass
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ... import config, lifecycle
from ...errors import ClusterError
from ...lifecycle import undertaker
from ...lifecycle.periodic import Periodic
from ...machine import nvml, processes
from ...registry.kernel_id import kernel_id
from ...text.units import format_bytes, parse_bytes
from . import caps, measure, placement, shares
from .leases import Lease, RoomDir, Share

log = logging.getLogger(__name__)

#: seconds between two rewrites of the lease for activity alone
ACTIVE_EVERY = 30.0
#: a test seam for CPU machines: ``N:SIZE`` GPUs the room places on instead of NVML's
TEST_GPUS = "GPUDASK_ROOM_TEST_GPUS"

#: seconds between two looks at the room for this kernel's elastic share
FOLLOW_EVERY = 1.0
#: a change of what the kernel's capped allocations hold that is written to its lease
HELD_CHANGE = 64 * 2**20
#: seconds between two requests of a holder above the level to give back cached memory
GIVE_BACK_EVERY = 10.0

_lock = threading.RLock()
_lease: Lease | None = None
_room: RoomDir | None = None
_registered = False
_watch: Periodic | None = None
_follower: Periodic | None = None
_given_back = float("-inf")  # when this kernel last asked its processes to give back cached memory


@dataclass(frozen=True)
class Held:
    """What a placement gave this kernel, for the start's summary."""

    lease: Lease
    devices: list[nvml.Device]
    why: str
    pinned: bool  # the kernel itself runs on these GPUs
    warning: str = ""


def _follow() -> None:
    """Keep this kernel's elastic share as the room changes, every :data:`FOLLOW_EVERY` seconds:
    measured again (:mod:`.shares`), written into the lease for its workers (which follow what
    their own kernel found), the kernel's own cap moved with it, its capped allocations given
    back what earlier caps' buffers have freed."""
    global _follower
    with _lock:
        if _follower is None:
            _follower = Periodic(
                "gpudask-room-share",
                FOLLOW_EVERY,
                follow_once,
                "room: cannot follow this kernel's share",
            )
            _follower.start()


def _unfollow() -> None:
    global _follower
    if _follower is not None:
        _follower.stop()
        _follower = None


def share_now(lease: Lease) -> int:
    """What ``lease``'s holder may take now on the GPU of its lease where that is least: the
    share it was planned, or the elastic share this kernel last found (:func:`follow_once`)."""
    return lease.smallest.share


def measured_shares(lease: Lease, own_held: int = 0) -> tuple[dict[str, int], bool]:
    """``lease``'s elastic share on each of its GPUs now, from what the machine shows
    (:mod:`.measure`), computed by its holder (which counts ``own_held`` for itself); and
    whether its hold is above the level on one of them (:func:`.shares.above_level`)."""
    leases = room().leases()
    memory = measure.read(room_devices())
    out = {}
    for share in lease.gpus:
        one = Lease(**{**vars(lease), "gpus": [share]})
        out[share.uuid] = shares.cap_of(one, leases, memory, own_held)
    above = shares.above_level(lease, leases, memory, own_held, margin=HELD_CHANGE)
    return out, above


def current_share() -> int | None:
    """This kernel's share now (None: it holds no lease)."""
    lease = _lease
    return None if lease is None else share_now(lease)


def follow_once() -> None:
    """One look at the room: this kernel's elastic share measured again and written into its
    lease when it shrank, grew by :data:`HELD_CHANGE` or more, or the file went missing; the
    kernel's own cap moved to it. A holder above the level gives back what its allocators keep
    cached (the kernel at once, its workers at their next look, asked through the lease's
    ``give_back``), at most every :data:`GIVE_BACK_EVERY` seconds."""
    global _given_back
    lease = _lease
    if lease is None or not lease.elastic:
        return
    held = caps.kernel_held()
    found, above = measured_shares(lease, held)
    with _lock:
        if _lease is not lease:
            return
        now = time.monotonic()
        asked = above and now - _given_back >= GIVE_BACK_EVERY
        if asked:
            _given_back = now
            lease.give_back += 1
        changed = [
            Share(s.uuid, s.index, found.get(s.uuid, s.share))
            for s in lease.gpus
            if found.get(s.uuid, s.share) < s.share
            or found.get(s.uuid, s.share) - s.share >= HELD_CHANGE
        ]
        gone = lease.path is None or not lease.path.exists()
        if asked or changed or gone or abs(held - lease.held) >= HELD_CHANGE:
            lease.gpus = [Share(s.uuid, s.index, found.get(s.uuid, s.share)) for s in lease.gpus]
            lease.held = held
            _rewrite()
    if asked:
        log.info("room: this kernel holds more than an equal part; it gives back cached memory")
        caps.give_back()
    if caps.kernel_cap() is not None:
        caps.install_kernel_cap(share_now(lease))
        caps.refresh_kernel_cap()


def watch(probe: Callable[[], float | None], every: float = ACTIVE_EVERY) -> None:
    """Refresh the lease's last work from ``probe`` (the cluster's scheduler) every ``every``
    seconds until released."""
    global _watch

    def look() -> None:
        last = probe()  # a scheduler that went away: the magics say so, not this thread
        if last is not None:
            worked(last)

    with _lock:
        if _watch is not None:
            _watch.stop()
        _watch = Periodic(
            "gpudask-room-activity",
            every,
            look,
            "room: cannot ask the scheduler when it last worked",
        )
        _watch.start()


def _unwatch() -> None:
    global _watch
    if _watch is not None:
        _watch.stop()
        _watch = None


def worked(when: float) -> None:
    """Note work that ran at ``when`` (seconds since the epoch), if later than the last noted."""
    with _lock:
        if _lease is not None and _room is not None and when > _lease.active + 1:
            _lease.active = min(when, time.time())
            _rewrite()


def room_devices() -> list[nvml.Device]:
    """The GPUs the room places on: NVML's, or the test seam's on a machine without GPUs."""
    seam = os.environ.get(TEST_GPUS)
    if seam:
        count, _, size = seam.partition(":")
        return [
            nvml.Device(
                i, f"GPU-00000000-0000-0000-0000-{i:012d}", "room test GPU", parse_bytes(size)
            )
            for i in range(int(count))
        ]
    return nvml.devices()


def room() -> RoomDir:
    global _room
    path = Path(str(config.get("room-dir")))
    if _room is None or _room.path != path:
        _room = RoomDir(path)
    return _room


def applies(shared: bool) -> bool:
    """Whether this kernel's GPUs are placed: on a shared machine, unless ``room-gpus`` is 0."""
    return shared and int(config.get("room-gpus")) > 0


def current() -> Lease | None:
    return _lease


def elastic() -> bool:
    """Whether shares follow the holders present (:mod:`.shares`): the instructor set no plan
    (``room-students`` 0) and no fixed ``room-share``."""
    return int(config.get("room-students")) == 0 and config.get("room-share") == "auto"


def _register() -> None:
    global _registered
    if not _registered:
        lifecycle.on_unload(release, lifecycle.FIRST)  # before anything that may be cut short
        atexit.register(release)
        _registered = True


def _write(
    directory: RoomDir,
    devices: Sequence[nvml.Device],
    shares: dict[str, int],
    elastic: bool = False,
) -> Lease:
    global _lease
    pid = os.getpid()
    now = time.time()
    lease = Lease(
        uid=os.getuid(),
        user=getpass.getuser(),
        pid=pid,
        started=processes.process_started(pid) or 0,
        kernel=kernel_id(),
        gpus=[Share(d.uuid, d.index, shares[d.uuid]) for d in devices],
        taken=now,
        active=now,
        elastic=elastic,
    )
    undertaker.tell("room", directory.path)
    directory.write(lease)
    _lease = lease
    _register()
    return lease


def take(
    allowed: Sequence[nvml.Device], named: Sequence[nvml.Device] | None, want: int | None
) -> Held:
    """Lease GPUs for this kernel: ``named`` ones (``--gpus``) or a placement of ``want`` (by
    default ``room-gpus``) among ``allowed``.
    The kernel's lease in place is reused. :class:`~...errors.ClusterError` when the room is
    full or its directory cannot be used."""
    with _lock:
        if _lease is not None:
            return _reuse(_lease, allowed, named)
        directory = room()
        if not directory.prepare():
            raise ClusterError(
                f"The room's directory cannot be used: {directory.problem}. Nothing was started."
            )
        count = len(named) if named else (want or int(config.get("room-gpus")))
        pool = list(named) if named else list(allowed)
        with directory.locked():
            leases = [lease for lease in directory.leases() if lease.pid != os.getpid()]
            if elastic():
                memory = measure.read(pool)
                chosen = shares.choose_elastic(pool, leases, count, memory, named=bool(named))
            else:
                chosen = placement.choose(
                    pool,
                    leases,
                    count,
                    config.get("room-share"),
                    max(int(config.get("room-students")), len(leases) + 1),
                    len(allowed),
                    named=bool(named),
                )
            lease = _write(directory, chosen.devices, chosen.shares, chosen.elastic)
        warning = _crowded(chosen) if named else ""
    pinned = caps.pin_kernel([d.uuid for d in chosen.devices], lease.smallest.share)
    if chosen.elastic:
        _follow()
    return Held(lease, chosen.devices, chosen.why, pinned, warning)


def _crowded(chosen: placement.Placement) -> str:
    over = [
        f"GPU {d.label} already has {chosen.holders[d.uuid]} holders; with this kernel "
        f"{chosen.holders[d.uuid] + 1}, more than the {chosen.spread} it is planned for"
        for d in chosen.devices
        if chosen.holders[d.uuid] + 1 > chosen.spread
    ]
    return "; ".join(over)


def _reuse(
    lease: Lease, allowed: Sequence[nvml.Device], named: Sequence[nvml.Device] | None
) -> Held:
    by_uuid = {d.uuid: d for d in allowed}
    devices = [by_uuid[share.uuid] for share in lease.gpus if share.uuid in by_uuid]
    if named and {d.uuid for d in named} != {d.uuid for d in devices}:
        held = ", ".join(f"GPU {share.index}" for share in lease.gpus)
        raise ClusterError(
            f"This kernel holds its share of {held} on this shared machine; --gpus cannot move "
            "it. Leave --gpus out, or restart the kernel to be placed again."
        )
    touch(force=True)
    return Held(lease, devices, "this kernel's GPUs, kept from its earlier start", False)


def set_worker_pool(pool: int) -> None:
    """The RMM pool (bytes, 0: none) this kernel's workers make under their cap."""
    with _lock:
        if _lease is None or _room is None or _lease.pool == pool:
            return
        _lease.pool = pool
        _rewrite()


def set_workers(pids: Sequence[int]) -> None:
    with _lock:
        if _lease is None or _room is None:
            return
        _lease.workers = sorted(set(pids))
        _rewrite()


def touch(force: bool = False) -> None:
    """Note that the holder works now (at most every :data:`ACTIVE_EVERY` seconds)."""
    with _lock:
        if _lease is None or _room is None:
            return
        now = time.time()
        if force or now - _lease.active >= ACTIVE_EVERY:
            _lease.active = now
            _rewrite()


def _rewrite() -> None:
    assert _lease is not None and _room is not None
    try:
        _room.write(_lease)
    except OSError:
        log.warning("room: cannot rewrite this kernel's lease", exc_info=True)


def release(keep_for_kernel: bool = False) -> bool:
    """End this kernel's lease (True), or keep it while the kernel holds GPU data under its own
    cap and ``keep_for_kernel`` (False): the share stays with the kernel until it ends."""
    global _lease
    with _lock:
        _unwatch()
        if _lease is None or _room is None:
            _unfollow()
            return False
        if keep_for_kernel and caps.kernel_cap() is not None:
            _lease.workers = []
            _rewrite()
            return False
        _unfollow()
        _room.remove(_lease)
        _lease = None
        return True


@contextlib.contextmanager
def undone_on_failure() -> Iterator[None]:
    """A lease taken inside the block is ended if the block fails (a start that did not
    happen holds nothing)."""
    before = _lease
    try:
        yield
    except BaseException:
        if _lease is not None and _lease is not before:
            release()
        raise


def describe(held: Held, cpu_workers: bool = False) -> str:
    """The start's line about the room: which GPU, why, the share, and what it can rely on.
    ``cpu_workers``: the cluster's workers are CPU workers, so no part of the share is theirs
    (it said "for its worker" of two CPU workers)."""
    parts = []
    for device in held.devices:
        share = held.lease.on(device.uuid)
        if share is None:
            continue
        kernel = format_bytes(caps.kernel_part(share.share))
        if cpu_workers:
            parts.append(
                f"GPU {device.label}: {format_bytes(share.share)} ({kernel} for this kernel's "
                "own GPU work; its workers are CPU workers and take none)"
            )
        else:
            parts.append(
                f"GPU {device.label}: {format_bytes(share.share)} ({kernel} for this kernel, "
                f"{format_bytes(caps.worker_part(share.share))} for its worker)"
            )
    kernel = "" if held.pinned else "; the kernel's own GPU work stays where CUDA started in it"
    line = f"room: {held.why}. Your share of {'; '.join(parts)}{kernel}"
    if held.lease.elastic:
        line += f". {ELASTIC}; room-students or room-share set by the instructor fix it instead"
    return line + (f". Note: {held.warning}" if held.warning else "")


#: what a holder of an elastic share can rely on, in the start's line and the room's notes
ELASTIC = (
    "It is an equal part of what the GPU's holders do not hold: it shrinks as students arrive "
    "(never below what you hold, which is never taken back) and grows as they leave"
)
