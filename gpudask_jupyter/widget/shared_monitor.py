"""What a kernel's panels share (:class:`KernelView`): one Monitor that follows the kernel's
cluster, the panels themselves, and the kernel's cells they watch.

The monitor is told which cluster to follow by :meth:`KernelView.sources`, which reads the
kernel's cluster (:class:`..cluster.session.KernelCluster`) on every tick: a cluster started,
replaced or stopped by ``%gpu_cluster`` shows up in the panels without either side calling the
other. On a shared GPU server it reads the room too (:func:`kernel_room`).

The extension makes one view per kernel (:class:`..magics.extension.Extension`) and leaves it on
the kernel's IPython (:data:`SHELL_SLOT`), where a ``Panel()`` made in a cell finds it
(:func:`this_kernel_view`); a test makes its own, which sees nothing of another's.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Protocol

from ..cluster import controls
from ..cluster.room import views_reader
from ..cluster.session import ClusterSession, KernelCluster
from ..monitor import Monitor, Source
from ..monitor.callers import ClientCaller
from ..monitor.room_watch import RoomParts
from ..registry.kernel_id import kernel_id
from ..schema.protocol import ActionResult

log = logging.getLogger(__name__)

KEY = "kernel"
"""The kernel's cluster in the monitor: a kernel follows one cluster, its own."""

SHELL_SLOT = "gpudask_jupyter"
"""The attribute of the kernel's IPython shell that holds the loaded extension (which has the
kernel's view as ``view``): IPython keeps one shell per kernel, the natural place of what is
per kernel."""

#: seconds a stop waits for the panels' last look at the cluster
LAST_LOOK = 2.0


def kernel_room(now: float) -> RoomParts | None:
    """The room as this kernel's panels show it (the room of a shared GPU server, this kernel's
    lease marked "you"); None where there is none. Read on the monitor's thread."""
    own = kernel_id()
    return views_reader(lambda key: own)(now)


class Follower(Protocol):
    """A panel, as its kernel's view sees it: told when cells start and end, closed with the
    kernel's extension."""

    def _cells(self, running: bool) -> None: ...

    def close(self) -> None: ...


class KernelView:
    """What the panels of one kernel share: the monitor of the kernel's cluster (made on first
    use, stopped with the last panel's kernel), the panels, and the cells they follow."""

    def __init__(self, cluster: KernelCluster) -> None:
        self.cluster = cluster
        self._monitor: Monitor | None = None
        self._lock = threading.Lock()
        self.panels: weakref.WeakSet[Follower] = weakref.WeakSet()
        self._watching: Any = None  # the shell whose cells the panels follow

    def sources(self) -> dict[str, Source]:
        """The kernel's current cluster until it is stopped; none otherwise. A cluster whose
        scheduler stopped answering stays (the panel says it is unreachable), one whose client
        was closed shows as closed."""
        session = self.cluster.current()
        if session is None or session.closing:
            return {}
        try:
            source = Source(
                token=session,
                caller=lambda: ClientCaller(session.client),
                mode=session.mode,
                address=session.address,
                dashboard=session.dashboard_link,
                # a joined cluster: ours are the workers this kernel runs, looked up when asked
                ours=session.kind.owns if session.kind.mixed else None,
                stopping=lambda: session.closing or self.cluster.current() is not session,
                stopped_at=lambda: session.stopped_at,
            )
        except Exception:  # a session whose client broke meanwhile is as good as gone
            log.debug("the kernel's cluster cannot be described", exc_info=True)
            return {}
        return {KEY: source}

    def monitor(self) -> Monitor:
        """The kernel's monitor, made on first use."""
        with self._lock:
            if self._monitor is None:
                self._monitor = Monitor(self.sources, room=kernel_room)
                self.cluster.before_close(self._last_look)
            return self._monitor

    def running(self) -> Monitor | None:
        """The monitor if panels keep it sampling; None otherwise (nothing is started)."""
        monitor = self._monitor
        return monitor if monitor is not None and monitor.running else None

    def stop(self) -> None:
        """Stop the sampler thread and forget the monitor (the next panel makes a new one)."""
        with self._lock:
            monitor, self._monitor = self._monitor, None
        if monitor is not None:
            monitor.stop()

    def _last_look(self, session: ClusterSession) -> None:
        """Before the kernel's cluster stops: one more sample, so that the panels keep its
        final progress (every round done), not the one of the sample before."""
        monitor = self._monitor
        if monitor is not None:
            monitor.last_look(LAST_LOOK)

    def control(self, action: str, n: int | None = None) -> ActionResult:
        """A view's button, run on the kernel's cluster (:func:`..cluster.controls.run`)."""
        return controls.run(self.cluster, action, n)

    # -- the panels and the cells they follow --------------------------------------------------

    def add(self, panel: Follower) -> None:
        self.panels.add(panel)
        self._watch_cells()

    def close(self) -> None:
        """Close every panel of the kernel, then stop the sampler they shared
        (``%unload_ext``)."""
        for panel in list(self.panels):
            panel.close()
        self.stop()
        if self._watching is not None:
            for event, callback in (
                ("pre_run_cell", self._cell_starts),
                ("post_run_cell", self._cells_ran),
            ):
                try:
                    self._watching.events.unregister(event, callback)
                except ValueError:
                    log.debug("%s was not registered", event)
            self._watching = None

    def _cell_starts(self, *_: Any) -> None:
        for panel in list(self.panels):
            panel._cells(running=True)

    def _cells_ran(self, *_: Any) -> None:
        for panel in list(self.panels):
            panel._cells(running=False)

    def _watch_cells(self) -> None:
        """Tell the panels when cells start and end (IPython's events), once per shell."""
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None or shell is self._watching:
            return
        shell.events.register("pre_run_cell", self._cell_starts)
        shell.events.register("post_run_cell", self._cells_ran)
        self._watching = shell


def in_a_kernel() -> bool:
    """Whether this runs in an IPython kernel (JupyterLab, Notebook, VS Code, Voila,
    nbconvert/papermill), not in a terminal or a plain interpreter."""
    import sys

    shell_module = sys.modules.get("ipykernel.zmqshell")
    if shell_module is None:
        return False
    from IPython import get_ipython

    return isinstance(get_ipython(), shell_module.ZMQInteractiveShell)


def this_kernel_view() -> KernelView:
    """The view of the kernel this runs in: the loaded extension's, loaded now in a kernel where
    it is not (as ``%load_ext gpudask_jupyter`` would: a panel's buttons start clusters the
    kernel's end must close); elsewhere, a view of a cluster of its own."""
    from IPython import get_ipython

    shell = get_ipython()
    loaded = getattr(shell, SHELL_SLOT, None) if shell is not None else None
    if loaded is None and in_a_kernel():
        shell.run_line_magic("load_ext", "gpudask_jupyter")
        loaded = getattr(shell, SHELL_SLOT, None)
    if loaded is None:
        return KernelView(KernelCluster())
    view: KernelView = loaded.view
    return view
