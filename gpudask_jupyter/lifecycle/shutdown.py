"""Closing what the extension started when its kernel goes away, not only at interpreter exit.

A Jupyter kernel is shut down (and restarted) with a shutdown request; the kernel manager then
waits, and sends SIGTERM when the process has not ended after half of its wait (2.5 s by
default), SIGKILL after the rest. SIGTERM's default action ends the process at once: ``atexit``
never runs, and the cluster's registry entry and TLS keys stayed behind. So, while the extension
is loaded:

* the kernel's shutdown request first runs the closers of :mod:`..lifecycle` (registry entry
  first, then panels, the cluster, pinned memory), then ipykernel's own ``do_shutdown``;
* SIGTERM runs the same closers, then does what it did before: the handler that was installed,
  or the default action (the process ends by SIGTERM, as the manager expects). A SIGTERM that
  was ignored stays ignored, and nothing is installed then.

Unloading the extension puts back both. The handler is installed from the main thread only
(Python's rule); elsewhere only the shutdown request is hooked.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType
from typing import Any

from .. import lifecycle

log = logging.getLogger(__name__)

_previous: Any = None  # the SIGTERM handler before ours (None: ours is not installed)
_kernel: Any = None  # the ipykernel Kernel whose do_shutdown is wrapped
_terminating = False


def run_closers(why: str) -> None:
    """Close what the extension started, once per process."""
    global _terminating
    if _terminating:
        return
    _terminating = True
    log.info("%s: closing what gpudask started", why)
    lifecycle.unload()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    previous = _previous
    run_closers("SIGTERM")
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _wrap_do_shutdown(kernel: Any) -> None:
    original = kernel.do_shutdown

    def do_shutdown(restart: bool) -> Any:
        try:
            run_closers("shutdown request" + (" (restart)" if restart else ""))
        except Exception:  # ipykernel must still shut down
            log.exception("closing on the kernel's shutdown request failed")
        return original(restart)

    do_shutdown.gpudask = True  # type: ignore[attr-defined]
    kernel.do_shutdown = do_shutdown


def install(shell: Any) -> None:
    """Hook the kernel's shutdown request (in a kernel) and SIGTERM (from the main thread)."""
    global _previous, _kernel, _terminating
    _terminating = False
    kernel = getattr(shell, "kernel", None)
    if kernel is not None and _kernel is None and hasattr(kernel, "do_shutdown"):
        _wrap_do_shutdown(kernel)
        _kernel = kernel
    if _previous is not None or threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGTERM)
    if current in (signal.SIG_IGN, None):
        return  # SIGTERM is ignored here (or set outside Python): leave it so
    signal.signal(signal.SIGTERM, _on_sigterm)
    _previous = current


def uninstall() -> None:
    """Put back the SIGTERM handler and the kernel's ``do_shutdown`` (where still ours)."""
    global _previous, _kernel
    kernel, _kernel = _kernel, None
    if kernel is not None and getattr(kernel.__dict__.get("do_shutdown"), "gpudask", False):
        del kernel.do_shutdown
    previous, _previous = _previous, None
    if previous is None or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, previous)
