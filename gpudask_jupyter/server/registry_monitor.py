"""The server's Monitor, following every kernel's registry entry as a source.

The server talks to each scheduler without a ``distributed.Client`` (:class:`..monitor.callers.
CommCaller`): one comm per cluster on one event loop thread, every step bounded, nothing that
reconnects or logs when a cluster stops. A cluster whose entry disappears, or whose kernel the
server's kernel manager reports gone (:mod:`.liveness`), stops being sampled and shows as
stopped, its history kept. In a cluster a kernel joined, its own workers are those its entry lists
(the kernel writes the entry again when they change), read afresh whenever the monitor asks.
On a shared GPU server the monitor reads the room too, for the notebook in focus
(:func:`server_room`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import registry
from ..cluster.room import views_reader
from ..monitor import Monitor, Source
from ..monitor.callers import CommCaller
from ..monitor.room_watch import RoomParts
from ..monitor.trackers import CONNECT_TIMEOUT
from .liveness import KernelLiveness

log = logging.getLogger(__name__)

REREAD_SECONDS = 0.5


class RegistrySources:
    """Registry entries as monitor sources, re-read at most every REREAD_SECONDS."""

    def __init__(self, kernels: KernelLiveness | None = None) -> None:
        self._entries: dict[str, registry.Entry] = {}
        self._read_at = 0.0
        self._lock = threading.Lock()
        self._kernels = kernels

    def entries(self) -> dict[str, registry.Entry]:
        """The entries of live kernels; when the registry cannot be read, the last ones read
        (a passing failure must not stop every cluster)."""
        with self._lock:
            if time.monotonic() - self._read_at > REREAD_SECONDS:
                try:
                    self._entries = registry.read_all()
                except Exception:
                    log.debug("cannot read the registry", exc_info=True)
                self._read_at = time.monotonic()
            return dict(self._entries)

    def _ours(self, kernel_id: str) -> Callable[[str], bool]:
        """Whether a worker is one the kernel joined, by its entry as last read (a tracker keeps
        its source while the cluster is the same, so the predicate must not keep the list)."""

        def ours(address: str) -> bool:
            entry = self.entries().get(kernel_id)
            return entry is not None and address in (entry.workers or ())

        return ours

    def __call__(self) -> dict[str, Source]:
        sources = {}
        for kernel_id, entry in self.entries().items():
            try:
                source = _source(entry, self._ours(kernel_id) if entry.mode == "joined" else None)
            except Exception:  # an entry that passed the reader but cannot be followed
                log.debug("ignoring the registry entry of %s", kernel_id, exc_info=True)
                continue
            if self._kernels is not None:
                pid = entry.pid if isinstance(entry.pid, int) else None
                source.ended = self._kernels.gone(kernel_id, pid)
            source.stopping = _entry_removed(kernel_id)
            source.stopped_at = _stop_noted(kernel_id, entry.created)
            sources[kernel_id] = source
        return sources


def _entry_removed(kernel_id: str) -> Callable[[], bool]:
    """Whether the kernel removed its entry: the first thing its ``stop`` does, before it closes
    the scheduler, so a scheduler that stops answering after that was stopped on purpose."""
    path = registry.path_for(kernel_id)
    return lambda: not path.exists()


def _stop_noted(kernel_id: str, created: float) -> Callable[[], float | None]:
    """When the kernel began to stop this entry's cluster, as it noted before removing the
    entry (:func:`..registry.note_stopped`): the time its own panel shows."""
    return lambda: registry.stopped_at(kernel_id, created)


def _source(entry: registry.Entry, ours: Callable[[str], bool] | None = None) -> Source:
    address = str(entry.scheduler_address)

    def connection_args() -> dict[str, Any]:
        security = entry.security()
        return dict(security.get_connection_args("client")) if security is not None else {}

    return Source(
        token=(address, entry.created, entry.pid),
        caller=lambda: CommCaller(address, connection_args, CONNECT_TIMEOUT),
        mode=str(entry.mode),
        address=address,
        dashboard=entry.dashboard_link if isinstance(entry.dashboard_link, str) else None,
        ours=ours,
    )


def server_room(now: float) -> RoomParts | None:
    """The room for the sidebar: each frame key is a kernel's id, so the lease of the notebook
    in focus is the one marked "you". Read on the monitor's thread."""
    return views_reader(lambda key: key)(now)


# per process: the Jupyter server loads its extension once per process, and every tab of it shares
# one monitor
_monitor: Monitor | None = None
_sources: RegistrySources | None = None
_kernel_manager: Any = None
_lock = threading.Lock()


def use_kernel_manager(kernel_manager: Any) -> None:
    """The server's kernel manager, asked whether a kernel is gone (before the monitor starts)."""
    global _kernel_manager
    _kernel_manager = kernel_manager


def _started() -> tuple[Monitor, RegistrySources]:
    global _monitor, _sources
    with _lock:
        if _monitor is None or _sources is None:
            kernels = KernelLiveness(_kernel_manager) if _kernel_manager is not None else None
            _sources = RegistrySources(kernels)
            _monitor = Monitor(_sources, room=server_room)
        return _monitor, _sources


def server_monitor() -> Monitor:
    """The server's one Monitor, made on first use; every browser tab shares it."""
    return _started()[0]


def registry_sources() -> RegistrySources:
    """The registry reader behind :func:`server_monitor` (the sidebar lists its kernels)."""
    return _started()[1]


def stop_server_monitor() -> None:
    """Stop sampling and close every scheduler comm; the next request starts afresh."""
    global _monitor, _sources
    with _lock:
        monitor, _monitor, _sources = _monitor, None, None
    if monitor is not None:
        monitor.stop()
