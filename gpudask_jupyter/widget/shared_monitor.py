"""The kernel's one Monitor, shared by every panel of the kernel: it follows the kernel's cluster.

The monitor is told which cluster to follow by the sources function registered here, which reads
:func:`..cluster.session.current` on every tick: a cluster started, replaced or stopped by
``%gpu_cluster`` shows up in the panels without either side calling the other. On a shared GPU
server it reads the room too (:func:`kernel_room`).
"""

from __future__ import annotations

import logging
import threading

from ..cluster import session as cluster_session
from ..monitor import Monitor, Source
from ..monitor.callers import ClientCaller
from ..monitor.room_watch import RoomParts

log = logging.getLogger(__name__)

KEY = "kernel"
"""The kernel's cluster in the monitor: a kernel follows one cluster, its own."""

_monitor: Monitor | None = None
_lock = threading.Lock()


def kernel_sources() -> dict[str, Source]:
    """The kernel's current cluster until it is stopped; none otherwise. A cluster whose
    scheduler stopped answering stays (the panel says it is unreachable), one whose client was
    closed shows as closed."""
    session = cluster_session.current()
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
            stopping=lambda: session.closing or cluster_session.current() is not session,
            stopped_at=lambda: session.stopped_at,
        )
    except Exception:  # a session whose client broke meanwhile is as good as gone
        log.debug("the kernel's cluster cannot be described", exc_info=True)
        return {}
    return {KEY: source}


def kernel_room(now: float) -> RoomParts | None:
    """The room as this kernel's panels show it (the room of a shared GPU server, this kernel's
    lease marked "you"); None where there is none. Read on the monitor's thread."""
    from ..cluster.room import views_reader
    from ..registry.kernel_id import kernel_id

    own = kernel_id()
    return views_reader(lambda key: own)(now)


#: seconds a stop waits for the panels' last look at the cluster
LAST_LOOK = 2.0


def _last_look(session: cluster_session.ClusterSession) -> None:
    """Before the kernel's cluster stops: one more sample, so that the panels keep its final
    progress (every round done), not the one of the sample before."""
    monitor = _monitor
    if monitor is not None:
        monitor.last_look(LAST_LOOK)


def kernel_monitor() -> Monitor:
    """The kernel's monitor, made on first use."""
    global _monitor
    with _lock:
        if _monitor is None:
            _monitor = Monitor(kernel_sources, room=kernel_room)
            cluster_session.before_close(_last_look)
        return _monitor


def stop_kernel_monitor() -> None:
    """Stop the sampler thread and forget the monitor (the next panel makes a new one)."""
    global _monitor
    with _lock:
        monitor, _monitor = _monitor, None
    if monitor is not None:
        monitor.stop()


def running_monitor() -> Monitor | None:
    """The kernel's monitor if panels keep it sampling; None otherwise (nothing is started)."""
    monitor = _monitor
    return monitor if monitor is not None and monitor.running else None
