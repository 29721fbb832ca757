"""The ``distributed.Security`` of a cluster this kernel starts: one SSL context per use, shared.

distributed makes a fresh ``SSLContext`` for every server and client object it builds (the
scheduler, each nanny, the client, the cluster's own connections), each reading the CA,
certificate and key files again, although every role of our clusters holds the same certificate
(:mod:`.certificates`). This one makes the connecting and the listening context once per process
and hands the same ones out: a context holds only configuration, and is safe to share between
connections and threads. Its listening side sends no TLS 1.3 session tickets: no Dask client
resumes a session, so each handshake would make and send two for nothing. Verification is
distributed's own (mutual, against the cluster's CA). A worker process gets the object without
its contexts, which cannot be pickled, and makes its own.

Every context takes a peer's close without TLS's closing message as a plain end of stream
(``OP_IGNORE_UNEXPECTED_EOF``): tornado closes TLS connections that way, and with OpenSSL 3.5
and newer (Debian 13, Debian unstable; Python 3.13 and 3.14 alike) the error such a close raised
on one connection broke healthy connections of the same process, so that a cluster lost its
client and workers minutes into a session. Nothing is lost by it: distributed frames every
message with its length, so a stream cut short is still an error.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from distributed import Security

from .. import compat


class ClusterSecurity(Security):  # type: ignore[misc]
    """``Security`` whose connection and listen arguments are made once per process."""

    def get_connection_args(self, role: str) -> dict[str, Any]:
        return self._shared("connect", role, super().get_connection_args)

    def get_listen_args(self, role: str) -> dict[str, Any]:
        return self._shared("listen", role, super().get_listen_args)

    def _shared(self, use: str, role: str, make: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        made: dict[tuple[str, str], dict[str, Any]] = self.__dict__.setdefault("_made", {})
        key = (use, repr(sorted(self.get_tls_config_for_role(role).items())))
        args = made.get(key)
        if args is None:
            args = make(role)
            context = args.get("ssl_context")
            if context is not None:
                context.options |= ssl.OP_IGNORE_UNEXPECTED_EOF
            if use == "listen" and context is not None:
                context.num_tickets = 0
            args = made.setdefault(key, args)  # two threads at once: both get the first
        return dict(args)

    def __reduce__(self) -> tuple[Any, ...]:
        """The settings alone: a context cannot cross to a worker process."""
        return (_rebuilt, (type(self), compat.security_settings(self)))


def _rebuilt(cls: type[ClusterSecurity], settings: dict[str, Any]) -> ClusterSecurity:
    security = cls.__new__(cls)
    for name, value in settings.items():
        setattr(security, name, value)
    return security
