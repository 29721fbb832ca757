"""The server's Monitor, following every kernel's registry entry."""

from __future__ import annotations

import threading
import time
from typing import Any

from .. import registry
from ..monitor import Monitor, Source

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


def get() -> tuple[Monitor, RegistrySources]:
    global _monitor, _sources
    with _lock:
        if _monitor is None or _sources is None:
            _sources = RegistrySources()
            _monitor = Monitor(_sources)
        return _monitor, _sources


def shutdown() -> None:
    global _monitor
    with _lock:
        monitor, _monitor = _monitor, None
    if monitor is not None:
        monitor.stop()
