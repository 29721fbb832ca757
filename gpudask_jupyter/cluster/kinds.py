"""The kinds of cluster a kernel can have, as kinds: one this kernel started (:class:`Started`),
one it attached to (:class:`Attached`), one it lent its GPUs to (:class:`Joined`) and one of
dask-gateway (:class:`Gateway`).

A :class:`~.session.ClusterSession` holds one of them and asks it whatever differs between them:
how to scale, restart, leave and close, what its tables and its stop say, who else can reach it,
whose each worker is. Everything the kinds share (the client, the registry entry, the room, the
closing order) stays in the session. A new kind is a new class here; the session, the tables and
the magics do not change.

The session calls a kind's close in three moments: :meth:`Kind.quiet` before the registry entry
goes (nothing may write it again), :meth:`Kind.let_go` while the client is still open (the
scheduler may still be asked), :meth:`Kind.end` once it is closed.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from .. import config, lifecycle
from ..errors import ClusterError
from ..machine import gpus
from .connect import close_quietly, dashboard_link, http_routes, wait_for_count
from .gateway import GatewayCluster
from .join import QUICK_RETIRE, JoinedWorkers, Retirement
from .options import check_cpu_workers
from .security import Access
from .worker_processes import ENDING_GRACE, WorkerPids, no_restarts

log = logging.getLogger(__name__)


def _plural(n: int) -> str:
    return f"{n} worker{'s' * (n != 1)}"


class ClusterSession(Protocol):
    """What a kind asks of the session that holds it (:class:`.session.ClusterSession`, which
    this module does not import: the session holds kinds, not the other way round)."""

    client: Any
    tls_files: dict[str, str] | None
    pids: WorkerPids

    @property
    def address(self) -> str: ...

    @property
    def alive(self) -> bool: ...

    @property
    def dashboard_link(self) -> str | None: ...

    def gone(self) -> str: ...

    def workers(self) -> dict[str, dict[str, Any]]: ...

    def note_room(self) -> None: ...

    def leave(self) -> Retirement: ...

    def close(self) -> None: ...


class Kind(Protocol):
    """What differs between the kinds of cluster, asked by the session that holds one."""

    #: "gpu", "cpu", "attached", "joined" or "gateway": what the registry and the views say
    mode: str
    #: the status table's heading
    heading: str
    #: whether some of its workers are this kernel's and some are not (a "whose" column)
    mixed: bool

    def title(self, session: ClusterSession, workers: dict[str, Any]) -> str:
        """The summary table's title."""
        ...

    def reach(self, session: ClusterSession) -> str:
        """One line on who can reach the cluster (and its dashboard)."""
        ...

    def notes(self, session: ClusterSession) -> list[str]:
        """What the tables add about this kind."""
        ...

    def owns(self, address: str) -> bool:
        """Whether the worker at ``address`` is this kernel's."""
        ...

    def dashboard(self, session: ClusterSession) -> str | None:
        """The Dask dashboard's address, None without one."""
        ...

    def workers_of_kernel(self) -> list[str] | None:
        """The addresses of this kernel's workers, for the registry, where the kind lends some
        to a scheduler of others; None otherwise."""
        ...

    def scale(self, session: ClusterSession, n: int) -> None: ...

    def adapt(self, session: ClusterSession, minimum: int, maximum: int) -> None: ...

    def restart(self, session: ClusterSession, timeout: float) -> None: ...

    def leave(self, session: ClusterSession, timeout: float) -> Retirement: ...

    def keep_running(self) -> None:
        """``stop --keep``: leave the cluster running when this kernel lets go of it."""
        ...

    def stop(self, session: ClusterSession) -> Retirement | None:
        """``%gpu_cluster stop``: close the session as this kind is closed."""
        ...

    def stopped(self, session: ClusterSession, retirement: Retirement | None) -> str:
        """What ``stop`` says once done."""
        ...

    def gone(self) -> tuple[str, str]:
        """(what it no longer is, what ``stop`` then does), for a session that stopped working."""
        ...

    def quiet(self) -> None: ...

    def let_go(self, session: ClusterSession, alive: bool) -> None: ...

    def end(self, session: ClusterSession) -> None: ...


class KindBase:
    """What most kinds do alike (a cluster this kernel neither started nor lent workers to);
    a kind subclasses it and overrides what it does otherwise."""

    mode = ""
    heading = ""
    mixed = False

    def notes(self, session: ClusterSession) -> list[str]:
        return []

    def owns(self, address: str) -> bool:
        return False

    def dashboard(self, session: ClusterSession) -> str | None:
        return dashboard_link(session.client)

    def workers_of_kernel(self) -> list[str] | None:
        return None

    def scale(self, session: ClusterSession, n: int) -> None:
        raise ClusterError(
            f"This kernel attached to {session.address} and did not start it, so it cannot "
            "scale it; add or remove workers where that cluster was started (dask cuda "
            "worker, your job scheduler, dask-gateway ...)."
        )

    def adapt(self, session: ClusterSession, minimum: int, maximum: int) -> None:
        raise ClusterError(
            "Adaptive scaling is offered for clusters of dask-gateway (start --gateway); "
            "this kernel's cluster takes %gpu_cluster scale N."
        )

    def restart(self, session: ClusterSession, timeout: float) -> None:
        session.client.restart(timeout=timeout)

    def leave(self, session: ClusterSession, timeout: float) -> Retirement:
        raise ClusterError(
            f"This kernel did not join {session.address}: leave is for a cluster joined with "
            "%gpu_cluster join. %gpu_cluster stop disconnects from it."
        )

    def keep_running(self) -> None:
        raise ClusterError(
            "stop --keep is for a cluster of dask-gateway, which runs without this kernel; "
            "this one ends with %gpu_cluster stop"
        )

    def stop(self, session: ClusterSession) -> Retirement | None:
        session.close()
        return None

    def quiet(self) -> None:
        pass

    def let_go(self, session: ClusterSession, alive: bool) -> None:
        pass

    def end(self, session: ClusterSession) -> None:
        pass


class Started(KindBase):
    """A cluster this kernel started: one worker per GPU (a CPU ``LocalCluster`` where it has
    none). Closing it ends it, worker processes included."""

    mixed = False

    def __init__(
        self,
        cluster: Any,
        devices: list[Any],
        access: Access,
        cpu_reason: str = "",
        cpu_workers_allowed: int | None = None,
    ) -> None:
        self.cluster = cluster
        self.devices = devices
        self.access = access
        self.cpu_reason = cpu_reason
        self.cpu_workers_allowed = cpu_workers_allowed  # beyond the cores: --oversubscribe
        self.mode = "gpu" if devices else "cpu"
        self.heading = "GPU cluster" if devices else "CPU cluster (no GPU)"

    def title(self, session: ClusterSession, workers: dict[str, Any]) -> str:
        n = len(workers)
        if self.devices:
            return f"GPU Dask cluster: {_plural(n)}, one per GPU"
        return f"CPU Dask cluster (no GPU): {_plural(n)}"

    def reach(self, session: ClusterSession) -> str:
        return self.access.reach(session.dashboard_link)

    def notes(self, session: ClusterSession) -> list[str]:
        return [] if self.devices else [f"no GPU: {self.cpu_reason}"]

    def owns(self, address: str) -> bool:
        return True

    def dashboard(self, session: ClusterSession) -> str | None:
        if self.access.dashboard is None:
            return None  # the scheduler's HTTP port answers a health check only
        return dashboard_link(self.cluster)

    def scale(self, session: ClusterSession, n: int) -> None:
        if not session.alive:
            raise ClusterError(session.gone())
        if self.devices and n > len(self.devices):
            raise ClusterError(
                f"scale {n}: this cluster has {len(self.devices)} GPU(s) "
                f"({', '.join(gpus.identifier(d) for d in self.devices)}), one worker each; "
                "start it with more --gpus to go further"
            )
        if not self.devices:
            check_cpu_workers(n, "scale", self.cpu_workers_allowed)
        # the nannies are made on the cluster's loop while we wait: the routes hold until then
        with http_routes(self.access.dashboard is not None):
            self.cluster.scale(n)
            wait_for_count(lambda: len(session.workers()), n, float(config.get("startup-timeout")))
        session.pids.note(self.cluster)
        session.note_room()

    def restart(self, session: ClusterSession, timeout: float) -> None:
        asked = len(self.cluster.worker_spec)
        if asked and not session.workers():
            # every worker ended and no nanny is left to bring one back (a task they could not
            # unpickle: .stranded): the scheduler would restart nothing, so the workers start
            # anew first, with this kernel's module path of now; the restart then forgets the
            # tasks, as it does for workers that were there
            self.cluster.scale(0)  # the ended nannies go first: the same names come back
            wait_for_count(lambda: len(self.cluster.workers), 0, timeout)
            self.scale(session, asked)
        session.client.restart(timeout=timeout)
        session.pids.note(self.cluster)
        session.note_room()

    def leave(self, session: ClusterSession, timeout: float) -> Retirement:
        raise ClusterError(
            f"This kernel did not join {session.address}: leave is for a cluster joined with "
            "%gpu_cluster join. %gpu_cluster stop ends this kernel's cluster."
        )

    def stopped(self, session: ClusterSession, retirement: Retirement | None) -> str:
        return "Cluster stopped; its workers are gone."

    def gone(self) -> tuple[str, str]:
        return "usable", "ends what is left of it (workers included); then start it"

    def let_go(self, session: ClusterSession, alive: bool) -> None:
        session.pids.note(self.cluster)
        if lifecycle.ending():  # no task's end is awaited: nothing will use the cluster
            no_restarts(self.cluster)  # the nannies first: no worker is respawned
            session.pids.end_leftovers(ENDING_GRACE, "the kernel is going away")

    def end(self, session: ClusterSession) -> None:
        close_quietly(self.cluster, 30)
        session.pids.end_leftovers()


class Attached(KindBase):
    """A scheduler that runs elsewhere, this kernel only connected to it: closing disconnects,
    and the cluster keeps running."""

    mode = "attached"
    heading = "Attached cluster"

    def title(self, session: ClusterSession, workers: dict[str, Any]) -> str:
        return f"Attached to {session.address}: {_plural(len(workers))}"

    def reach(self, session: ClusterSession) -> str:
        how = "TLS, with the files given" if session.tls_files else "plain TCP"
        return f"connected with {how}; who else can reach it was decided where it was started"

    def stopped(self, session: ClusterSession, retirement: Retirement | None) -> str:
        return f"Detached from {session.address}; that cluster keeps running."

    def gone(self) -> tuple[str, str]:
        return "reachable", "forgets it; then attach"


class Joined(Attached):
    """A scheduler of others, to which this kernel lent its GPUs (its own worker per GPU, or
    CPU workers): only this kernel's workers are restarted, and stop retires them."""

    mode = "joined"
    heading = "Joined cluster"
    mixed = True

    def __init__(self, workers: JoinedWorkers, cpu_reason: str = "") -> None:
        self.workers = workers
        self.cpu_reason = cpu_reason

    def title(self, session: ClusterSession, workers: dict[str, Any]) -> str:
        ours = sum(self.workers.owns(address) for address in workers)
        return f"Joined {session.address}: {ours} worker{'s' * (ours != 1)} of this kernel, " + (
            f"{len(workers)} in all"
        )

    def reach(self, session: ClusterSession) -> str:
        where = self.workers.host or "this machine"
        workers = (
            "only holders of a certificate of that TLS authority"
            if session.tls_files
            else f"anyone who can reach {where} (plain TCP): they can run code as you"
        )
        return (
            f"{super().reach(session)}; this kernel's workers, at {where}, take connections "
            f"from {workers}"
        )

    def notes(self, session: ClusterSession) -> list[str]:
        said = [f"this kernel's workers are CPU workers: {self.cpu_reason}"] * bool(self.cpu_reason)
        return [
            *said,
            "%gpu_cluster leave retires this kernel's workers (their data moves to the others)",
        ]

    def owns(self, address: str) -> bool:
        return self.workers.owns(address)

    def workers_of_kernel(self) -> list[str] | None:
        return self.workers.addresses()

    def scale(self, session: ClusterSession, n: int) -> None:
        raise ClusterError(
            f"This kernel joined its workers to {session.address} and did not start it, so it "
            "cannot scale it; %gpu_cluster leave, then join again with --n-workers N."
        )

    def restart(self, session: ClusterSession, timeout: float) -> None:
        session.client.restart_workers(self.workers.addresses(), timeout=timeout)

    def leave(self, session: ClusterSession, timeout: float) -> Retirement:
        retirement = self.workers.leave(session.client if session.alive else None, timeout)
        session.close()
        return retirement

    def stop(self, session: ClusterSession) -> Retirement | None:
        return session.leave()

    def stopped(self, session: ClusterSession, retirement: Retirement | None) -> str:
        assert retirement is not None
        return f"{retirement.describe(session.address)} This kernel is disconnected from it."

    def gone(self) -> tuple[str, str]:
        return "reachable", "ends this kernel's workers and forgets it; then join"

    def quiet(self) -> None:
        self.workers.stop_watching()  # it would write the entry again

    def let_go(self, session: ClusterSession, alive: bool) -> None:
        self.workers.leave(session.client if alive else None, QUICK_RETIRE)


class Gateway(KindBase):
    """A cluster of dask-gateway, started or reconnected to from here: the gateway starts,
    scales and ends it; ``stop --keep`` leaves it running for a later ``attach --gateway``."""

    mode = "gateway"
    heading = "dask-gateway cluster"

    def __init__(self, made: GatewayCluster) -> None:
        self.made = made

    def title(self, session: ClusterSession, workers: dict[str, Any]) -> str:
        return (
            f"dask-gateway cluster {self.made.name} at {self.made.address}: {_plural(len(workers))}"
        )

    def reach(self, session: ClusterSession) -> str:
        return (
            "connected with TLS credentials dask-gateway made for this cluster alone and handed "
            "to you; who else may use it is the gateway's to decide (by default, nobody else)"
        )

    def dashboard(self, session: ClusterSession) -> str | None:
        return self.made.dashboard_link or None

    def scale(self, session: ClusterSession, n: int) -> None:
        if not session.alive:
            raise ClusterError(session.gone())
        timeout = float(config.get("startup-timeout"))
        self.made.scale(n, timeout)
        wait_for_count(lambda: len(session.workers()), n, timeout)

    def adapt(self, session: ClusterSession, minimum: int, maximum: int) -> None:
        if minimum > maximum:
            raise ClusterError(f"scale --adapt {minimum} {maximum}: MIN is above MAX")
        self.made.adapt(minimum, maximum, float(config.get("startup-timeout")))

    def keep_running(self) -> None:
        self.made.keep = True

    def stopped(self, session: ClusterSession, retirement: Retirement | None) -> str:
        made = self.made
        if made.keep:
            return (
                f"Disconnected; dask-gateway at {made.address} keeps the cluster {made.name} "
                "running (its idle timeout ends it if nobody comes back). Come back with "
                f"%gpu_cluster attach --gateway {made.name}"
            )
        if not made.started:
            return f"Detached from {made.name}; dask-gateway keeps it running."
        return f"Cluster {made.name} shut down by dask-gateway."

    def gone(self) -> tuple[str, str]:
        return (
            "reachable",
            f"asks dask-gateway at {self.made.address} to shut it down and forgets it; then start",
        )

    def end(self, session: ClusterSession) -> None:
        self.made.close(float(config.get("startup-timeout")))


#: every kind, each checked against :class:`Kind` by mypy here
KINDS: tuple[type[Kind], ...] = (Started, Attached, Joined, Gateway)
