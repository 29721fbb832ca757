"""Making and unmaking the library's objects for :mod:`.session`: a started cluster and its
client, a client attached (or joined) within a deadline, and closing either whatever state it is
in.

Every call here into distributed or dask-cuda is bounded: a start by the startup timeout, an
attach by ``--timeout`` (the handshake too, through :mod:`.handshake`), a close by its own timeout.
A failure leaves nothing running and becomes a :class:`~..errors.ClusterError` sentence.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from .. import compat, config, registry
from ..errors import ClusterError
from ..machine import nvml
from ..text.units import format_seconds
from . import fork_server, handshake
from .options import WORKER_PRELOAD, StartOptions, cluster_keywords
from .target import AttachTarget

log = logging.getLogger(__name__)

#: what the scheduler's and workers' HTTP servers keep serving without a dashboard: the
#: scheduler's info pages (worker logs, call stacks), JSON and metrics have no authentication
#: either, and any local user could read them
HEALTH_ONLY = ["distributed.http.health"]
#: what the workers' fork server imports: a nanny's worker and its preload
WORKER_MODULES = ("distributed.nanny", WORKER_PRELOAD)
#: and for a GPU worker, dask-cuda and cuDF (where installed), which a GPU worker imports as it
#: starts, before it registers (dask-cuda's cuDF plugin): seconds on its path otherwise. Neither
#: initialises CUDA as it is imported under dask-cuda's variable below, so a worker forked from
#: the server can use CUDA at all (not after a parent's initialisation), and the GPU it is given
#: afterwards is the one it uses (a GPU test checks both)
GPU_WORKER_MODULES = (*WORKER_MODULES, "dask_cuda", "cudf")
#: what dask-cuda's cluster sets in the kernel's environment as it is made (compat's copy)
GPU_CLUSTER_ENVIRON = compat.CLUSTER_ENVIRON


@contextlib.contextmanager
def http_routes(dashboard: bool) -> Iterator[None]:
    """Without a dashboard, the HTTP routes of a scheduler or nanny made meanwhile are cut down
    to a health check (nannies keep the configuration they were made with)."""
    if dashboard:
        yield
        return
    import dask.config

    with dask.config.set(
        {
            "distributed.scheduler.http.routes": HEALTH_ONLY,
            "distributed.worker.http.routes": HEALTH_ONLY,
        }
    ):
        yield


def prune_registry() -> None:
    """Delete entries (and TLS keys) that killed kernels left; a failure only costs the tidy-up."""
    try:
        registry.prune()
    except OSError:
        log.debug("pruning the registry failed", exc_info=True)


@contextlib.contextmanager
def workers_ahead(
    devices: list[nvml.Device], environ: dict[str, str]
) -> Iterator[fork_server.Ahead]:
    """The fork server of a start's workers, asked for as it begins, before this kernel imports
    distributed: it makes their imports while the kernel makes its own (:mod:`.fork_server`).
    ``environ``: what the start sets in the kernel's environment before the cluster is made
    (the cluster class's own is added here). Nothing with the ``launch-ahead`` option off."""
    if not config.get("launch-ahead"):
        yield fork_server.Ahead()
        return
    modules, made = (GPU_WORKER_MODULES, GPU_CLUSTER_ENVIRON) if devices else (WORKER_MODULES, {})
    with fork_server.ahead(modules, {**made, **environ}) as launched:
        yield launched


def launch(
    opts: StartOptions,
    devices: list[nvml.Device],
    security: Any,
    dashboard: str | None,
    launched: fork_server.Ahead,
    worker_caps: dict[str, Any] | None = None,
) -> tuple[Any, Any]:
    """Start the cluster and its default client, and wait for every worker; close both on any
    failure, so that a start that fails leaves no process behind. ``launched``: the fork server
    of its workers (:func:`workers_ahead`), offered to its nannies. ``worker_caps``: dask-cuda's
    keywords that hold the workers within the kernel's share of a shared machine."""
    keywords = cluster_keywords(opts, devices, security, dashboard, worker_caps)
    cluster = client = None
    try:
        if devices:
            from dask_cuda import LocalCUDACluster as make
        else:
            from distributed import LocalCluster as make
        with http_routes(dashboard is not None), launched.offered():
            cluster = make(**keywords)
        from distributed import Client

        client = Client(cluster, security=security, set_as_default=True)
        client.wait_for_workers(len(cluster.worker_spec), timeout=opts.startup_timeout())
    except Exception as err:
        for closable in (client, cluster):
            if closable is not None:
                close_quietly(closable)
        raise ClusterError(f"The cluster did not start: {type(err).__name__}: {err}") from err
    log.debug(
        "the workers were %s", "forked from the fork server" if launched.forked else "spawned"
    )
    return client, cluster


def check_answers(
    target: AttachTarget, timeout: float, cancelled: handshake.Cancelled = lambda: False
) -> None:
    """:class:`~..errors.ClusterError` unless a Dask scheduler answers at ``target`` within
    ``timeout`` (:mod:`.handshake`: nothing is left open, also once ``cancelled()``)."""
    security = target.security()
    context = security.get_connection_args("client").get("ssl_context") if security else None
    verdict = handshake.check(target.address, timeout, context, cancelled)
    if not verdict.ok:
        raise ClusterError(verdict.problem) from verdict.cause


def connect(
    target: AttachTarget,
    timeout: float,
    asked: str = "attach",
    cancelled: handshake.Cancelled = lambda: False,
) -> Any:
    """The default client of ``target``'s scheduler, for ``asked`` (``attach`` or ``join``). The
    whole connection, handshake included, is bounded by ``timeout``: a first look
    (:mod:`.handshake`) says within it whether a scheduler answers there, and what else does if
    not."""
    from distributed import Client

    deadline = time.monotonic() + timeout
    check_answers(target, timeout, cancelled)
    security = target.security()
    left = max(0.5, deadline - time.monotonic())
    try:
        return Client(target.address, timeout=left, security=security, set_as_default=True)
    except (OSError, TimeoutError) as err:
        raise ClusterError(
            f"No Dask scheduler answered at {target.address} within {format_seconds(timeout)} "
            f"({type(err).__name__}: {err}). Check the address (the scheduler prints it at "
            "start-up) and that this machine can reach it."
        ) from err
    except Exception as err:
        raise ClusterError(
            f"Could not {asked} {'to ' * (asked == 'attach')}{target.address}: "
            f"{type(err).__name__}: {err}"
        ) from err


def close_quietly(closable: Any, timeout: float | None = None) -> None:
    """Close a client or cluster that may already be broken; a failure is only logged."""
    try:
        if timeout is None:
            closable.close()
        else:
            closable.close(timeout=timeout)
    except Exception:
        log.debug("closing %s failed", type(closable).__name__, exc_info=True)


def dashboard_link(cluster_or_client: Any) -> str | None:
    import importlib.util

    if importlib.util.find_spec("bokeh") is None:
        return None
    try:
        link = cluster_or_client.dashboard_link
    except Exception:
        log.debug("no dashboard link from %s", type(cluster_or_client).__name__, exc_info=True)
        return None
    return str(link) if link else None


def wait_for_count(count: Callable[[], int], n: int, timeout: float) -> None:
    """Wait until ``count()`` (the workers the scheduler lists) is ``n``, within ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        found = count()
        if found == n:
            return
        if time.monotonic() > deadline:
            raise ClusterError(
                f"{found} worker(s) running after {format_seconds(timeout)}, "
                f"{n} asked for; see the dashboard or worker logs"
            )
        time.sleep(0.1)
