"""The cluster's operations (start, attach, join, scale, restart, stop) run so that Ctrl-C can
never cut one in half.

Jupyter interrupts a cell by raising ``KeyboardInterrupt`` in the kernel's main thread, wherever
it is: in the middle of ``LocalCluster.__init__`` (whose workers then run on with nothing to end
them), in the middle of ``import dask`` (whose half-made modules then break every later import),
between starting a cluster and recording it (or in a finaliser, which swallows it: see
:mod:`..lifecycle.interrupts`). So an operation runs on a thread of its own, where
no interrupt lands, and the main thread only waits for it. Ctrl-C returns control at once: the
operation is told (``interrupted``, which it checks between its steps, so that nothing new
starts), and once it has finished, what it made is undone on that thread (a started cluster is
closed, its worker processes ended, its TLS files removed). The next operation, ``%unload_ext``
and the kernel's shutdown first wait for an interrupted one to be undone (for at most
:data:`UNDO_WAIT` and :data:`SHUTDOWN_WAIT` seconds).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .. import lifecycle
from ..lifecycle import interrupts
from .prewarm import Prewarm

log = logging.getLogger(__name__)

T = TypeVar("T")

#: seconds an operation waits for an interrupted one to be undone
UNDO_WAIT = 60.0
#: the same, on ``%unload_ext`` and the kernel's shutdown
SHUTDOWN_WAIT = 10.0
_POLL = 0.05  # how often the waiting main thread may take a Ctrl-C


@dataclass
class Operation(Generic[T]):
    """One operation's state, shared by the thread that runs it and the one that waits."""

    what: str
    interrupted: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    result: T | None = None
    error: BaseException | None = None

    def check(self) -> None:
        """Between two steps: stop here when the user has interrupted (nothing new starts)."""
        if self.interrupted.is_set():
            raise _Interrupted(self.what)


class _Interrupted(Exception):
    """The operation stopped between two steps because the user interrupted it."""


class Operations:
    """The operations of one kernel's cluster, and the interrupted ones still being undone,
    which the next one, ``%unload_ext`` and the kernel's shutdown wait for. ``imports``: the
    kernel's imports ahead of its first start, which an operation waits for rather than make
    the same imports on a second thread."""

    def __init__(self, imports: Prewarm | None = None) -> None:
        self.imports = imports
        self._lock = threading.Lock()
        self._pending: list[threading.Thread] = []

    def run(
        self,
        what: str,
        work: Callable[[Operation[T]], T],
        undo: Callable[[T], object] | None = None,
    ) -> T:
        """``work(operation)`` on a thread of its own, waited for here; Ctrl-C returns at once
        and leaves ``undo(result)`` to run once ``work`` has finished (see the module's
        docstring)."""
        self.wait_pending()
        lifecycle.on_unload(self.before_close, lifecycle.VIEWS)
        operation: Operation[T] = Operation(what)
        imports = self.imports

        def body() -> None:
            try:
                if imports is not None:
                    imports.wait()  # never the same imports on two threads at once
                operation.result = work(operation)
            except BaseException as err:  # handed to the waiting thread, or logged if it left
                operation.error = err
            finally:
                operation.done.set()

        thread = threading.Thread(target=body, name=f"gpudask-{what}", daemon=True)
        try:
            with interrupts.InterruptGuard() as guard:
                # a Ctrl-C that landed inside start() left the work running with no undo
                # waiting for it: it placed a lease and started a cluster after the cell failed
                with guard.held():
                    thread.start()
                guard.checkpoint()
                while not operation.done.wait(_POLL):
                    guard.checkpoint()
                guard.checkpoint()
        except KeyboardInterrupt:
            operation.interrupted.set()
            self._undo_later(operation, thread, undo)
            raise
        if operation.error is not None:
            error, operation.error = operation.error, None
            raise error
        assert operation.result is not None or undo is None
        return operation.result  # type: ignore[return-value]

    def _undo_later(
        self,
        operation: Operation[T],
        thread: threading.Thread,
        undo: Callable[[T], object] | None,
    ) -> None:
        def finish() -> None:
            thread.join()
            if isinstance(operation.error, _Interrupted):
                log.debug("%s stopped between two steps after Ctrl-C", operation.what)
            elif operation.error is not None:
                log.debug("%s failed after Ctrl-C", operation.what, exc_info=operation.error)
            if undo is not None and operation.result is not None:
                try:
                    undo(operation.result)
                except Exception:
                    log.warning("undoing the interrupted %s failed", operation.what, exc_info=True)
            log.debug("the interrupted %s is undone", operation.what)

        cleaner = threading.Thread(
            target=finish, name=f"gpudask-undo-{operation.what}", daemon=True
        )
        with self._lock:
            self._pending[:] = [t for t in self._pending if t.is_alive()]
            self._pending.append(cleaner)
        cleaner.start()

    def pending(self) -> bool:
        """Whether an interrupted operation is still being finished or undone."""
        with self._lock:
            return any(t.is_alive() for t in self._pending)

    def wait_pending(self, timeout: float = UNDO_WAIT) -> bool:
        """Wait (interruptibly) until interrupted operations are undone; False if some still
        run after ``timeout`` seconds (they are logged, and left to finish)."""
        with self._lock:
            threads = [t for t in self._pending if t.is_alive()]
        for thread in threads:
            thread.join(timeout)
            if thread.is_alive():
                log.warning(
                    "an interrupted cluster operation is still being undone (%s)", thread.name
                )
                return False
        return True

    def before_close(self) -> None:
        """On ``%unload_ext`` and the kernel's shutdown, before the cluster is closed:
        interrupted operations are undone first (a shorter wait: the kernel may be about to be
        killed)."""
        self.wait_pending(timeout=SHUTDOWN_WAIT)
