"""What ``%unload_ext`` (and ``%reload_ext``) must close, registered by the code that started it.

A module that starts something long-lived (a cluster, a sampler thread, pinned host memory)
registers its own closing function here when it first starts it. Unloading the extension then
runs every registered function, so nothing is looked up by name and a renamed function cannot be
forgotten: the registration travels with the code. Registering the same function twice keeps one
entry. Each closer runs even if an earlier one fails; failures are logged with their traceback.
:mod:`.periodic` is the thread such code runs every few seconds until it is stopped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

#: when a closer runs, relative to the others: consumers of a cluster close before the cluster
Stage = int
FIRST: Stage = -1  # what must be done even if the process is killed right after (registry)
VIEWS: Stage = 0  # panels and sampler threads that read the cluster
CLUSTER: Stage = 1  # the kernel's cluster and its client
MEMORY: Stage = 2  # host memory held for transfers

# per process: the closers run on %unload_ext, on the kernel's shutdown and on SIGTERM, which the
# process gets once
_lock = threading.Lock()
_closers: dict[Callable[[], object], Stage] = {}
_ending = threading.Event()


def mark_ending() -> None:
    """The process is going away (a shutdown request, SIGTERM): what closes from now on may be
    quick rather than graceful, since nothing will use it again."""
    _ending.set()


def ending() -> bool:
    """Whether the process is going away (:func:`mark_ending`)."""
    return _ending.is_set()


def on_unload(closer: Callable[[], object], stage: Stage) -> None:
    """Run ``closer`` when the extension is unloaded, in ``stage`` order (ties: registration)."""
    with _lock:
        _closers.setdefault(closer, stage)


def drop(*closers: Callable[[], object]) -> None:
    """Forget ``closers`` (what they would close is gone with its owner)."""
    with _lock:
        for closer in closers:
            _closers.pop(closer, None)


def unload() -> None:
    """Run every registered closer once, by stage; they stay registered for the next load."""
    with _lock:
        closers = sorted(_closers.items(), key=lambda item: item[1])
    for closer, _ in closers:
        try:
            closer()
        except Exception:
            log.exception("closing %s on unload failed", getattr(closer, "__qualname__", closer))
