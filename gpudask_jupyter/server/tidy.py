"""The server removes what killed kernels of its user left, without waiting for a next kernel.

A kernel ended by SIGKILL (out of memory, a kill from the kernel manager after a shutdown that
hung) leaves its registry entry, its TLS folder with the cluster's private key, shared-memory
segments and a lease of the room; the next ``%load_ext`` of the same user removes them
(:mod:`..lifecycle.leftovers`), but that may be days later. The Jupyter server runs as the same
user as its kernels, so it does the same tidy-up when it starts and every :data:`EVERY` seconds,
on a daemon thread of its own, never on the server's event loop.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

#: seconds between two tidy-ups
EVERY = 10.0


class Tidy(threading.Thread):
    """Tidies up at once, then every ``every`` seconds until :meth:`stop`."""

    def __init__(self, every: float) -> None:
        super().__init__(name="gpudask-tidy", daemon=True)
        self.every = every
        self.stopped = threading.Event()

    def run(self) -> None:
        from ..lifecycle import leftovers

        while True:
            try:
                leftovers.remove()
            except Exception:  # the next round tries again
                log.warning("removing what killed kernels left failed", exc_info=True)
            if self.stopped.wait(self.every):
                return

    def stop(self) -> None:
        self.stopped.set()


_current: Tidy | None = None


def start(every: float | None = None) -> Tidy:
    """Start the tidy-up, every ``every`` seconds (:data:`EVERY` by default); one per process:
    a server made again in the same process (its tests) replaces the one before."""
    global _current
    if _current is not None:
        _current.stop()
    _current = Tidy(EVERY if every is None else every)
    _current.start()
    return _current
