"""Clusters from dask-gateway: each student's cluster from the multi-user engine hubs already run.

A hub that outgrows one server (daskhub, Pangeo's and 2i2c's hubs, an HPC centre) runs
dask-gateway beside JupyterHub: it starts each user's scheduler and workers where its backend
says (Kubernetes pods, batch jobs, local processes), authenticates them with the hub, and hands
the client TLS credentials made for that cluster alone. This module drives it from the magics:
the gateway is found as dask-gateway's own configuration says (``DASK_GATEWAY__ADDRESS``, set by
daskhub) unless an address is given, with the hub's authentication under JupyterHub; the
gateway's cluster options are checked against what it offers before anything starts; every call
is bounded by the command's timeout, the gateway's address named when it is not met (dask-gateway's
own calls have no bound: each runs on a thread of its own, waited for here); and a cluster made
after the command gave up waiting for it is shut down as soon as it exists, never left to run.
Never a scheduler of our own: dask-gateway is the engine.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import compat
from ..errors import ClusterError
from ..text.units import format_seconds

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the names a gateway's GPU option goes by (GPUs per worker), in the order they are looked for
GPU_OPTIONS = ("worker_gpus", "gpus_per_worker", "gpus", "worker_gpu")
#: what installs dask-gateway's client
INSTALL = "pip install 'gpudask-jupyter[gateway]' (dask-gateway's client)"


def client_module() -> Any:
    """dask-gateway's client, or a sentence saying how to install it."""
    try:
        import dask_gateway
    except ImportError as err:
        raise ClusterError(f"dask-gateway is not installed here: {INSTALL}.") from err
    return dask_gateway


def address_of(asked: str | None) -> str:
    """The gateway's address: ``asked``, else dask-gateway's configuration (``gateway.address``,
    which daskhub sets as ``DASK_GATEWAY__ADDRESS``)."""
    if asked:
        address = asked
    else:
        import dask.config

        found = dask.config.get("gateway.address", None)
        if not found:
            raise ClusterError(
                "No dask-gateway address: give one (%gpu_cluster start --gateway "
                "https://hub.example.org/services/dask-gateway) or set DASK_GATEWAY__ADDRESS, "
                "as daskhub does for every user."
            )
        address = os.path.expandvars(str(found))
    if not address.startswith(("http://", "https://")):
        address = f"http://{address}"
    return address.rstrip("/")


def auth_for(kind: str | None) -> Any:
    """dask-gateway's authentication: ``kind`` (basic, kerberos, jupyterhub) where given, the
    hub's where the kernel runs under JupyterHub and dask-gateway's configuration names none,
    else that configuration's."""
    import dask.config
    from dask_gateway.auth import get_auth

    if kind is None and os.environ.get("JUPYTERHUB_API_TOKEN"):
        configured = dask.config.get("gateway.auth.type", None)
        kind = "jupyterhub" if configured in (None, "basic") else None
    try:
        return get_auth(kind)
    except (ValueError, TypeError, ImportError) as err:
        raise ClusterError(f"dask-gateway's {kind or 'configured'} authentication: {err}") from err


def check_reachable(address: str, timeout: float) -> None:
    """A sentence naming ``address`` unless the gateway answers its health check within
    ``timeout`` (nothing listening, a host that does not answer, a port that accepts and stays
    silent, something that is not a gateway)."""
    url = f"{address}/api/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            body = answer.read(4096)
    except urllib.error.HTTPError as err:
        raise ClusterError(
            f"{address} answered HTTP {err.code} to dask-gateway's health check: is it a "
            "dask-gateway server? Check the address (daskhub's is "
            "https://HUB/services/dask-gateway)."
        ) from err
    except (TimeoutError, OSError) as err:
        reason = getattr(err, "reason", err)
        if isinstance(reason, TimeoutError) or isinstance(err, TimeoutError):
            why = f"it did not answer within {format_seconds(timeout)}"
        elif isinstance(reason, ConnectionRefusedError):
            why = "nothing listens there"
        else:
            why = f"{type(reason).__name__}: {reason}"
        raise ClusterError(
            f"No dask-gateway answered at {address} ({why}). Check the address and that the "
            "gateway is running."
        ) from err
    try:
        status = json.loads(body).get("status")
    except (ValueError, AttributeError):
        status = None
    if status not in ("pass", "warn"):
        raise ClusterError(
            f"{address} answered, but not as a dask-gateway server (its health check said "
            f"{body[:80]!r})."
        )


def bounded(
    call: Callable[[], T],
    timeout: float,
    what: str,
    address: str,
    leftover: Callable[[T], object] | None = None,
) -> T:
    """``call()`` on a thread of its own, waited for at most ``timeout`` seconds; past that a
    sentence naming ``address``, and whatever ``call`` returns later goes to ``leftover`` (a
    cluster made too late is shut down)."""
    done = threading.Event()
    out: dict[str, Any] = {}
    gave_up = threading.Event()

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as err:
            out["error"] = err
        finally:
            done.set()
            if gave_up.is_set() and "value" in out and leftover is not None:
                try:
                    leftover(out["value"])
                except Exception:
                    log.warning("undoing what %s made too late failed", what, exc_info=True)

    thread = threading.Thread(target=run, name=f"gpudask-gateway-{what}", daemon=True)
    thread.start()
    if not done.wait(timeout):
        gave_up.set()
        if done.is_set() and "value" in out and leftover is not None:
            leftover(out["value"])
        raise ClusterError(
            f"dask-gateway at {address} did not {what} within {format_seconds(timeout)} "
            "(--timeout); nothing of it is left running."
        )
    if "error" in out:
        raise out["error"]
    value: T = out["value"]
    return value


@dataclass(frozen=True)
class Offered:
    """The cluster options a gateway offers: their names, and each one's current value."""

    values: Mapping[str, Any]

    @property
    def gpu_option(self) -> str | None:
        return next((name for name in GPU_OPTIONS if name in self.values), None)

    def describe(self) -> str:
        if not self.values:
            return "none"
        return ", ".join(f"{name} (now {value!r})" for name, value in self.values.items())


def offered(options: Any) -> Offered:
    """What a gateway's ``Options`` object offers."""
    return Offered({name: options[name] for name in options})


def choose(options: Any, asked: Mapping[str, str], address: str) -> Any:
    """``options`` with ``asked`` (``--option NAME=VALUE``) set, each value read as the option's
    own type would have it; a sentence naming what the gateway offers for a name it does not, or
    a value it refuses."""
    have = offered(options)
    for name, text in asked.items():
        if name not in have.values:
            raise ClusterError(
                f"The gateway at {address} offers no cluster option {name!r}; it offers: "
                f"{have.describe()}. Nothing was started."
            )
        value = _typed(text, have.values[name])
        try:
            options[name] = value
        except (ValueError, TypeError) as err:
            raise ClusterError(
                f"The gateway at {address} refuses {name}={text}: {err}. Nothing was started."
            ) from err
    return options


def _typed(text: str, now: Any) -> Any:
    """``text`` as the type of an option whose value is ``now``."""
    if isinstance(now, bool):
        lowered = text.lower()
        if lowered in ("true", "yes", "1", "on"):
            return True
        if lowered in ("false", "no", "0", "off"):
            return False
        return text
    for kind in (int, float):
        if isinstance(now, kind):
            try:
                return kind(text)
            except ValueError:
                return text
    return text


class GatewayCluster:
    """A cluster of a gateway, as the kernel's session holds it: started here (shut down with the
    session unless kept) or reconnected to (left running)."""

    def __init__(self, gateway: Any, cluster: Any, address: str, started: bool) -> None:
        self.gateway = gateway
        self.cluster = cluster
        self.address = address
        self.started = started  # this kernel made it: the kernel's end shuts it down
        self.keep = False
        self.asked = 0  # workers asked for as it started (the start waits for them)
        self.options: Any = None  # the cluster options it was started with (None: reconnected)

    @property
    def name(self) -> str:
        return str(self.cluster.name)

    @property
    def dashboard_link(self) -> str | None:
        link = getattr(self.cluster, "dashboard_link", None)
        return str(link) if link else None

    def scale(self, n: int, timeout: float) -> None:
        bounded(lambda: self.cluster.scale(n), timeout, f"scale to {n} workers", self.address)

    def adapt(self, minimum: int, maximum: int, timeout: float) -> None:
        bounded(
            lambda: self.cluster.adapt(minimum=minimum, maximum=maximum),
            timeout,
            "take the adaptive bounds",
            self.address,
        )

    def close(self, timeout: float) -> None:
        """Shut the cluster down (unless kept, or reconnected to), and close the gateway's
        client; a failure is logged (the gateway's idle timeout remains the backstop)."""
        try:
            shut = self.started and not self.keep
            bounded(
                lambda: compat.close_gateway_cluster(self.cluster, shut),
                timeout,
                "shut the cluster down" if shut else "let the cluster go",
                self.address,
            )
        except Exception:
            log.warning("closing the gateway cluster %s failed", self.name, exc_info=True)
        try:
            compat.close_gateway(self.gateway)
        except Exception:
            log.debug("closing the gateway's client failed", exc_info=True)


@dataclass(frozen=True)
class GatewayPlan:
    """A gateway start or reconnection, checked: nothing runs yet."""

    address: str
    auth: str | None
    options: Mapping[str, str]
    n_workers: int | None
    gpus: int | None
    timeout: float
    name: str | None = None  # reconnect to this cluster


def open_gateway(address: str, auth: str | None, timeout: float) -> Any:
    """dask-gateway's client of ``address``, its health checked within ``timeout``."""
    module = client_module()
    check_reachable(address, timeout)
    return module.Gateway(address, auth=auth_for(auth))


def start(plan: GatewayPlan) -> GatewayCluster:
    """A new cluster of ``plan``'s gateway, its options set, scaled to its workers; nothing is
    left running on the gateway when this fails."""
    gateway = open_gateway(plan.address, plan.auth, plan.timeout)
    try:
        options = bounded(gateway.cluster_options, plan.timeout, "list its options", plan.address)
        asked = dict(plan.options)
        if plan.gpus is not None:
            gpu = offered(options).gpu_option
            if gpu is None:
                raise ClusterError(
                    f"The gateway at {plan.address} offers no GPU option ({', '.join(GPU_OPTIONS)}"
                    f"); it offers: {offered(options).describe()}. Use --n-workers, or ask its "
                    "administrator for GPU workers. Nothing was started."
                )
            asked.setdefault(gpu, "1")
        choose(options, asked, plan.address)

        def shut(cluster: Any) -> None:
            compat.close_gateway_cluster(cluster, True)

        cluster = bounded(
            lambda: gateway.new_cluster(options, shutdown_on_close=False),
            plan.timeout,
            "start a cluster",
            plan.address,
            leftover=shut,
        )
    except BaseException:
        compat.close_gateway(gateway)
        raise
    made = GatewayCluster(gateway, cluster, plan.address, started=True)
    made.options = options
    workers = plan.gpus if plan.gpus is not None else plan.n_workers
    try:
        if workers:
            made.scale(workers, plan.timeout)
            made.asked = workers
    except BaseException:
        made.close(plan.timeout)
        raise
    return made


def reconnect(plan: GatewayPlan) -> GatewayCluster:
    """This user's running cluster ``plan.name`` of the gateway (left running by this kernel's
    end: it did not start it)."""
    assert plan.name is not None
    gateway = open_gateway(plan.address, plan.auth, plan.timeout)
    try:
        cluster = bounded(
            lambda: gateway.connect(plan.name), plan.timeout, f"find {plan.name}", plan.address
        )
    except ValueError as err:
        compat.close_gateway(gateway)
        names = ", ".join(c.name for c in listing(plan.address, plan.auth, plan.timeout)) or "none"
        raise ClusterError(
            f"The gateway at {plan.address} has no running cluster {plan.name!r} of yours "
            f"(yours: {names})."
        ) from err
    except BaseException:
        compat.close_gateway(gateway)
        raise
    return GatewayCluster(gateway, cluster, plan.address, started=False)


def listing(address: str, auth: str | None, timeout: float) -> list[Any]:
    """This user's clusters on the gateway (dask-gateway's reports)."""
    gateway = open_gateway(address, auth, timeout)
    try:
        return list(bounded(gateway.list_clusters, timeout, "list your clusters", address))
    finally:
        compat.close_gateway(gateway)


def options_of(address: str, auth: str | None, timeout: float) -> Offered:
    gateway = open_gateway(address, auth, timeout)
    try:
        return offered(bounded(gateway.cluster_options, timeout, "list its options", address))
    finally:
        compat.close_gateway(gateway)


def security_files(cluster: Any) -> dict[str, str]:
    """The cluster's own TLS credentials as PEM text by role, for the registry's owner-only
    folder (the sidebar connects with them): the certificate is its own authority."""
    security = cluster.security
    return {"ca": security.tls_cert, "cert": security.tls_cert, "key": security.tls_key}
