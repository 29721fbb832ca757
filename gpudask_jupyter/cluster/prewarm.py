"""The imports a first ``%gpu_cluster start`` needs, made while the kernel waits for a cell.

A start in a fresh kernel would otherwise import dask, distributed, the scheduler's dashboard
(bokeh) and HTTP routes, cryptography and this package's cluster modules on its critical path,
before the scheduler exists: work that no later start repeats, and most of what makes the first
one slow. Loading the extension imports none of it (that stays cheap). Once the kernel has been
idle for :data:`IDLE` seconds after a cell, a daemon thread imports them, while the user reads
and types; a cell that starts sooner (Run All) puts them off, since the imports hold the
interpreter and would slow that cell and its Ctrl-C. The thread starts no process and no CUDA
context. An operation that begins first makes the imports itself, as before, and an operation
that begins during them waits for them (:func:`wait`): never the same imports on two threads.
Off with the ``prewarm`` option.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import threading
import time
from typing import Any

from .. import config
from ..machine import nvml

log = logging.getLogger(__name__)

#: what every start imports, in order: dask first, the root every other import passes through
MODULES = (
    "dask",
    "distributed",
    "distributed.deploy.local",
    "multiprocessing.synchronize",
    "cryptography.x509",
    "cryptography.hazmat.primitives.asymmetric.ec",
    "cryptography.hazmat.primitives.serialization",
    "cryptography.hazmat.backends.openssl",
    "gpudask_jupyter.cluster.certificates",
    "gpudask_jupyter.cluster.tls_contexts",
    "gpudask_jupyter.cluster.commands",
    "gpudask_jupyter.cluster.tables",
    "gpudask_jupyter.monitor.scheduler_probe",
)
#: imported only where bokeh is installed: the dashboard a start serves by default
DASHBOARD = "distributed.dashboard.scheduler"
#: the dask config key naming the scheduler's HTTP routes (modules it imports as it starts)
ROUTES = "distributed.scheduler.http.routes"
#: seconds without a cell after which the imports begin
IDLE = 1.0
#: seconds an operation waits for imports under way before making its own
WAIT = 60.0


class Prewarm:
    """The imports of a first start, made once a shell is idle after a cell: one per kernel,
    held by the kernel's cluster (:class:`.session.KernelCluster`); a test can make others.
    ``idle``: seconds without a cell after which they begin."""

    def __init__(self, idle: float | None = None) -> None:
        self.idle = IDLE if idle is None else idle
        self._lock = threading.Lock()
        self._shell: Any = None
        self._timer: threading.Timer | None = None  # armed after a cell; imports on its thread
        self._begun = threading.Event()
        self._finished = threading.Event()  # the imports begun are done (or failed)
        self._settled = False  # an operation came first: it made the imports
        self.took: float | None = None  # seconds the imports took, once done (benchmarks)

    def after_cell(self, shell: Any) -> None:
        """Make the imports once ``shell`` is idle after a cell (the one loading the
        extension)."""
        self.cancel()
        if self._begun.is_set() or self._settled:
            return
        self._shell = shell
        shell.events.register("pre_run_cell", self._cell_starts)
        shell.events.register("post_run_cell", self._cell_ran)

    def cancel(self) -> None:
        """Make no imports that have not begun (``%unload_ext``); begun ones finish on their
        own."""
        self._disarm()
        shell, self._shell = self._shell, None
        if shell is not None:
            for event, hook in (
                ("pre_run_cell", self._cell_starts),
                ("post_run_cell", self._cell_ran),
            ):
                with contextlib.suppress(ValueError):  # already gone
                    shell.events.unregister(event, hook)

    def wait(self, timeout: float = WAIT) -> None:
        """On an operation's thread, before it imports anything: imports not begun never will
        (the operation makes them); imports under way are waited for, at most ``timeout``."""
        self._settled = True
        self._disarm()
        self.join(timeout)

    def under_way(self, timeout: float = WAIT) -> None:
        """Wait for imports that have begun (not for armed ones), at most ``timeout``: a magic
        on the main thread, before it imports anything. An import waiting there for a module
        the imports hold, or holding one they wait for, is where a Ctrl-C would land; here it
        ends a plain wait instead."""
        if self._begun.is_set():
            self.join(timeout)

    def join(self, timeout: float = WAIT) -> None:
        """Wait for imports under way or armed, at most ``timeout`` (benchmarks, tests). Waits
        on an event in short steps, so that Ctrl-C ends the wait at once."""
        timer = self._timer
        if timer is None or timer is threading.current_thread():
            return
        deadline = time.monotonic() + timeout
        while timer.is_alive() and not self._finished.wait(0.05):
            if time.monotonic() > deadline:
                log.warning("the imports made ahead of the first start are still running")
                return

    @property
    def begun(self) -> bool:
        return self._begun.is_set()

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    @property
    def armed(self) -> bool:
        return self._timer is not None

    def _cell_ran(self, result: Any = None) -> None:
        if self._begun.is_set() or self._settled:
            self.cancel()  # nothing left to do: the hooks go
            return
        with self._lock:
            if self._timer is None:
                self._timer = threading.Timer(self.idle, self._import_all)
                self._timer.name = "gpudask-prewarm"
                self._timer.daemon = True
                self._timer.start()

    def _cell_starts(self, info: Any = None) -> None:
        self._disarm()

    def _disarm(self) -> None:
        """Put off imports that have not begun; the next idle moment arms them again."""
        with self._lock:
            if self._timer is not None and not self._begun.is_set():
                self._timer.cancel()
                self._timer = None

    def _import_all(self) -> None:
        with self._lock:
            if self._timer is not threading.current_thread() or self._settled:
                return  # disarmed as it fired
            self._begun.set()

        begun = time.perf_counter()
        try:
            if not config.get("prewarm"):
                return
            for name in (*MODULES, *_optional()):
                importlib.import_module(name)
        except Exception:  # the operation that needs the module imports it again, and says why
            log.debug("importing ahead of the first start failed", exc_info=True)
            return
        finally:
            self._finished.set()
        self.took = time.perf_counter() - begun
        log.debug("imports for the first start made in %.2fs", self.took)


def _optional() -> list[str]:
    """The scheduler's HTTP routes, the dashboard where bokeh is installed, dask-cuda where it is
    installed and GPUs are seen."""
    import dask.config

    names = list(dask.config.get(ROUTES, default=None) or [])
    if importlib.util.find_spec("bokeh") is not None:
        names.append(DASHBOARD)
    if importlib.util.find_spec("dask_cuda") is not None and config.get("nvml") and nvml.devices():
        names.append("dask_cuda")
    return names
