"""The kernel's Dask cluster: start one worker per GPU, attach to an existing scheduler, or join
this machine's GPUs to a scheduler that runs elsewhere.

Dask distributed is the engine; this module keeps the one :class:`ClusterSession` of this process,
records it in the per-kernel registry for the server extension, and guarantees that what the kernel
started is closed again, worker processes included, whatever state the client and the scheduler are
in (``stop``, ``%unload_ext``, the kernel's shutdown request or SIGTERM through
:mod:`..lifecycle.shutdown`, interpreter exit). A cluster this kernel merely attached to is never
shut down from here, only disconnected from; one it joined is left by its own workers alone
(:mod:`.join`). What differs between these kinds of cluster, each session asks its kind
(:mod:`.kinds`); what they share (the client, the registry entry, the room, the order of a
close) is here. What to start (which GPUs, which fallback, which keywords) is decided in
:mod:`.options`, who may reach it in :mod:`.security`; the library's objects are made and closed by
:mod:`.connect`; :mod:`.tables` describes a session and knows nothing of this module.

Every failure a user can cause or fix surfaces as a :class:`~..errors.GpuDaskError` that names
the address, GPU or option involved.
"""

# size: most of the length is the numpydoc reference of ClusterSession that help() shows
from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import compat, config, lifecycle, registry
from ..errors import ClusterError, ErrorLog
from ..gpu_time import kernel as gpu_time
from ..machine import nvml, processes
from ..monitor.scheduler_probe import record_tasks
from ..registry.kernel_id import kernel_id
from ..text.units import format_seconds
from . import gateway, kinds, logs, room
from .connect import (
    close_quietly,
    connect,
    launch,
    prune_registry,
    wait_for_count,
    workers_ahead,
)
from .gateway import GatewayCluster
from .gpu_bindings import GpuBindings
from .join import JoinedWorkers, Retirement, worker_name
from .kinds import Kind
from .operations import Operations
from .options import (
    ATTACH_TIMEOUT,
    LEAVE_TIMEOUT,
    StartOptions,
    temporary_tls,
)
from .prewarm import Prewarm
from .room import caps as room_caps
from .room import holder as room_holder
from .security import Access
from .target import AttachTarget
from .worker_processes import (
    IpyMainGuard,
    WorkerPids,
    end_resource_tracker,
)

log = logging.getLogger(__name__)

#: seconds a question to the scheduler (the workers, for status) may take
CALL_TIMEOUT = 10.0


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class ClusterSession:
    """The cluster this kernel started, attached to or joined, and the Client that talks to it.

    ``%gpu_cluster start``, ``attach`` and ``join`` each make one with the classmethod of the
    same name and keep it as the kernel's session (:meth:`KernelCluster.current`); ``scale``,
    ``restart``, ``leave``, ``stop`` and ``status`` work on that session through the methods
    below. Called from Python, the methods run on the calling thread, without the magics' guard
    that keeps Ctrl-C from cutting one in half, and a new session does not close the running one
    (``--replace`` does): close it first.

    Parameters
    ----------
    client : distributed.Client
        The client of the cluster's scheduler.
    kind : Kind
        What kind of cluster it is, and what differs with that: a cluster this kernel started
        (:class:`~.kinds.Started`), attached to (:class:`~.kinds.Attached`), lent its GPUs to
        (:class:`~.kinds.Joined`) or got from dask-gateway (:class:`~.kinds.Gateway`).
    devices : list
        The GPUs (NVML devices) of this kernel's workers, one each; empty for CPU workers and
        for a cluster attached to.
    tls_files : dict of str to str, optional
        The TLS files clients of the cluster use, by role, as the registry records them.

    Attributes
    ----------
    client : distributed.Client
        The ``Client`` the magic returns, made the default.
    kind : Kind
        Its kind, as given.
    mode : str
        ``"gpu"``, ``"cpu"`` (a local fallback cluster), ``"attached"``, ``"joined"`` or
        ``"gateway"``.
    address : str
        The scheduler's address.
    dashboard_link : str or None
        The Dask dashboard, None when it is off.
    alive : bool
        Whether the session still works (not closed, the client running).

    See Also
    --------
    start, attach, join : Make the kernel's session.

    Examples
    --------
    Before ``%gpu_cluster start`` (or ``attach``, ``join``) the kernel has no session (the
    extension holds one :class:`KernelCluster` per kernel; a new one here):

    >>> from gpudask_jupyter.cluster.session import KernelCluster
    >>> kernel = KernelCluster()
    >>> print(kernel.current())
    None

    After it, the session holds what the magic made: a local cluster over TLS (on a machine
    without a GPU, of CPU workers), here started as the magic starts it:

    >>> from gpudask_jupyter import ClusterSession
    >>> from gpudask_jupyter.cluster.commands import plan_start
    >>> from gpudask_jupyter.cluster.options import StartOptions
    >>> session = ClusterSession.start(plan_start(StartOptions(n_workers=1)))
    >>> session.mode in {"gpu", "cpu"}, session.address.startswith("tls://127.0.0.1:")
    (True, True)
    >>> session.client.submit(sum, [1, 2]).result()
    3
    >>> session.close()
    """

    def __init__(
        self,
        client: Any,
        kind: Kind,
        devices: list[nvml.Device],
        tls_files: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.kind = kind
        self.devices = devices
        self.tls_files = tls_files
        self.place: room.Place | None = None  # its place on a shared machine
        self.kernel_id = kernel_id()
        self.gpu_bindings = GpuBindings()
        self.pids = WorkerPids()
        self.main_guard = IpyMainGuard()
        # kept: once the client is closed its ``scheduler`` is None, and stop must still say it
        self._address = str(client.scheduler.address)
        self._closed = False
        self._dashboard: str | None = None
        self._created = time.time()  # the registry entry's, kept when it is written again
        self.owner: KernelCluster | None = None  # the kernel's, once it holds the session
        self.stopped_at: float | None = None  # when this kernel began to close it

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def start(cls, plan: StartPlan) -> ClusterSession:
        """Start a local cluster as ``plan`` (see :func:`plan_start`) says. Nothing is left
        running when it fails.

        What ``%gpu_cluster start`` runs once its checks have passed: one dask-cuda worker per
        GPU of the plan (a CPU ``LocalCluster`` where it has none), its client made the
        default, the new session the kernel's.

        Parameters
        ----------
        plan : StartPlan
            From :func:`gpudask_jupyter.cluster.commands.plan_start`, given the options of
            ``%gpu_cluster start`` (:class:`~gpudask_jupyter.cluster.options.StartOptions`),
            which refuses what cannot start (``ClusterError``; ``NoGpuError`` where a GPU is
            required and none is usable) before anything starts.

        Returns
        -------
        ClusterSession
            The kernel's new session; its ``client`` is the ``Client`` the magic returns.

        Raises
        ------
        ClusterError
            The cluster did not start, or its workers did not come up within the
            ``startup-timeout`` option; what had begun is closed again.

        Examples
        --------
        The plan refuses what cannot start, before anything starts:

        >>> from gpudask_jupyter.cluster.commands import plan_start
        >>> from gpudask_jupyter.cluster.options import StartOptions
        >>> plan_start(StartOptions(host="0.0.0.0", tls=False))
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: --host 0.0.0.0 without TLS would let anyone who
        can reach 0.0.0.0 run code as you. Drop --no-tls (TLS is the default), or add
        --allow-insecure-network to accept that.

        One worker (on a GPU; on a machine without one, a CPU worker):

        >>> from gpudask_jupyter import ClusterSession
        >>> session = ClusterSession.start(plan_start(StartOptions(n_workers=1)))
        >>> len(session.workers())
        1
        >>> session.close()
        """
        opts, access = plan.opts, plan.access
        prune_registry()
        kernel = kernel_id()
        guard = IpyMainGuard()  # before any process is made: the fork server's probe too
        guard.hold()
        try:
            client, cluster, tls_files = _launched(plan, kernel)
        except BaseException:
            guard.release()
            raise
        allowed = opts.n_workers if opts.oversubscribe else None
        kind = kinds.Started(cluster, plan.devices, access, plan.reason, allowed)
        session = cls(client, kind, plan.devices, tls_files)
        session.main_guard = guard
        session.place = plan.place
        session.pids.note(cluster)
        session.note_room()
        _record_tasks(client)
        gpu_time.install(client)
        _watch_stranded(cluster)
        session._register()
        return session

    @classmethod
    def attach(
        cls,
        target: AttachTarget,
        timeout: float = ATTACH_TIMEOUT,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> ClusterSession:
        """Connect to ``target``'s running scheduler within ``timeout`` (given up, nothing left
        open, once ``cancelled()``).

        What ``%gpu_cluster attach`` runs. A cluster attached to is never shut down from here:
        :meth:`close` only disconnects from it.

        Parameters
        ----------
        target : AttachTarget
            The scheduler: from
            :meth:`AttachTarget.resolve <gpudask_jupyter.cluster.target.AttachTarget.resolve>`,
            given an address or a scheduler file, and the TLS files a ``tls://`` one needs.
        timeout : float, default 10.0
            Seconds the whole connection, handshake included, may take.
        cancelled : callable, optional
            Asked while waiting; once it returns True the attempt is given up.

        Returns
        -------
        ClusterSession
            The kernel's new session, in mode ``"attached"``, its client made the default.

        Raises
        ------
        ClusterError
            No Dask scheduler answered at the address within ``timeout`` (nobody, a silent
            port, an HTTP server or a dashboard: the message says which), or the connection
            failed; nothing is left open.

        Examples
        --------
        The target checks what it is given, without connecting:

        >>> from gpudask_jupyter.cluster.target import AttachTarget
        >>> AttachTarget.resolve("127.0.0.1:8786", None).address
        'tcp://127.0.0.1:8786'
        >>> AttachTarget.resolve("tls://10.0.0.5:8786", None)
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: tls://10.0.0.5:8786 uses TLS: pass --tls-ca-file,
        --tls-cert and --tls-key

        Attaching needs a scheduler that answers there (here one of distributed's own):

        >>> from distributed import LocalCluster
        >>> from gpudask_jupyter import ClusterSession
        >>> theirs = LocalCluster(n_workers=0, processes=False, dashboard_address=None)
        >>> session = ClusterSession.attach(AttachTarget.resolve(theirs.scheduler_address, None))
        >>> session.mode
        'attached'
        >>> session.close()
        >>> theirs.close()
        """
        prune_registry()
        client = connect(target, timeout, cancelled=cancelled)
        session = cls(client, kinds.Attached(), [], tls_files=target.tls_files())
        gpu_time.install(client)
        session._register()
        return session

    @classmethod
    def from_gateway(cls, made: GatewayCluster, timeout: float) -> ClusterSession:
        """The kernel's session of a dask-gateway cluster (started here or reconnected to):
        its client made the default, its TLS credentials in the registry's owner-only folder
        for the sidebar. The cluster is shut down again if this fails (unless only reconnected
        to)."""
        prune_registry()
        try:
            client = made.cluster.get_client(set_as_default=True)
            tls = registry.write_tls(kernel_id(), gateway.security_files(made.cluster))
            if made.asked:
                wait_for_count(lambda: len(client.scheduler_info()["workers"]), made.asked, timeout)
        except BaseException:
            registry.remove_tls(kernel_id())
            made.close(timeout)
            raise
        session = cls(client, kinds.Gateway(made), [], tls_files=tls)
        gpu_time.install(client)
        session._register()
        return session

    @classmethod
    def join(cls, plan: JoinPlan) -> ClusterSession:
        """Lend this machine's GPUs (else CPU workers) to the scheduler of ``plan`` (see
        :func:`plan_join`): connect, then start one worker per GPU there. Nothing is left
        running on failure.

        What ``%gpu_cluster join`` runs once its checks have passed. The workers run whatever
        the scheduler sends them, as you: join only schedulers you trust.

        Parameters
        ----------
        plan : JoinPlan
            A join checked in full by :func:`gpudask_jupyter.cluster.commands.plan_join`,
            given the scheduler (an
            :class:`~gpudask_jupyter.cluster.target.AttachTarget`) and the workers'
            :class:`~gpudask_jupyter.cluster.options.StartOptions`; making it finds the
            scheduler answering.

        Returns
        -------
        ClusterSession
            The kernel's new session, in mode ``"joined"``, its client made the default.

        Raises
        ------
        ClusterError
            The scheduler could not be reached, or this kernel's workers did not join it
            within the ``startup-timeout`` option; nothing is left running.

        See Also
        --------
        leave : Retire this kernel's workers, then disconnect.

        Examples
        --------
        A join needs a scheduler, by address or scheduler file:

        >>> from gpudask_jupyter.cluster.target import AttachTarget
        >>> AttachTarget.resolve(None, None, asked="join")
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: join needs a scheduler ADDRESS or --scheduler-file
        FILE (one of them)

        >>> from gpudask_jupyter import ClusterSession
        >>> from gpudask_jupyter.cluster.commands import plan_join
        >>> from gpudask_jupyter.cluster.options import StartOptions
        >>> target = AttachTarget.resolve("tcp://10.0.0.5:8786", None, asked="join")

        Joining lends this machine's GPUs, so it needs them (and a scheduler elsewhere):

        >>> plan = plan_join(target, StartOptions(gpus=[0, 1]))  # doctest: +SKIP
        >>> session = ClusterSession.join(plan)  # doctest: +SKIP
        >>> session.mode  # doctest: +SKIP
        'joined'
        """
        prune_registry()
        logs.route(kernel_id())  # the nannies and workers log to a file, not to a cell
        client = connect(plan.target, plan.timeout, "join")
        try:
            joined = JoinedWorkers.start(
                plan.target, plan.opts, plan.devices, worker_name(), plan.worker_caps
            )
        except BaseException:
            close_quietly(client, 10)
            raise
        kind = kinds.Joined(joined, plan.reason)
        session = cls(client, kind, plan.devices, tls_files=plan.target.tls_files())
        session.place = plan.place
        gpu_time.install(client)
        joined.on_change = session._register  # the server marks our workers by their addresses
        session._register()
        return session

    def note_room(self) -> None:
        """Tell the room this kernel's worker processes, and cap the kernel's own GPU work (its
        part of the share) now that its GPU is known."""
        if self.place is None:
            return
        room_holder.this_process.set_workers(self.pids.known())
        room_holder.this_process.watch(self._last_work)
        if self.devices:
            room_caps.this_process.install(room_holder.share_now(self.place.lease))
            where = room_caps.kernel_devices()
            ours = {share.uuid for share in self.place.lease.gpus}
            if self.place.pinned and where - ours:
                log.warning("the kernel works on %s, not on its GPUs %s", where, sorted(ours))
                self.place = dataclasses.replace(self.place, pinned=False)

    def _last_work(self) -> float | None:
        """When the cluster last worked: now while it has tasks, else when it ran out of them."""
        if not self.alive:
            return None
        idle = compat.run_on_scheduler(
            self.client,
            lambda dask_scheduler: compat.idle_since(dask_scheduler),
            CALL_TIMEOUT,
        )
        return time.time() if idle is None else float(idle)

    # -- properties -----------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        """ "gpu", "cpu" (a local fallback cluster), "attached", "joined" or "gateway"."""
        return self.kind.mode

    @property
    def address(self) -> str:
        return self._address

    @property
    def dashboard_link(self) -> str | None:
        if self._dashboard is None:
            self._dashboard = self.kind.dashboard(self) or ""
        return self._dashboard or None

    @property
    def closing(self) -> bool:
        """Being closed (or closed) by this kernel: what stops answering now was asked to."""
        return self._closed

    @property
    def alive(self) -> bool:
        return not self._closed and getattr(self.client, "status", None) == "running"

    def gone(self) -> str:
        """Why the session no longer works, and what still helps."""
        status = getattr(self.client, "status", "closed")
        why = (
            "its client was closed"
            if status in {"closed", "closing"}
            else "the scheduler does not answer (it stopped, or the connection broke)"
        )
        state, after = self.kind.gone()
        return (
            f"The cluster at {self.address} is no longer {state}: {why}. "
            f"%gpu_cluster stop {after} again."
        )

    def workers(self) -> dict[str, dict[str, Any]]:
        """The scheduler's description of each worker, by address, asked within
        :data:`CALL_TIMEOUT` (a paused scheduler must not hang ``status``).

        What ``%gpu_cluster status`` lists.

        Returns
        -------
        dict of str to dict
            Each worker's address, and what the scheduler says of it (``host``, ``name``,
            ``memory_limit``, ``nanny``, ``metrics`` ...).

        Raises
        ------
        ClusterError
            The session no longer works (closed, or its scheduler gone), or the scheduler did
            not answer within :data:`CALL_TIMEOUT` seconds.

        Examples
        --------
        The kernel's session; without one, :meth:`KernelCluster.require` says how to get one:

        >>> from gpudask_jupyter.cluster.session import KernelCluster
        >>> KernelCluster().require().workers()
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: this kernel has no cluster; start one with
        %gpu_cluster start or connect with %gpu_cluster attach ADDRESS

        With one (here started as ``%gpu_cluster start --n-workers 1`` starts it):

        >>> from gpudask_jupyter import ClusterSession
        >>> from gpudask_jupyter.cluster.commands import plan_start
        >>> from gpudask_jupyter.cluster.options import StartOptions
        >>> session = ClusterSession.start(plan_start(StartOptions(n_workers=1)))
        >>> list(session.workers())
        ['tls://127.0.0.1:...']
        >>> session.close()
        """
        if not self.alive:
            raise ClusterError(self.gone())
        try:
            # a lambda travels by value: a scheduler elsewhere need not have this package
            info = compat.run_on_scheduler(
                self.client, lambda dask_scheduler: dask_scheduler.identity(), CALL_TIMEOUT
            )
        except Exception as err:
            raise ClusterError(
                f"The scheduler at {self.address} did not answer within "
                f"{format_seconds(CALL_TIMEOUT)} ({type(err).__name__}: {err}); it may be "
                "paused, overloaded or gone. %gpu_cluster stop still works."
            ) from err
        workers: dict[str, dict[str, Any]] = info.get("workers", {})
        return workers

    def _register(self) -> None:
        entry = registry.Entry(
            kernel_id=self.kernel_id,
            pid=os.getpid(),
            mode=self.mode,
            scheduler_address=self.address,
            dashboard_link=self.dashboard_link,
            tls=self.tls_files,
            started=processes.process_started(os.getpid()),
            created=self._created,
            workers=self.kind.workers_of_kernel(),
        )
        try:
            registry.write(entry)
        except OSError as err:
            log.debug("writing the registry entry of %s failed", self.kernel_id, exc_info=True)
            _stderr(f"gpudask: could not write the registry entry for the sidebar ({err})")

    # -- management -----------------------------------------------------------------------------

    def scale(self, n: int) -> None:
        """Change the number of workers of a cluster this kernel started (or of dask-gateway),
        and wait until the scheduler lists that many.

        What ``%gpu_cluster scale N`` runs.

        Parameters
        ----------
        n : int
            Workers wanted: at most one per GPU the cluster was started with; for CPU
            workers, at most one per core the kernel may use (unless started with
            ``--oversubscribe``).

        Raises
        ------
        ClusterError
            The kernel attached to or joined the cluster (it is scaled where it was started),
            ``n`` is beyond the cluster's GPUs or cores, the session no longer works, or the
            workers did not come within the ``startup-timeout`` option.

        Examples
        --------
        >>> from gpudask_jupyter.cluster.session import KernelCluster
        >>> KernelCluster().require().scale(2)
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: this kernel has no cluster; start one with
        %gpu_cluster start or connect with %gpu_cluster attach ADDRESS

        With one (here started as ``%gpu_cluster start --n-workers 1`` starts it):

        >>> from gpudask_jupyter import ClusterSession
        >>> from gpudask_jupyter.cluster.commands import plan_start
        >>> from gpudask_jupyter.cluster.options import StartOptions
        >>> session = ClusterSession.start(plan_start(StartOptions(n_workers=1)))
        >>> session.scale(1)
        >>> len(session.workers())
        1
        >>> session.close()
        """
        self.kind.scale(self, n)

    def adapt(self, minimum: int, maximum: int) -> None:
        """Let dask-gateway scale the cluster between ``minimum`` and ``maximum`` workers.

        What ``%gpu_cluster scale --adapt MIN MAX`` runs.

        Parameters
        ----------
        minimum, maximum : int
            The fewest and the most workers the gateway may keep.

        Raises
        ------
        ClusterError
            The cluster is not one of dask-gateway (``scale`` takes a number there instead), or
            ``minimum`` is above ``maximum``.

        Examples
        --------
        >>> from gpudask_jupyter.cluster.session import KernelCluster
        >>> KernelCluster().require().adapt(1, 8)
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: this kernel has no cluster; start one with
        %gpu_cluster start or connect with %gpu_cluster attach ADDRESS

        >>> session.adapt(1, 8)  # after start --gateway  # doctest: +SKIP
        """
        self.kind.adapt(self, minimum, maximum)

    def restart(self) -> None:
        """Restart the workers (frees their host and GPU memory), keeping the cluster: only
        this kernel's own of a scheduler it joined, whose other workers are someone else's.

        What ``%gpu_cluster restart`` runs. Results the workers held are lost.

        Raises
        ------
        ClusterError
            The session no longer works, or the restart failed or did not finish within the
            ``startup-timeout`` option.

        Examples
        --------
        >>> from gpudask_jupyter.cluster.session import KernelCluster
        >>> KernelCluster().require().restart()
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: this kernel has no cluster; start one with
        %gpu_cluster start or connect with %gpu_cluster attach ADDRESS

        With one (here started as ``%gpu_cluster start --n-workers 1`` starts it):

        >>> from gpudask_jupyter import ClusterSession
        >>> from gpudask_jupyter.cluster.commands import plan_start
        >>> from gpudask_jupyter.cluster.options import StartOptions
        >>> session = ClusterSession.start(plan_start(StartOptions(n_workers=1)))
        >>> session.restart()
        >>> len(session.workers())
        1
        >>> session.close()
        """
        if not self.alive:
            raise ClusterError(self.gone())
        timeout = float(config.get("startup-timeout"))
        try:
            self.kind.restart(self, timeout)
        except Exception as err:
            raise ClusterError(f"Restart failed: {type(err).__name__}: {err}") from err

    def leave(self, timeout: float = LEAVE_TIMEOUT) -> Retirement:
        """Retire this kernel's workers from the scheduler it joined (the scheduler moves their
        data to its other workers first, within ``timeout``), end them, then disconnect.

        What ``%gpu_cluster leave`` (and ``stop`` of a joined cluster) runs; the scheduler
        keeps running.

        Parameters
        ----------
        timeout : float, default 30.0
            Seconds the scheduler may take to move the data; then the workers are ended
            anyway.

        Returns
        -------
        Retirement
            This kernel's workers, those the scheduler retired, and why not the others;
            ``describe(address)`` says it in a sentence.

        Raises
        ------
        ClusterError
            This kernel did not join the cluster (it started or attached to it: :meth:`close`
            is for that).

        Examples
        --------
        >>> from gpudask_jupyter.cluster.session import KernelCluster
        >>> KernelCluster().require().leave()
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: this kernel has no cluster; start one with
        %gpu_cluster start or connect with %gpu_cluster attach ADDRESS

        A joined session (which needs this machine's GPUs and a scheduler elsewhere):

        >>> session = kernel.require()  # doctest: +SKIP
        >>> print(session.leave().describe(session.address))  # doctest: +SKIP
        2 workers of this kernel left the cluster at tcp://10.0.0.5:8786; the scheduler moved
        the data they held to its other workers first.
        """
        return self.kind.leave(self, timeout)

    def _note_stopped(self) -> None:
        """Leave the stop's time where the entry was, for the server's sidebar to show the
        time the panel shows (:func:`..registry.note_stopped`); only while there is an entry."""
        if self.stopped_at is None or not registry.path_for(self.kernel_id).exists():
            return
        try:
            registry.note_stopped(self.kernel_id, self._created, self.stopped_at)
        except OSError:
            log.warning("cannot note the stop's time for the sidebar", exc_info=True)

    def close(self, release_room: bool = True) -> None:
        """Close what this kernel started, leaving no worker process; only disconnect from what
        it attached to; leave what it joined (quickly). Works whatever state the client and the
        scheduler are in.

        What ``%gpu_cluster stop`` runs (for a joined cluster it runs :meth:`leave`, which
        gives the scheduler more time to move the data). Closing twice does nothing.

        Parameters
        ----------
        release_room : bool, default True
            On a shared machine, end the kernel's lease too, unless the kernel holds GPU data
            under its own cap (a ``--replace`` keeps it for the new cluster).

        Examples
        --------
        :meth:`KernelCluster.close` closes the kernel's session, if there is one:

        >>> from gpudask_jupyter.cluster.session import KernelCluster
        >>> kernel = KernelCluster()
        >>> kernel.close()  # no session: nothing to close
        False

        A closed session says so, and what still helps:

        >>> from gpudask_jupyter import ClusterSession
        >>> from gpudask_jupyter.cluster.commands import plan_start
        >>> from gpudask_jupyter.cluster.options import StartOptions
        >>> session = ClusterSession.start(plan_start(StartOptions(n_workers=1)))
        >>> session.close()
        >>> session.workers()
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: The cluster at tls://127.0.0.1:... is no longer
        usable: its client was closed. ...
        """
        if self._closed:
            return
        alive = self.alive
        if alive and self.owner is not None:
            self.owner.before_closing(self)
        self._closed = True
        self.stopped_at = time.time()
        self.kind.quiet()
        self._note_stopped()
        registry.remove_entry(self.kernel_id)  # the sidebar lets go of it at once
        self.kind.let_go(self, alive)
        close_quietly(self.client, 10)
        self.kind.end(self)
        # the TLS files last: a nanny restarting its worker until the end still reads them
        registry.remove_tls(self.kernel_id)
        if release_room:
            room_holder.this_process.release(keep_for_kernel=True)
        else:
            room_holder.this_process.set_workers([])
        self.main_guard.release()
        if self.owner is not None:
            self.owner.closed(self)


def _launched(plan: StartPlan, kernel: str) -> tuple[Any, Any, Any]:
    """A planned start's client, cluster and TLS files. First of all the workers' fork server is
    launched, so that it imports while this kernel does; a failure leaves no TLS file."""
    access = plan.access
    with workers_ahead(plan.devices, logs.worker_environ(kernel)) as launched:
        logs.route(kernel)  # the scheduler, nannies and workers log to a file, not a cell
        tls_security, tls_files = temporary_tls(kernel) if access.tls else (None, None)
        try:
            client, cluster = launch(
                plan.opts, plan.devices, tls_security, access.dashboard, launched, plan.worker_caps
            )
        except BaseException:
            registry.remove(kernel)  # the TLS files written for it
            raise
    return client, cluster, tls_files


def _watch_stranded(cluster: Any) -> None:
    """Have the new scheduler fail, with a sentence, the tasks of a cluster whose workers all
    ended and none comes back (:mod:`.stranded`); without it such a cell waits forever."""
    from . import stranded  # lazy: its plugin class is distributed's, imported with a cluster

    try:
        stranded.watch(cluster)
    except Exception:
        log.warning("the new scheduler will not say why its workers all ended", exc_info=True)


def _record_tasks(client: Any) -> None:
    """Have the new scheduler record its task stream from the start (see
    :func:`..monitor.scheduler_probe.record_tasks`); without it a view shows less, no more."""
    try:
        client.run_on_scheduler(record_tasks)
    except Exception:
        log.warning("the new scheduler does not record its task stream yet", exc_info=True)


# -- the kernel's one session ---------------------------------------------------------------------


class KernelCluster:
    """What one kernel runs of its cluster: its one session, the operations on it (run so that
    Ctrl-C cannot cut one in half), the imports ahead of its first start, and the last error it
    showed (for ``status --verbose``). Made by the
    extension for its kernel (:class:`..magics.extension.Extension`); a test can make several,
    which do not see each other.

    Examples
    --------
    A kernel's cluster before ``%gpu_cluster start`` (or ``attach``, ``join``) has no session:

    >>> from gpudask_jupyter.cluster.session import KernelCluster
    >>> kernel = KernelCluster()
    >>> print(kernel.current())
    None
    >>> kernel.close()  # no session: nothing to close
    False
    """

    def __init__(self, imports: Prewarm | None = None) -> None:
        self.imports = imports if imports is not None else Prewarm()
        self.operations = Operations(self.imports)
        self.errors = ErrorLog()  # the last error shown, for status --verbose
        self._session: ClusterSession | None = None
        self._lock = threading.RLock()  # re-entrant: the SIGTERM handler may run while held
        self._registered = False
        self._close_hooks: list[Callable[[ClusterSession], object]] = []

    def current(self) -> ClusterSession | None:
        return self._session

    def require(self) -> ClusterSession:
        """The kernel's session, for the subcommands that manage one; an error says how to get
        one.

        Examples
        --------
        >>> from gpudask_jupyter.cluster.session import KernelCluster
        >>> KernelCluster().require().workers()
        Traceback (most recent call last):
        ...
        gpudask_jupyter.errors.ClusterError: this kernel has no cluster; start one with
        %gpu_cluster start or connect with %gpu_cluster attach ADDRESS
        """
        session = self._session
        if session is None:
            raise ClusterError(
                "this kernel has no cluster; start one with %gpu_cluster start "
                "or connect with %gpu_cluster attach ADDRESS"
            )
        return session

    def set(self, session: ClusterSession | None) -> None:
        """Hold ``session`` as the kernel's (None: none); it tells this when it has closed."""
        with self._lock:
            self._session = session
            if session is not None:
                session.owner = self
            if session is not None and not self._registered:
                atexit.register(self.close)
                lifecycle.on_unload(self.forget, lifecycle.FIRST)
                lifecycle.on_unload(self.close, lifecycle.CLUSTER)
                lifecycle.on_unload(end_resource_tracker, lifecycle.MEMORY)
                self._registered = True

    def hold(self, session: ClusterSession) -> ClusterSession:
        """:meth:`set` ``session`` as the kernel's, and return it."""
        self.set(session)
        return session

    def unregister(self) -> None:
        """Forget the closers :meth:`set` registered: the extension that held this is gone
        (its cluster closed first by them)."""
        with self._lock:
            if self._registered:
                atexit.unregister(self.close)
                lifecycle.drop(self.forget, self.close)
                self._registered = False

    def closed(self, session: ClusterSession) -> None:
        """``session`` has closed: the kernel no longer holds it (if it still did)."""
        with self._lock:
            if self._session is session:
                self._session = None

    def before_close(self, hook: Callable[[ClusterSession], object]) -> None:
        """Call ``hook(session)`` when a live session of this kernel is about to close, while
        its scheduler still answers (the kernel's panels take a last look). Once per hook."""
        if hook not in self._close_hooks:
            self._close_hooks.append(hook)

    def before_closing(self, session: ClusterSession) -> None:
        for hook in list(self._close_hooks):
            try:
                hook(session)
            except Exception:
                log.warning("a hook before closing the cluster failed", exc_info=True)

    def close(self, release_room: bool = True) -> bool:
        """Close the session if there is one; True if something was closed."""
        session = self._session
        if session is None:
            return False
        session.close(release_room)
        return True

    def forget(self) -> None:
        """Remove the session's registry entry at once: the first thing to do when the kernel
        is going away, since whatever comes next may be cut short by SIGKILL. Its TLS folder
        goes when the cluster has closed (its nannies read it until then), or, after a SIGKILL,
        at the next ``%load_ext`` (:mod:`..remains.leftovers`)."""
        session = self._session
        if session is not None:
            registry.remove_entry(session.kernel_id)  # the TLS files stay until it closes


@dataclass(frozen=True)
class StartPlan:
    """A start checked in full: what to start, who may reach it. Nothing runs yet."""

    opts: StartOptions
    access: Access
    devices: list[nvml.Device]
    reason: str  # why no GPU ("" with GPUs)
    place: room.Place | None = None  # its place on a shared machine
    worker_caps: dict[str, Any] = field(default_factory=dict)  # what holds the workers there


@dataclass(frozen=True)
class JoinPlan:
    """A join checked in full, the scheduler found answering. Nothing runs yet."""

    target: AttachTarget
    opts: StartOptions
    devices: list[nvml.Device]
    reason: str
    timeout: float
    place: room.Place | None = None
    worker_caps: dict[str, Any] = field(default_factory=dict)
