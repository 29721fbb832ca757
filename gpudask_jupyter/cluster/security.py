"""Who can reach a cluster this kernel starts, decided before anything starts.

Loopback is no boundary on a shared machine: every local user can connect to 127.0.0.1, and a Dask
scheduler runs whatever a connected client sends, as the user who started it. So a started
cluster speaks TLS with certificates made for it alone (only this kernel and, through the
owner-only registry, the user's own Jupyter server hold them). Plain TCP only when asked for
(``--no-tls``), with a warning; plain TCP on an address other machines can reach needs a second
flag (``--allow-insecure-network``); UCX, which has no TLS, needs ``--no-tls`` too. The dashboard
has no authentication at all: it starts by default only where no one else uses the machine
(:mod:`..machine.local_users`), and an explicit ``--dashboard-address`` on a shared one says who
can read it. :meth:`Access.reach` is the one line the start summary shows about all this.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass

from ..errors import ClusterError
from ..machine import local_users
from ..machine.local_users import shared_machine
from .options import StartOptions

log = logging.getLogger(__name__)

INSECURE_FLAG = "--allow-insecure-network"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (a loopback address or localhost);
    any other name counts as reachable from elsewhere."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Access:
    """What a start may do, decided: TLS or not, the dashboard's address (None: none), and the
    warnings to show before starting."""

    tls: bool
    host: str
    dashboard: str | None
    others: str  # the other people here, described ("" when none)
    warnings: tuple[str, ...] = ()
    shared_because: str = ""  # what made the machine shared, with how to say otherwise

    def reach(self, dashboard_link: str | None) -> str:
        """One line: who can connect to the cluster and who can read its dashboard."""
        where = "this machine" if is_loopback(self.host) else f"{self.host}'s network"
        if self.tls:
            cluster = f"only holders of this cluster's own TLS certificate (you), from {where}"
        elif is_loopback(self.host):
            cluster = "every local user (plain TCP): they can run code as you"
        else:
            cluster = f"anyone who can reach {self.host} (plain TCP): they can run code as you"
        if dashboard_link is None:
            dashboard = (
                f"off (other people use this machine: {self.shared_because or self.others})"
                if self.others
                else "off"
            )
        else:
            host = self.dashboard.rpartition(":")[0] if self.dashboard else self.host
            if not is_loopback(host):
                readers = f"anyone who can reach {host or 'this machine'} (any local user too)"
            elif self.others:
                readers = f"every local user ({self.others})"
            else:
                readers = "every local user (none but you now)"
            dashboard = f"{readers}, no authentication"
        return f"who can reach it: cluster: {cluster}; dashboard: {dashboard}"


def decide(opts: StartOptions, others: local_users.Others | None = None) -> Access:
    """The access a start gets; :class:`ClusterError` for a combination that is refused."""
    if others is None:
        others = shared_machine()
    _refuse_insecure(opts)
    warnings: list[str] = []
    if not opts.tls:
        where = (
            "any local user (any process on this machine)"
            if is_loopback(opts.host)
            else f"anyone who can reach {opts.host}"
        )
        warnings.append(
            f"gpudask: --no-tls: this cluster takes plain, unauthenticated connections: {where} "
            "can connect to it and run code as you."
        )
    dashboard = _dashboard(opts, others, warnings)
    return Access(
        opts.tls,
        opts.host,
        dashboard,
        others.describe() if others else "",
        tuple(warnings),
        others.evidence() if others else "",
    )


def _refuse_insecure(opts: StartOptions) -> None:
    if opts.protocol == "ucx" and opts.tls:
        raise ClusterError(
            "--protocol ucx has no TLS: any local user could connect to the cluster and run code "
            "as you. Pass --no-tls as well to accept that, or use --protocol tcp (TLS)."
        )
    if not opts.tls and not is_loopback(opts.host) and not opts.allow_insecure_network:
        raise ClusterError(
            f"--host {opts.host} without TLS would let anyone who can reach {opts.host} run code "
            f"as you. Drop --no-tls (TLS is the default), or add {INSECURE_FLAG} to accept that."
        )


def _dashboard(opts: StartOptions, others: local_users.Others, warnings: list[str]) -> str | None:
    """The dashboard's address: the one asked for, else on ``--host`` unless others are here."""
    asked = opts.dashboard()
    if opts.dashboard_address is None and others:
        log.debug("no dashboard by default: other people use this machine (%s)", others.describe())
        return None
    if asked is not None and opts.dashboard_address is not None and others:
        warnings.append(
            "gpudask: the dashboard has no authentication: every user of this machine "
            f"({others.describe()}) can read it: task names, progress and worker logs."
        )
    return asked
