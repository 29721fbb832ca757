"""Whether an address answers as a Dask scheduler, found out within a deadline and with nothing
left open.

distributed's ``connect()`` bounds the TCP connect by its timeout but then waits for the peer's
handshake without any limit (older releases bounded it; the current one does not, which
``test_distributed_alone_waits_on_a_silent_port_past_its_timeout`` keeps checking): attaching to
a port that accepts and stays silent, to an HTTP server or to a cluster's dashboard port blocks
until interrupted, socket open. A scheduler (as any distributed listener) sends its handshake
as soon as it accepts, before reading anything; so a plain socket that connects and reads the
first 16 bytes under our own deadline tells a scheduler (a length-prefixed frame header, as
:func:`..compat.starts_a_message` reads it) from anything else, and is closed whatever happens.
What stays silent is then asked once for ``/json/identity.json`` over HTTP: a scheduler's
dashboard answers with the scheduler's own address, which the error can name.

Every wait looks every :data:`POLL` seconds whether the command was interrupted (Ctrl-C returns
at once, and the check it left running on its thread must not keep a silent port's connection
open until its deadline): then it closes what it opened and gives up.

Only ``tcp://`` and ``tls://`` addresses are checked (the others have no stream to read); TLS is
spoken with the caller's ``ssl.SSLContext``. Standard library only: the server can use this too.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

from .. import compat
from ..text.units import format_seconds

log = logging.getLogger(__name__)

#: the part of the timeout kept for asking a silent port whether it speaks HTTP
HTTP_SHARE = 0.25
MAX_HTTP_RESERVE = 2.0
_ADDRESS = re.compile(r"(tcp|tls)://[A-Za-z0-9_.:\[\]-]{1,300}")
EXAMPLE = "tcp://10.0.0.5:8786"
#: seconds between two looks at whether the command was interrupted
POLL = 0.1

Cancelled = Callable[[], bool]


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Verdict:
    """What answered at an address: ``ok`` when a Dask scheduler did, else ``problem`` says
    what it looks like, in a sentence that names the address."""

    ok: bool
    problem: str = ""
    cause: BaseException | None = None  # the exception behind the problem, for the traceback


def split_address(address: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of ``tcp://host:port`` or ``tls://[v6]:port``; None otherwise."""
    scheme, sep, location = address.partition("://")
    host, colon, port = location.rpartition(":")
    if not sep or scheme not in {"tcp", "tls"} or not colon or not port.isdigit():
        return None
    number = int(port)
    if not host or not 0 < number < 65536:
        return None
    return scheme, host.removeprefix("[").removesuffix("]"), number


def check(
    address: str,
    timeout: float,
    context: ssl.SSLContext | None = None,
    cancelled: Cancelled = _never,
) -> Verdict:
    """Connect to ``address`` and read what it sends first, all within ``timeout`` seconds.

    A refused connection is retried until the deadline (a scheduler may still be starting).
    Every socket is closed before this returns, whatever the verdict, and as soon as
    ``cancelled()`` says the command was interrupted (the verdict then says so).
    """
    parts = split_address(address)
    if parts is None:
        return Verdict(True)  # no stream to look at: the library's own timeout must do
    scheme, host, port = parts
    deadline = time.monotonic() + timeout
    reserve = min(MAX_HTTP_RESERVE, timeout * HTTP_SHARE)
    first, failure, error = _greeting(
        host, port, deadline - reserve, context if scheme == "tls" else None, cancelled
    )
    if cancelled():
        return Verdict(False, f"the check of {address} was interrupted")
    if first is not None and compat.starts_a_message(first):
        return Verdict(True)
    if failure == "refused":
        return Verdict(False, _nobody(address, timeout, "nothing listens there"), error)
    if failure and not failure.startswith(("tls", "silent")):
        return Verdict(False, _nobody(address, timeout, failure), error)
    if first:
        return Verdict(False, _not_dask(address, first))
    found = _answer_problem(address, _ask_http(host, port, deadline, cancelled))
    if cancelled():
        return Verdict(False, f"the check of {address} was interrupted")
    if found is not None:
        return Verdict(False, found, error)
    if failure.startswith("tls"):
        return Verdict(
            False,
            f"{address} did not complete a TLS handshake with the TLS files given "
            f"({failure.removeprefix('tls: ')}): is it a TLS scheduler, and are these the "
            "certificates its cluster was set up with?",
            error,
        )
    hint = (
        " A TLS scheduler says nothing to a plain connection: if one runs there, attach to "
        f"tls://{address.partition('://')[2]} with --tls-ca-file, --tls-cert and --tls-key."
        if scheme == "tcp"
        else ""
    )
    return Verdict(
        False,
        f"{address} accepted the connection but sent nothing within {format_seconds(timeout)}; "
        "a Dask scheduler greets at once, so this is not one (or it is frozen). Check the port: "
        f"the scheduler prints its address at start-up, like {EXAMPLE}.{hint}",
    )


def _nobody(address: str, timeout: float, why: str) -> str:
    return (
        f"No Dask scheduler answered at {address} within {format_seconds(timeout)} ({why}). "
        "Check the address (the scheduler prints it at start-up) and that this machine can "
        "reach it."
    )


def _connect(host: str, port: int, deadline: float, cancelled: Cancelled) -> socket.socket:
    """A connected socket, retrying a refused connection until ``deadline``."""
    delay = 0.05
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or cancelled():
            raise TimeoutError("the connection timed out")
        try:
            return socket.create_connection((host, port), timeout=min(left, 10 * POLL))
        except TimeoutError:
            continue  # a slow network: try again until the deadline, or the interrupt
        except ConnectionRefusedError:
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.5)
            if time.monotonic() >= deadline:
                raise


def _greeting(
    host: str, port: int, deadline: float, context: ssl.SSLContext | None, cancelled: Cancelled
) -> tuple[bytes | None, str, OSError | None]:
    """The first bytes the peer sends (None if none), why not (``refused``, ``tls: ...``,
    ``silent`` or another failure in words) and the exception behind it."""
    try:
        sock = _connect(host, port, deadline, cancelled)
    except ConnectionRefusedError as err:
        return None, "refused", err
    except socket.gaierror as err:
        return None, f"cannot resolve {host}: {err.strerror or err}", err
    except TimeoutError as err:
        return None, "the connection timed out: a firewall, or no such host?", err
    except OSError as err:
        return None, f"{type(err).__name__}: {err.strerror or err}", err
    with contextlib.ExitStack() as stack:
        stack.enter_context(sock)
        try:
            if context is not None:
                name = host if context.check_hostname else None
                wrapped = context.wrap_socket(
                    sock, server_hostname=name, do_handshake_on_connect=False
                )
                sock = stack.enter_context(wrapped)
                if not _handshake(wrapped, deadline, cancelled):
                    return None, "silent", None
            return _read(sock, compat.FRAME_HEADER, deadline, cancelled), "silent", None
        except ssl.SSLError as err:
            return None, f"tls: {err.reason or err}", err
        except TimeoutError:
            return None, "silent", None
        except OSError as err:
            log.debug("reading from %s:%s failed", host, port, exc_info=True)
            return None, f"{type(err).__name__}: {err.strerror or err}", err


def _handshake(sock: ssl.SSLSocket, deadline: float, cancelled: Cancelled) -> bool:
    """The TLS handshake done before ``deadline`` (False: not done, or interrupted)."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or cancelled():
            return False
        sock.settimeout(min(left, POLL))
        try:
            sock.do_handshake()
            return True
        except TimeoutError:
            continue


def _read(
    sock: socket.socket, n: int, deadline: float, cancelled: Cancelled = _never
) -> bytes | None:
    """Up to ``n`` bytes before ``deadline`` (fewer if the peer closes, none once
    ``cancelled()``); None if none came."""
    data = b""
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0 or cancelled():
            break
        sock.settimeout(min(left, POLL))
        try:
            chunk = sock.recv(n - len(data))
        except TimeoutError:
            continue
        if not chunk:
            break
        data += chunk
    return data or None


def _ask_http(host: str, port: int, deadline: float, cancelled: Cancelled) -> bytes:
    """What the port sends back, before ``deadline``, to a plain HTTP request (b"" if nothing)."""
    request = (
        f"GET /json/identity.json HTTP/1.0\r\nHost: {host}:{port}\r\n"
        "Accept: application/json\r\nConnection: close\r\n\r\n"
    ).encode()
    answer = b""
    try:
        with _connect(host, port, deadline, cancelled) as sock:
            sock.sendall(request)
            while len(answer) < 65536:
                chunk = _read(sock, 65536 - len(answer), deadline, cancelled)
                if not chunk:
                    break
                answer += chunk
    except OSError:
        log.debug("asking %s:%s for HTTP failed", host, port, exc_info=True)
    return answer


def _answer_problem(address: str, answer: bytes) -> str | None:
    """What the answer to the HTTP request shows the port to be, None if nothing useful."""
    if answer.startswith(b"HTTP/"):
        head, _, body = answer.partition(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0].decode("latin-1")
        return _http_problem(address, status, body.decode("utf-8", "replace"))
    if compat.starts_a_message(answer[: compat.FRAME_HEADER]):
        return (
            f"{address}: a Dask scheduler answers there without TLS. Use "
            f"tcp://{address.partition('://')[2]} (without the TLS files)."
        )
    if answer.startswith(b"\x15\x03"):
        return _not_dask(address, answer)
    return None


def _http_problem(address: str, status: str, body: str) -> str:
    scheduler = ""
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        found = json.loads(body).get("address")
        if isinstance(found, str) and _ADDRESS.fullmatch(found):
            scheduler = found
    if scheduler:
        return (
            f"{address} answers HTTP: it is the dashboard of the scheduler at {scheduler}. "
            f"Use {scheduler} instead."
        )
    return (
        f"{address} answers HTTP ({status[:60]}), not Dask's protocol: is it the dashboard? "
        f"The scheduler's address is a different port, like {EXAMPLE}."
    )


def _not_dask(address: str, first: bytes) -> str:
    if first.startswith(b"\x15\x03"):
        return (
            f"{address} answered with a TLS alert: it speaks TLS. Use "
            f"tls://{address.partition('://')[2]} with --tls-ca-file, --tls-cert and --tls-key."
        )
    shown = first.decode("ascii", "replace")
    shown = "".join(c if c.isprintable() else "?" for c in shown)
    return (
        f"{address} answers, but not as a Dask scheduler (it sent {shown!r} first). Check the "
        f"port: the scheduler prints its address at start-up, like {EXAMPLE}."
    )
