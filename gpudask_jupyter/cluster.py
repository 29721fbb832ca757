"""The kernel's Dask cluster: start one worker per GPU, or attach to an existing scheduler.

Dask distributed is the engine; this module keeps the one :class:`ClusterSession` of this process,
records it in the per-kernel registry for the server extension, and guarantees that what the
kernel started is closed again (``stop``, ``%unload_ext``, interpreter exit). A cluster this kernel
merely attached to is never shut down from here, only disconnected from. What to start (which
GPUs, which fallback, which keywords) is decided in :mod:`.cluster_options`; the tables that
describe a session are drawn by :mod:`.cluster_tables`.

Every failure a user can cause or fix surfaces as a :class:`~.errors.GpuDaskError` that names
the address, GPU or option involved.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time
from typing import Any

from . import config, gpus, lifecycle, nvml, registry
from .cluster_options import (
    ATTACH_TIMEOUT,
    AttachTarget,
    StartOptions,
    Warn,
    cluster_keywords,
    resolve_workers,
    temporary_tls,
)
from .cluster_tables import GpuBindings
from .errors import ClusterError
from .kernel import kernel_id
from .units import format_seconds

log = logging.getLogger(__name__)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class ClusterSession:
    """The cluster this kernel started or attached to, and the Client that talks to it."""

    def __init__(
        self,
        client: Any,
        cluster: Any | None,
        devices: list[nvml.Device],
        cpu_reason: str = "",
        tls_files: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.devices = devices
        self.cpu_reason = cpu_reason
        self.tls_files = tls_files
        self.kernel_id = kernel_id()
        self.gpu_bindings = GpuBindings()
        self._closed = False
        self._dashboard: str | None = None

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def start(cls, opts: StartOptions, warn: Warn = _stderr) -> ClusterSession:
        """Start a local cluster: one worker per usable GPU, else CPU workers after a warning
        (an error when a GPU is required). Nothing is left running when it fails."""
        devices, reason = resolve_workers(opts, warn)
        security, tls_pem = temporary_tls() if opts.tls else (None, None)
        client, cluster = _launch(opts, devices, security)
        session = cls(client, cluster, devices, reason)
        if opts.dashboard() is None:
            session._dashboard = ""  # the scheduler still serves HTTP, but no dashboard
        if tls_pem:
            session.tls_files = registry.write_tls(session.kernel_id, tls_pem)
        session._register()
        _set_current(session)
        return session

    @classmethod
    def attach(
        cls,
        address: str | None = None,
        scheduler_file: str | None = None,
        timeout: float = ATTACH_TIMEOUT,
        tls_ca_file: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
    ) -> ClusterSession:
        """Connect to a running scheduler, by address or scheduler file, within ``timeout``."""
        target = AttachTarget.resolve(address, scheduler_file, tls_ca_file, tls_cert, tls_key)
        client = _connect(target, timeout)
        session = cls(client, None, [], tls_files=target.tls_files())
        session._register()
        _set_current(session)
        return session

    # -- properties -----------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        """ "gpu", "cpu" (a local fallback cluster) or "attached"."""
        if self.cluster is None:
            return "attached"
        return "gpu" if self.devices else "cpu"

    @property
    def address(self) -> str:
        return str(self.client.scheduler.address)

    @property
    def dashboard_link(self) -> str | None:
        if self._dashboard is None:
            target = self.cluster if self.cluster is not None else self.client
            self._dashboard = _dashboard_link(target) or ""
        return self._dashboard or None

    @property
    def alive(self) -> bool:
        return not self._closed and self.client.status == "running"

    def workers(self) -> dict[str, dict[str, Any]]:
        """The scheduler's description of each worker, by address."""
        try:
            info = self.client.scheduler_info(n_workers=-1)
        except TypeError:  # distributed before the n_workers argument
            info = self.client.scheduler_info()
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
        )
        try:
            registry.write(entry)
        except OSError as err:
            log.debug("writing the registry entry of %s failed", self.kernel_id, exc_info=True)
            _stderr(f"gpudask: could not write the registry entry for the sidebar ({err})")

    # -- management -----------------------------------------------------------------------------

    def scale(self, n: int) -> None:
        if self.cluster is None:
            raise ClusterError(
                f"This kernel attached to {self.address} and did not start it, so it cannot scale "
                "it; add or remove workers where that cluster was started (dask cuda worker, your "
                "job scheduler, dask-gateway ...)."
            )
        if self.devices and n > len(self.devices):
            raise ClusterError(
                f"scale {n}: this cluster has {len(self.devices)} GPU(s) "
                f"({', '.join(gpus.identifier(d) for d in self.devices)}), one worker each; "
                "start it with more --gpus to go further"
            )
        self.cluster.scale(n)
        self._wait_for(n)

    def _wait_for(self, n: int) -> None:
        timeout = float(config.get("startup-timeout"))
        deadline = time.monotonic() + timeout
        while True:
            count = len(self.workers())
            if count == n:
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{count} worker(s) running after {format_seconds(timeout)}, "
                    f"{n} asked for; see the dashboard or worker logs"
                )
            time.sleep(0.1)

    def restart(self) -> None:
        """Restart every worker (frees their host and GPU memory), keeping the cluster."""
        try:
            self.client.restart(timeout=float(config.get("startup-timeout")))
        except Exception as err:
            raise ClusterError(f"Restart failed: {type(err).__name__}: {err}") from err

    def close(self) -> None:
        """Close what this kernel started; only disconnect from what it attached to."""
        if self._closed:
            return
        self._closed = True
        registry.remove(self.kernel_id)
        _close_quietly(self.client, 10)
        if self.cluster is not None:
            _close_quietly(self.cluster, 30)
        if _current is self:
            _set_current(None)


def _launch(opts: StartOptions, devices: list[nvml.Device], security: Any) -> tuple[Any, Any]:
    """Start the cluster and its default client, and wait for every worker; close both on any
    failure, so that a start that fails leaves no process behind."""
    keywords = cluster_keywords(opts, devices, security)
    cluster = client = None
    try:
        if devices:
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(**keywords)
        else:
            from distributed import LocalCluster

            cluster = LocalCluster(**keywords)
        from distributed import Client

        client = Client(cluster, security=security, set_as_default=True)
        client.wait_for_workers(len(cluster.worker_spec), timeout=opts.startup_timeout())
    except Exception as err:
        for closable in (client, cluster):
            if closable is not None:
                _close_quietly(closable)
        raise ClusterError(f"The cluster did not start: {type(err).__name__}: {err}") from err
    return client, cluster


def _connect(target: AttachTarget, timeout: float) -> Any:
    """The default client of ``target``'s scheduler; a scheduler that does not answer within
    ``timeout`` is an error naming the address."""
    from distributed import Client

    try:
        return Client(
            target.address, timeout=timeout, security=target.security(), set_as_default=True
        )
    except (OSError, TimeoutError) as err:
        raise ClusterError(
            f"No Dask scheduler answered at {target.address} within {format_seconds(timeout)} "
            f"({type(err).__name__}: {err}). Check the address (the scheduler prints it at "
            "start-up) and that this machine can reach it."
        ) from err
    except Exception as err:
        raise ClusterError(
            f"Could not attach to {target.address}: {type(err).__name__}: {err}"
        ) from err


def _close_quietly(closable: Any, timeout: float | None = None) -> None:
    """Close a client or cluster that may already be broken; a failure is only logged."""
    try:
        if timeout is None:
            closable.close()
        else:
            closable.close(timeout=timeout)
    except Exception:
        log.debug("closing %s failed", type(closable).__name__, exc_info=True)


def _dashboard_link(cluster_or_client: Any) -> str | None:
    import importlib.util

    if importlib.util.find_spec("bokeh") is None:
        return None
    try:
        link = cluster_or_client.dashboard_link
    except Exception:
        log.debug("no dashboard link from %s", type(cluster_or_client).__name__, exc_info=True)
        return None
    return str(link) if link else None


# -- the kernel's one session ---------------------------------------------------------------------

_current: ClusterSession | None = None
_lock = threading.Lock()
_atexit_registered = False


def current() -> ClusterSession | None:
    return _current


def require_current() -> ClusterSession:
    """The kernel's session, for the subcommands that manage one; an error says how to get one."""
    session = _current
    if session is None:
        raise ClusterError(
            "this kernel has no cluster; start one with %gpu_cluster start "
            "or connect with %gpu_cluster attach ADDRESS"
        )
    return session


def refuse_or_replace(asked: str, replace: bool, warn: Warn = _stderr) -> ClusterSession | None:
    """The rule for a second ``start`` or ``attach`` (``asked``): a live session is kept and the
    user told how to replace it, unless ``replace``; otherwise any old session is closed first.

    Returns the kept session (the request is refused), or None (go ahead).
    """
    session = _current
    if session is not None and session.alive and not replace:
        warn(
            f"A cluster is already running in this kernel ({session.mode}, scheduler "
            f"{session.address}); nothing was changed. Use %gpu_cluster stop first, "
            f"or {asked} --replace."
        )
        return session
    if session is not None:
        session.close()
    return None


def _set_current(session: ClusterSession | None) -> None:
    global _current, _atexit_registered
    with _lock:
        _current = session
        if session is not None and not _atexit_registered:
            atexit.register(close_current)
            lifecycle.on_unload(close_current, lifecycle.CLUSTER)
            _atexit_registered = True


def close_current() -> bool:
    """Close the session if there is one; True if something was closed."""
    session = _current
    if session is None:
        return False
    session.close()
    return True
