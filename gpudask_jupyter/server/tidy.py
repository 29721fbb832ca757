"""The server removes what killed kernels of its user left, without waiting for a next kernel.

A kernel ended by SIGKILL (out of memory, a kill from the kernel manager after a shutdown that
hung) leaves its registry entry, its TLS folder with the cluster's private key, shared-memory
segments and a lease of the room; the next ``%load_ext`` of the same user removes them
(:mod:`..remains.leftovers`), but that may be days later. The Jupyter server runs as the same
user as its kernels, so it does the same tidy-up when it starts and every :data:`EVERY` seconds,
on a daemon thread of its own, never on the server's event loop.
"""

from __future__ import annotations

import logging

from ..lifecycle.periodic import Periodic
from ..remains import leftovers

#: seconds between two tidy-ups
EVERY = 10.0

# per process: one tidy-up thread per server process (its tests make servers one after another in
# one process)
_current: Periodic | None = None


def _tidy() -> None:
    leftovers.remove()


def start(every: float | None = None) -> Periodic:
    """Tidy up now and every ``every`` seconds (:data:`EVERY` by default); one per process: a
    server made again in the same process (its tests) replaces the one before."""
    global _current
    if _current is not None:
        _current.stop()
    _current = Periodic(
        "gpudask-tidy",
        EVERY if every is None else every,
        _tidy,
        "removing what killed kernels left failed",
        at_once=True,
        level=logging.WARNING,
    )
    _current.start()
    return _current


def stop() -> None:
    """Stop the tidy-up of this process (a server's tests, which make servers one after another
    in one process, stop each one's with the server)."""
    global _current
    if _current is not None:
        _current.stop()
        _current = None
