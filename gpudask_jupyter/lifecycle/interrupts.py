"""Ctrl-C that is never lost while a command runs on the kernel's main thread.

Python raises a SIGINT's ``KeyboardInterrupt`` in whatever code the main thread runs when the
handler is called. When that code is a finaliser (an object's ``__del__`` or a weakref callback,
which the garbage collector runs at any allocation; distributed's ``Future`` releases its key in
one), the exception is reported as "ignored" and the interrupt is gone: the cell runs on to the
end as if Ctrl-C had never been pressed. A busy kernel with much garbage (a long notebook, a
full test run) hits this now and then. While an :class:`InterruptGuard` is active, its handler
records the interrupt before raising it, and the command calls :func:`checkpoint` between its
steps and before it commits: an interrupt recorded but never seen raised is raised there.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from types import FrameType, TracebackType
from typing import Any

log = logging.getLogger(__name__)

_active: ContextVar[InterruptGuard | None] = ContextVar("gpudask_interrupt_guard", default=None)


class InterruptGuard:
    """Records SIGINT on the main thread while active, so that :meth:`checkpoint` can raise an
    interrupt a finaliser swallowed. Nested guards share the outer one; off the main thread, or
    where SIGINT is not handled by Python, a guard does nothing."""

    def __init__(self) -> None:
        self.pressed = False
        self._previous: Any = None
        self._installed = False
        self._token: Any = None
        self._holding = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.pressed = True
        if not self._holding:
            self._previous(signum, frame)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A step Ctrl-C must not cut in two (a thread being started: cut, the thread runs on
        with nobody to undo what it does): an interrupt meanwhile is only recorded, and the
        next :meth:`checkpoint` raises it."""
        holding, self._holding = self._holding, True
        try:
            yield
        finally:
            self._holding = holding

    def __enter__(self) -> InterruptGuard:
        outer = _active.get()
        if outer is not None:
            return outer
        if threading.current_thread() is not threading.main_thread():
            return self
        previous = signal.getsignal(signal.SIGINT)
        if not callable(previous):  # SIG_IGN or SIG_DFL: Python raises nothing to lose
            return self
        self._previous = previous
        signal.signal(signal.SIGINT, self._handle)
        self._installed = True
        self._token = _active.set(self)
        return self

    def __exit__(
        self,
        etype: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._installed:
            return
        self._installed = False
        _active.reset(self._token)
        if signal.getsignal(signal.SIGINT) == self._handle:
            signal.signal(signal.SIGINT, self._previous)
        else:  # someone replaced it meanwhile: theirs stays
            log.debug("SIGINT's handler changed during a guarded command; left as it is")
        if self.pressed and etype is None:
            log.info("an interrupt arrived after the command's last checkpoint")

    def checkpoint(self) -> None:
        """Raise ``KeyboardInterrupt`` if one was recorded and never seen raised."""
        if self.pressed:
            self.pressed = False
            log.info("Ctrl-C was swallowed where it landed (a finaliser): raising it here")
            raise KeyboardInterrupt


def checkpoint() -> None:
    """Between two steps of a guarded command: raise an interrupt recorded and never raised."""
    guard = _active.get()
    if guard is not None:
        guard.checkpoint()


def raises_keyboard_interrupt(handler: object) -> bool:
    """Whether SIGINT's ``handler`` raises ``KeyboardInterrupt`` in the main thread (Python's
    own, or a guard over it): a cell is running there under ipykernel."""
    guard = getattr(handler, "__self__", None)
    if isinstance(guard, InterruptGuard):
        return raises_keyboard_interrupt(guard._previous)
    return handler is signal.default_int_handler
