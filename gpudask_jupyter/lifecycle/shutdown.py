"""Closing what the extension started when its kernel goes away, not only at interpreter exit.

A Jupyter kernel is shut down (and restarted) with a shutdown request; the kernel manager then
waits, and sends SIGTERM when the process has not ended after half of its wait (2.5 s by
default), SIGKILL after the rest. SIGTERM's default action ends the process at once: ``atexit``
never runs, and the cluster's registry entry and TLS keys stayed behind. So, while the extension
is loaded:

* the kernel's shutdown request first runs the closers of :mod:`..lifecycle` (registry entry
  first, then panels, the cluster, pinned memory), then ipykernel's own ``do_shutdown``;
* a cell still running on the main thread would keep the kernel alive until it ends (ipykernel
  stops its loop only between messages): it is interrupted as Ctrl-C would, and a process still
  here :data:`EXIT_AFTER` seconds after the request (a cell deep in a C call) exits by itself,
  everything of ours already closed, before the manager's SIGTERM;
* SIGTERM runs the same closers (or waits for those already running, within
  :data:`CLOSERS_WAIT`), then does what it did before: the handler that was installed, or the
  default action (the process ends by SIGTERM, as the manager expects). A SIGTERM that was
  ignored stays ignored, and nothing is installed then.

The closers know the process is ending (:func:`..lifecycle.ending`): a busy cluster's workers are
ended rather than waited for. Unloading the extension puts back both hooks. The handler is
installed from the main thread only (Python's rule); elsewhere only the shutdown request is hooked.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

from .. import compat, lifecycle
from . import interrupts

log = logging.getLogger(__name__)

#: seconds after a shutdown request by which the kernel process has ended, by itself: inside
#: half of jupyter_client's default wait (5 s), after which the manager sends SIGTERM
EXIT_AFTER = 2.0
#: seconds SIGTERM waits for closers already running on another thread
CLOSERS_WAIT = 2.0


def _interrupt_running_cell() -> bool:
    """Interrupt the cell the main thread runs, as Ctrl-C would: ipykernel lets SIGINT raise
    ``KeyboardInterrupt`` only while it handles a message there (its own handler otherwise),
    and the signal itself, sent to the main thread, ends a wait in a system call. Whether a cell
    was running."""
    if not interrupts.raises_keyboard_interrupt(signal.getsignal(signal.SIGINT)):
        return False
    log.info("the kernel shuts down while a cell runs: interrupting it")
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
    return True


def _exit_by(deadline: float) -> None:
    """End the process at ``deadline`` (monotonic seconds) if it is still here then: a cell in
    a long C call outlives the interrupt, and the manager's SIGTERM would follow."""

    def watch() -> None:
        time.sleep(max(0.0, deadline - time.monotonic()))
        log.warning(
            "the kernel is still running %.1f s after its shutdown request; exiting", EXIT_AFTER
        )
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                if stream is not None:
                    stream.flush()
            except Exception:  # a closed stream: nothing left to say
                pass
        os._exit(0)

    threading.Thread(target=watch, name="gpudask-exit-after-shutdown", daemon=True).start()


class ShutdownHooks:
    """The kernel's shutdown request and SIGTERM, hooked so that the extension's closers run
    first: one per process (:data:`this_process`); a test can make others."""

    def __init__(self) -> None:
        self._previous: Any = None  # the SIGTERM handler before ours (None: ours is not installed)
        self._kernel: Any = None  # the ipykernel Kernel whose do_shutdown is wrapped
        self._terminating = False
        self._closed = threading.Event()  # the closers have run to their end

    def run_closers(self, why: str) -> None:
        """Close what the extension started, once (a second caller waits, within
        :data:`CLOSERS_WAIT`, for the first one's closers to end)."""
        if self._terminating:
            self._closed.wait(CLOSERS_WAIT)
            return
        self._terminating = True
        log.info("%s: closing what gpudask started", why)
        lifecycle.mark_ending()
        try:
            lifecycle.unload()
        finally:
            self._closed.set()

    def on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous
        self.run_closers("SIGTERM")
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def before_shutdown(self, restart: bool) -> None:
        """On the kernel's shutdown request, before ipykernel's own: the closers, then the
        running cell interrupted (with the process ending by itself if it outlives that)."""
        asked = time.monotonic()
        try:
            self.run_closers("shutdown request" + (" (restart)" if restart else ""))
        except Exception:  # ipykernel must still shut down
            log.exception("closing on the kernel's shutdown request failed")
        if _interrupt_running_cell():
            _exit_by(asked + EXIT_AFTER)

    def install(self, shell: Any) -> None:
        """Hook the kernel's shutdown request (in a kernel) and SIGTERM (from the main
        thread)."""
        self._terminating = False
        self._closed.clear()
        kernel = getattr(shell, "kernel", None)
        if (
            kernel is not None
            and self._kernel is None
            and compat.wrap_shutdown(kernel, self.before_shutdown)
        ):
            self._kernel = kernel
        if self._previous is not None or threading.current_thread() is not threading.main_thread():
            return
        current = signal.getsignal(signal.SIGTERM)
        if current in (signal.SIG_IGN, None):
            return  # SIGTERM is ignored here (or set outside Python): leave it so
        signal.signal(signal.SIGTERM, self.on_sigterm)
        self._previous = current

    def uninstall(self) -> None:
        """Put back the SIGTERM handler and the kernel's ``do_shutdown`` (where still ours)."""
        kernel, self._kernel = self._kernel, None
        if kernel is not None:
            compat.unwrap_shutdown(kernel)
        previous, self._previous = self._previous, None
        if previous is None or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) == self.on_sigterm:
            signal.signal(signal.SIGTERM, previous)


# per process: a signal has one handler per process, and a kernel one shutdown
this_process = ShutdownHooks()
