"""The scheduler an ``attach`` or a ``join`` is aimed at, checked before anything connects.

Its address (with the scheme a bare ``HOST:PORT`` lacks, or read from a scheduler file without
blocking), and the TLS files that reach it, expanded to absolute paths (the registry records them
for the server, whose working directory is another). :class:`AttachTarget` then gives the
``distributed.Security`` a client needs and, for ``join``, the one the kernel's workers need: they
present the same certificate to the scheduler and to their peers, and take connections only from
holders of certificates of the same authority.
"""

from __future__ import annotations

import json
import logging
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ClusterError
from ..machine import small_files
from . import handshake

log = logging.getLogger(__name__)

#: bytes read at most from a ``--scheduler-file`` (they hold a few hundred)
MAX_SCHEDULER_FILE = 2**20


@dataclass(frozen=True)
class AttachTarget:
    """A scheduler to attach to or join, checked: its full address, and its TLS files (expanded
    paths) when it needs them."""

    address: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    @classmethod
    def resolve(
        cls,
        address: str | None,
        scheduler_file: str | None,
        tls_ca_file: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        asked: str = "attach",
    ) -> AttachTarget:
        """The target from the arguments of ``asked`` (``attach`` or ``join``);
        :class:`ClusterError` says what is wrong."""
        if (address is None) == (scheduler_file is None):
            raise ClusterError(
                f"{asked} needs a scheduler ADDRESS or --scheduler-file FILE (one of them)"
            )
        if scheduler_file is not None:
            address = _read_scheduler_file(scheduler_file)
        assert address is not None
        tls = {"--tls-ca-file": tls_ca_file, "--tls-cert": tls_cert, "--tls-key": tls_key}
        given = {flag: value for flag, value in tls.items() if value}
        if "://" not in address:
            address = ("tls://" if given else "tcp://") + address
        if not given:
            if address.startswith("tls://"):
                raise ClusterError(
                    f"{address} uses TLS: pass --tls-ca-file, --tls-cert and --tls-key"
                )
            return cls(address)
        if len(given) != len(tls):
            raise ClusterError("TLS needs all of --tls-ca-file, --tls-cert and --tls-key")
        paths = {flag: Path(value).expanduser().absolute() for flag, value in given.items()}
        for flag, path in paths.items():
            if not path.is_file():
                raise ClusterError(f"{flag} {given[flag]}: no such file")
        ca, cert, key = (str(paths[flag]) for flag in tls)
        return cls(address, ca, cert, key)

    def _security(self, **roles: Any) -> Any:
        if self.ca_file is None:
            return None
        # lazy: it imports distributed, which reading a target's options does not need
        from .tls_contexts import ClusterSecurity

        return ClusterSecurity(
            tls_ca_file=self.ca_file,
            tls_client_cert=self.cert_file,
            tls_client_key=self.key_file,
            require_encryption=True,
            **roles,
        )

    def security(self) -> Any:
        """The ``distributed.Security`` of a client of this scheduler, None without TLS."""
        return self._security()

    def worker_security(self) -> Any:
        """The ``distributed.Security`` of the workers (and their nannies) that this kernel joins
        to the scheduler, None without TLS: the given certificate in every role, and only
        encrypted connections from holders of a certificate of the same authority."""
        return self._security(tls_worker_cert=self.cert_file, tls_worker_key=self.key_file)

    def tls_files(self) -> dict[str, str] | None:
        """The TLS files as the registry records them (for the sidebar), None without TLS."""
        if self.ca_file is None or self.cert_file is None or self.key_file is None:
            return None
        return {"ca_file": self.ca_file, "cert_file": self.cert_file, "key_file": self.key_file}

    def facing_host(self) -> str | None:
        """This machine's address on the way to the scheduler (``127.0.0.1`` for a scheduler on
        loopback), where joined workers listen: the one address they are reached at, rather
        than every interface. None when it cannot be found (the library then decides)."""
        parts = handshake.split_address(self.address)
        if parts is None:
            return None
        _, host, port = parts
        try:
            family, _, _, _, where = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.connect(where)  # a datagram socket sends nothing to connect
                return str(probe.getsockname()[0])
        except (OSError, IndexError):
            log.debug("no local address towards %s", self.address, exc_info=True)
            return None


def _read_scheduler_file(scheduler_file: str) -> str:
    """The address in a scheduler file, read without blocking and up to a size limit."""
    path = Path(scheduler_file).expanduser()
    try:
        data, _ = small_files.read_regular(path, MAX_SCHEDULER_FILE)
    except FileNotFoundError:
        raise ClusterError(f"--scheduler-file {scheduler_file}: no such file") from None
    except small_files.NotReadable as err:
        raise ClusterError(
            f"--scheduler-file {scheduler_file}: {str(err).removeprefix(str(path)).strip()}; "
            "a scheduler file is the small JSON file that dask scheduler --scheduler-file writes"
        ) from None
    except OSError as err:
        raise ClusterError(
            f"--scheduler-file {scheduler_file}: cannot read it ({err.strerror or err})"
        ) from None
    try:
        address = json.loads(data)["address"]
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        raise ClusterError(
            f"--scheduler-file {scheduler_file}: not a Dask scheduler file "
            f"({type(err).__name__}: {err})"
        ) from None
    if not isinstance(address, str) or not address.strip() or len(address) > 1000:
        raise ClusterError(
            f"--scheduler-file {scheduler_file}: its address {address!r:.80} is not an address"
        )
    return address.strip()
