"""The server's Monitor, following every kernel's registry entry as a source."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from .. import registry
from ..monitor import Monitor, Source

log = logging.getLogger(__name__)

REREAD_SECONDS = 2.0


class RegistrySources:
    """Registry entries as monitor sources, re-read at most every two seconds."""

    def __init__(self) -> None:
        self._entries: dict[str, registry.Entry] = {}
        self._read_at = 0.0
        self._lock = threading.Lock()

    def entries(self) -> dict[str, registry.Entry]:
        with self._lock:
            if time.monotonic() - self._read_at > REREAD_SECONDS:
                try:
                    self._entries = registry.read_all()
                except OSError:
                    log.debug("cannot read the registry", exc_info=True)
                    self._entries = {}
                self._read_at = time.monotonic()
            return dict(self._entries)

    def __call__(self) -> dict[str, Source]:
        return {kernel_id: _source(entry) for kernel_id, entry in self.entries().items()}


def _source(entry: registry.Entry) -> Source:
    def connect() -> Any:
        from distributed import Client

        return Client(
            entry.scheduler_address,
            security=entry.security(),
            timeout=5,
            set_as_default=False,
        )

    return Source(
        token=(entry.scheduler_address, entry.created, entry.pid),
        client=connect,
        owns_client=True,
        mode=entry.mode,
        address=entry.scheduler_address,
        dashboard=entry.dashboard_link,
    )


_monitor: Monitor | None = None
_sources: RegistrySources | None = None
_lock = threading.Lock()


def _started() -> tuple[Monitor, RegistrySources]:
    global _monitor, _sources
    with _lock:
        if _monitor is None or _sources is None:
            _sources = RegistrySources()
            _monitor = Monitor(_sources)
        return _monitor, _sources


def server_monitor() -> Monitor:
    """The server's one Monitor, made on first use; every browser tab shares it."""
    return _started()[0]


def registry_sources() -> RegistrySources:
    """The registry reader behind :func:`server_monitor` (the sidebar lists its kernels)."""
    return _started()[1]


def stop_server_monitor() -> None:
    global _monitor
    with _lock:
        monitor, _monitor = _monitor, None
    if monitor is not None:
        monitor.stop()
