"""A step run every few seconds on a daemon thread of its own, until stopped.

The room's watchers (a kernel's last work, its elastic share, a worker's share) and the server's
tidy-up all look again every few seconds; each is this one loop with its own step. A step that
fails is logged and the next one tries again: what is in place (a cap, a lease) still holds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Periodic(threading.Thread):
    """Calls ``step`` every ``seconds`` (``at_once``: first at start) until :meth:`stop`; a
    failure is logged at ``level`` as ``failed`` says, with its traceback."""

    def __init__(
        self,
        name: str,
        seconds: float,
        step: Callable[[], object],
        failed: str,
        at_once: bool = False,
        level: int = logging.DEBUG,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.seconds = seconds
        self.step = step
        self.failed = failed
        self.at_once = at_once
        self.level = level
        self.stopped = threading.Event()

    def run(self) -> None:
        if self.at_once:
            self._step()
        while not self.stopped.wait(self.seconds):
            self._step()

    def _step(self) -> None:
        try:
            self.step()
        except Exception:  # the next step tries again
            log.log(self.level, "%s", self.failed, exc_info=True)

    def stop(self) -> None:
        self.stopped.set()
