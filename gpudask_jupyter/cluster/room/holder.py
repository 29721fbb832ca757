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
from ...text.units import format_bytes
from . import caps, measure, placement, proof, shares
from .leases import Lease, RoomDir, Share

log = logging.getLogger(__name__)

#: seconds between two rewrites of the lease for activity alone
ACTIVE_EVERY = 30.0

#: seconds between two looks at the room for this kernel's elastic share
FOLLOW_EVERY = 1.0
#: a change of what the kernel's capped allocations hold that is written to its lease
HELD_CHANGE = 64 * 2**20
#: seconds between two requests of a holder above the level to give back cached memory
GIVE_BACK_EVERY = 10.0


@dataclass(frozen=True)
class Place:
    """What a placement gave this kernel, for the start's summary."""

    lease: Lease
    devices: list[nvml.Device]
    why: str
    pinned: bool  # the kernel itself runs on these GPUs
    warning: str = ""


def share_now(lease: Lease) -> int:
    """What ``lease``'s holder may take now on the GPU of its lease where that is least: the
    share it was planned, or the elastic share this kernel last found (:func:`follow_once`)."""
    return lease.smallest.share


def room_devices() -> list[nvml.Device]:
    """The GPUs the room places on, as its reader (the ``room-reader`` option) lists them."""
    return measure.reader().devices()


def machine_gpus() -> list[nvml.Device]:
    """This machine's GPUs: NVML's where NVML works (what CUDA will compute on), else the
    room reader's (a site's inventory, or the tests' stand-in GPUs on a machine without any)."""
    return nvml.devices() if nvml.status().available else room_devices()


def places_kernels(shared: bool) -> bool:
    """Whether this kernel's GPUs are placed: on a shared machine, unless ``room-gpus`` is 0."""
    return shared and int(config.get("room-gpus")) > 0


def elastic() -> bool:
    """Whether shares follow the holders present (:mod:`.shares`): the instructor set no plan
    (``room-students`` 0) and no fixed ``room-share``."""
    return int(config.get("room-students")) == 0 and config.get("room-share") == "auto"


def _crowded(chosen: placement.Placement) -> str:
    over = [
        f"GPU {d.label} already has {chosen.holders[d.uuid]} holders; with this kernel "
        f"{chosen.holders[d.uuid] + 1}, more than the {chosen.spread} it is planned for"
        for d in chosen.devices
        if chosen.holders[d.uuid] + 1 > chosen.spread
    ]
    return "; ".join(over)


def describe(held: Place, cpu_workers: bool = False) -> str:
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


def _within_kernel_limit(leases: Sequence[Lease]) -> None:
    """Refuse a start that would make this student hold the room from more kernels than the
    ``room-kernels`` option allows, naming the notebooks that hold it."""
    limit = int(config.get("room-kernels"))
    mine = [lease for lease in leases if lease.uid == os.getuid()]
    if not limit or len(mine) < limit:
        return
    names = []
    for lease in mine:
        notebook = processes.notebook_of(lease.kernel_pid) if lease.kernel_pid else None
        names.append(notebook or f"kernel {lease.kernel}")
    raise ClusterError(
        f"You hold GPUs of this shared machine from {len(mine)} kernels already "
        f"({', '.join(sorted(names))}), the most the room-kernels option allows one student; "
        "stop the cluster of one of them (%gpu_cluster stop) or shut its kernel down, then "
        "start again. Nothing was started."
    )


class Holder:
    """A kernel's hold on the room: its lease, from its first GPU work to its end, the share it
    follows (elastic) and the activity it notes. One per process (:data:`this_process`); a test
    can make others, on rooms of their own."""

    def __init__(self, directory: Path | None = None) -> None:
        """``directory``: the room's directory (by default the ``room-dir`` option, read on each
        use)."""
        self._directory = directory
        self._lock = threading.RLock()
        self._lease: Lease | None = None
        self._room: RoomDir | None = None
        self._registered = False
        self._watch: Periodic | None = None
        self._follower: Periodic | None = None
        self._given_back = float("-inf")  # when it last asked its processes to give back memory
        self._lock_held: tuple[int, Path] | None = None  # the lease's lock (.proof), while held
        self._heart: Periodic | None = None

    def _follow(self) -> None:
        """Keep this kernel's elastic share as the room changes, every :data:`FOLLOW_EVERY` seconds:
        measured again (:mod:`.shares`), written into the lease for its workers (which follow what
        their own kernel found), the kernel's own cap moved with it, its capped allocations given
        back what earlier caps' buffers have freed."""
        with self._lock:
            if self._follower is None:
                self._follower = Periodic(
                    "gpudask-room-share",
                    FOLLOW_EVERY,
                    self.follow_once,
                    "room: cannot follow this kernel's share",
                )
                self._follower.start()

    def _unfollow(self) -> None:
        if self._follower is not None:
            self._follower.stop()
            self._follower = None

    def measured_shares(self, lease: Lease, own_held: int = 0) -> tuple[dict[str, int], bool]:
        """``lease``'s elastic share on each of its GPUs now, from what the machine shows
        (:mod:`.measure`), computed by its holder (which counts ``own_held`` for itself); and
        whether its hold is above the level on one of them (:func:`.shares.above_level`)."""
        leases = self.room_dir().leases()
        memory = measure.read(room_devices(), leases)
        return shares.standing(lease, leases, memory, own_held, margin=HELD_CHANGE)

    def current_share(self) -> int | None:
        """This kernel's share now (None: it holds no lease)."""
        lease = self._lease
        return None if lease is None else share_now(lease)

    def follow_once(self) -> None:
        """One look at the room: this kernel's elastic share measured again and written into its
        lease when it shrank, grew by :data:`HELD_CHANGE` or more, or the file went missing; the
        kernel's own cap moved to it. A holder above the level gives back what its allocators keep
        cached (the kernel at once, its workers at their next look, asked through the lease's
        ``give_back``), at most every :data:`GIVE_BACK_EVERY` seconds."""
        lease = self._lease
        if lease is None or not lease.elastic:
            return
        held = caps.this_process.held()
        found, above = self.measured_shares(lease, held)
        with self._lock:
            if self._lease is not lease:
                return
            now = time.monotonic()
            asked = above and now - self._given_back >= GIVE_BACK_EVERY
            if asked:
                self._given_back = now
                lease.give_back += 1
            changed = [
                Share(s.uuid, s.index, found.get(s.uuid, s.share))
                for s in lease.gpus
                if found.get(s.uuid, s.share) < s.share
                or found.get(s.uuid, s.share) - s.share >= HELD_CHANGE
            ]
            gone = lease.path is None or not lease.path.exists()
            if asked or changed or gone or abs(held - lease.held) >= HELD_CHANGE:
                lease.gpus = [
                    Share(s.uuid, s.index, found.get(s.uuid, s.share)) for s in lease.gpus
                ]
                lease.held = held
                self._rewrite()
        if asked:
            log.info("room: this kernel holds more than an equal part; it gives back cached memory")
            caps.this_process.give_back()
        if caps.this_process.cap() is not None:
            caps.this_process.install(share_now(lease))
            caps.this_process.refresh()

    def watch(self, probe: Callable[[], float | None], every: float = ACTIVE_EVERY) -> None:
        """Refresh the lease's last work from ``probe`` (the cluster's scheduler) every ``every``
        seconds until released."""

        def look() -> None:
            last = probe()  # a scheduler that went away: the magics say so, not this thread
            if last is not None:
                self.note_work(last)

        with self._lock:
            if self._watch is not None:
                self._watch.stop()
            self._watch = Periodic(
                "gpudask-room-activity",
                every,
                look,
                "room: cannot ask the scheduler when it last worked",
            )
            self._watch.start()

    def _unwatch(self) -> None:
        if self._watch is not None:
            self._watch.stop()
            self._watch = None

    def note_work(self, when: float) -> None:
        """Note work that ran at ``when`` (seconds since the epoch), if later than the last
        noted."""
        with self._lock:
            if self._lease is not None and self._room is not None and when > self._lease.active + 1:
                self._lease.active = min(when, time.time())
                self._rewrite()

    def room_dir(self) -> RoomDir:
        path = self._directory or Path(str(config.get("room-dir")))
        if self._room is None or self._room.path != path:
            self._room = RoomDir(path)
        return self._room

    def current(self) -> Lease | None:
        return self._lease

    def _register(self) -> None:
        if not self._registered:
            lifecycle.on_unload(
                self.release, lifecycle.FIRST
            )  # before anything that may be cut short
            atexit.register(self.release)
            self._registered = True

    def _write(
        self,
        directory: RoomDir,
        devices: Sequence[nvml.Device],
        shares: dict[str, int],
        elastic: bool = False,
    ) -> Lease:
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
            pidns=proof.pid_namespace(),
        )
        undertaker.tell("room", directory.path)
        self._lock_held = directory.hold(lease)
        try:
            directory.write(lease)
        except BaseException:
            self._let_go()
            raise
        self._lease = lease
        self._beat()
        self._register()
        return lease

    def take(
        self,
        allowed: Sequence[nvml.Device],
        named: Sequence[nvml.Device] | None,
        want: int | None,
    ) -> Place:
        """Lease GPUs for this kernel: ``named`` ones (``--gpus``) or a placement of ``want`` (by
        default ``room-gpus``) among ``allowed``.
        The kernel's lease in place is reused. :class:`~...errors.ClusterError` when the room is
        full or its directory cannot be used."""
        with self._lock:
            if self._lease is not None:
                return self._reuse(self._lease, allowed, named)
            directory = self.room_dir()
            if not directory.prepare():
                raise ClusterError(
                    f"The room's directory cannot be used: {directory.problem}. "
                    "Nothing was started."
                )
            count = len(named) if named else (want or int(config.get("room-gpus")))
            pool = list(named) if named else list(allowed)
            with directory.locked():
                leases = [lease for lease in directory.leases() if lease.pid != os.getpid()]
                _within_kernel_limit(leases)
                if elastic():
                    memory = measure.read(pool, leases)
                    chosen = shares.choose_elastic(
                        pool, leases, count, memory, named=bool(named), uid=os.getuid()
                    )
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
                lease = self._write(directory, chosen.devices, chosen.shares, chosen.elastic)
            warning = _crowded(chosen) if named else ""
        pinned = caps.pin_kernel([d.uuid for d in chosen.devices], lease.smallest.share)
        if chosen.elastic:
            self._follow()
        return Place(lease, chosen.devices, chosen.why, pinned, warning)

    def _reuse(
        self,
        lease: Lease,
        allowed: Sequence[nvml.Device],
        named: Sequence[nvml.Device] | None,
    ) -> Place:
        by_uuid = {d.uuid: d for d in allowed}
        devices = [by_uuid[share.uuid] for share in lease.gpus if share.uuid in by_uuid]
        if named and {d.uuid for d in named} != {d.uuid for d in devices}:
            held = ", ".join(f"GPU {share.index}" for share in lease.gpus)
            raise ClusterError(
                f"This kernel holds its share of {held} on this shared machine; --gpus cannot move "
                "it. Leave --gpus out, or restart the kernel to be placed again."
            )
        self.note_activity(force=True)
        return Place(lease, devices, "this kernel's GPUs, kept from its earlier start", False)

    def set_worker_pool(self, pool: int) -> None:
        """The RMM pool (bytes, 0: none) this kernel's workers make under their cap."""
        with self._lock:
            if self._lease is None or self._room is None or self._lease.pool == pool:
                return
            self._lease.pool = pool
            self._rewrite()

    def set_workers(self, pids: Sequence[int]) -> None:
        with self._lock:
            if self._lease is None or self._room is None:
                return
            self._lease.workers = sorted(set(pids))
            self._rewrite()

    def note_activity(self, force: bool = False) -> None:
        """Note that the holder works now (at most every :data:`ACTIVE_EVERY` seconds)."""
        with self._lock:
            if self._lease is None or self._room is None:
                return
            now = time.time()
            if force or now - self._lease.active >= ACTIVE_EVERY:
                self._lease.active = now
                self._rewrite()

    def _rewrite(self) -> None:
        assert self._lease is not None and self._room is not None
        try:
            self._room.write(self._lease)
        except OSError:
            log.warning("room: cannot rewrite this kernel's lease", exc_info=True)

    def release(self, keep_for_kernel: bool = False) -> bool:
        """End this kernel's lease (True), or keep it while the kernel holds GPU data under its own
        cap and ``keep_for_kernel`` (False): the share stays with the kernel until it ends."""
        with self._lock:
            self._unwatch()
            if self._lease is None or self._room is None:
                self._unfollow()
                return False
            if keep_for_kernel and caps.this_process.cap() is not None:
                self._lease.workers = []
                self._rewrite()
                return False
            self._unfollow()
            self._room.remove(self._lease)
            self._let_go()
            self._lease = None
            return True

    def _beat(self) -> None:
        """Show readers that cannot see the lease's lock (in another PID namespace) that this
        kernel lives: its lock file touched every :data:`.proof.HEARTBEAT_EVERY` seconds."""

        def touch() -> None:
            held = self._lock_held
            if held is not None:
                proof.heartbeat(held[0])

        with self._lock:
            if self._heart is None:
                self._heart = Periodic(
                    "gpudask-room-heartbeat",
                    proof.HEARTBEAT_EVERY,
                    touch,
                    "room: cannot touch this kernel's lock file",
                )
                self._heart.start()

    def _let_go(self) -> None:
        """Release the lease's lock (after its file is removed: no reader sees a lease unlocked)."""
        if self._heart is not None:
            self._heart.stop()
            self._heart = None
        if self._lock_held is not None:
            fd, path = self._lock_held
            self._lock_held = None
            try:
                proof.let_go(fd, path)
            except OSError:
                log.warning("room: cannot remove this kernel's lock file %s", path, exc_info=True)

    @contextlib.contextmanager
    def undone_on_failure(self) -> Iterator[None]:
        """A lease taken inside the block is ended if the block fails (a start that did not
        happen holds nothing)."""
        before = self._lease
        try:
            yield
        except BaseException:
            if self._lease is not None and self._lease is not before:
                self.release()
            raise


# per process: the hold on the room; a lease is proved by its process's lock and names its
# pid, so there is one per process, whatever runs in it
this_process = Holder()
