"""``attach`` is bounded by ``--timeout``, handshake included, and leaves no socket open.

Real listeners on 127.0.0.1: a port that accepts and stays silent (in this process, and one
that really ``accept()``s in a subprocess), an HTTP server, a scheduler's dashboard port, a TLS
scheduler addressed as ``tcp://``; and scheduler files that would block or exhaust memory.
"""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from IPython.core.error import UsageError
from support import this_kernel

TIMEOUT = 3.0
SLACK = 2.0  # the machine may be busy; a hang would take far longer


def _open_to(port: int) -> list[object]:
    """This process's open sockets connected to ``port`` (not listening ones)."""
    return [
        c
        for c in psutil.Process().net_connections(kind="inet")
        if c.raddr and c.raddr.port == port and c.status != psutil.CONN_LISTEN
    ]


def _attach_fails(shell, address: str, match: str) -> str:
    started = time.monotonic()
    with pytest.raises(UsageError, match=match) as info:
        shell.run_line_magic("gpu_cluster", f"attach {address} --timeout {TIMEOUT:g}s")
    assert time.monotonic() - started < TIMEOUT + SLACK
    assert this_kernel().current() is None
    assert address in str(info.value)
    return str(info.value)


def test_a_silent_port_fails_within_the_timeout(shell, silent_port: int) -> None:
    address = f"tcp://127.0.0.1:{silent_port}"
    text = _attach_fails(shell, address, "accepted the connection but sent nothing within 3 s")
    assert "tcp://10.0.0.5:8786" in text  # what a scheduler address looks like
    assert _open_to(silent_port) == []


def test_a_process_that_accepts_and_says_nothing(shell) -> None:
    code = (
        "import socket, sys, time\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "print(s.getsockname()[1], flush=True)\n"
        "conns = []\n"
        "while True:\n"
        "    conns.append(s.accept()[0])\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        _attach_fails(shell, f"tcp://127.0.0.1:{port}", "sent nothing within 3 s")
        assert _open_to(port) == []
    finally:
        proc.kill()
        proc.wait()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def test_an_http_server_is_named_as_such(shell, tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_port
        text = _attach_fails(shell, f"tcp://127.0.0.1:{port}", "answers HTTP")
        assert "is it the dashboard?" in text
        assert _open_to(port) == []
    finally:
        server.shutdown()
        server.server_close()


def test_a_dashboard_port_names_the_scheduler_to_attach_to(shell) -> None:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=0, processes=False, protocol="tcp", dashboard_address="127.0.0.1:0"
    ) as local:
        port = local.scheduler.services["dashboard"].port
        text = _attach_fails(shell, f"tcp://127.0.0.1:{port}", "it is the dashboard of")
        assert f"Use {local.scheduler_address} instead" in text
        assert _open_to(port) == []
        client = shell.run_line_magic("gpu_cluster", f"attach {local.scheduler_address}")
        assert client.scheduler.address == local.scheduler_address
        shell.run_line_magic("gpu_cluster", "stop")


def test_a_tls_scheduler_addressed_as_tcp_says_tls(shell) -> None:
    from distributed import LocalCluster, Security

    with LocalCluster(
        n_workers=0,
        processes=False,
        protocol="tls",
        security=Security.temporary(),
        dashboard_address=None,
    ) as local:
        plain = local.scheduler_address.replace("tls://", "tcp://")
        text = _attach_fails(shell, plain, "sent nothing")
        assert "tls://" in text and "--tls-ca-file" in text


def test_nothing_listening_fails_within_the_timeout(shell) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _attach_fails(shell, f"tcp://127.0.0.1:{port}", "nothing listens there")


# -- scheduler files: read without blocking, up to a size --------------------------------------


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b" " * (2**20 + 1)), "more than the 1048576 expected"),
        (lambda p: p.write_text("[1, 2]"), "not a Dask scheduler file"),
        (lambda p: p.write_text('{"address": 5}'), "is not an address"),
    ],
    ids=["fifo", "directory", "huge", "list", "number"],
)
def test_bad_scheduler_files_are_refused_at_once(shell, tmp_path: Path, make, message) -> None:
    path = tmp_path / "scheduler.json"
    make(path)
    started = time.monotonic()
    with pytest.raises(UsageError, match=message):
        shell.run_line_magic("gpu_cluster", f"attach --scheduler-file {path}")
    assert time.monotonic() - started < 2


def test_a_device_as_scheduler_file_is_refused(shell) -> None:
    with pytest.raises(UsageError, match="/dev/zero: is a character device"):
        shell.run_line_magic("gpu_cluster", "attach --scheduler-file /dev/zero")


def test_tls_with_the_wrong_certificates_or_to_a_plain_scheduler(shell, tmp_path: Path) -> None:
    from distributed import LocalCluster, Security
    from support import write_tls_files

    other = write_tls_files(tmp_path)  # a CA the scheduler does not know
    files = f"--tls-ca-file {other['ca']} --tls-cert {other['cert']} --tls-key {other['key']}"
    with (
        LocalCluster(
            n_workers=0,
            processes=False,
            protocol="tls",
            security=Security.temporary(),
            dashboard_address=None,
        ) as tls_cluster,
        LocalCluster(n_workers=0, processes=False, protocol="tcp", dashboard_address=None) as plain,
    ):
        address = tls_cluster.scheduler_address
        started = time.monotonic()
        with pytest.raises(UsageError, match=f"{address} did not complete a TLS handshake"):
            shell.run_line_magic("gpu_cluster", f"attach {address} {files} --timeout 3s")
        assert time.monotonic() - started < TIMEOUT + SLACK
        as_tls = plain.scheduler_address.replace("tcp://", "tls://")
        with pytest.raises(UsageError, match="a Dask scheduler answers there without TLS"):
            shell.run_line_magic("gpu_cluster", f"attach {as_tls} {files} --timeout 3s")
        assert this_kernel().current() is None


def test_distributed_alone_waits_on_a_silent_port_past_its_timeout(silent_port: int) -> None:
    """Why :mod:`gpudask_jupyter.cluster.handshake` exists: ``distributed.comm.connect`` bounds
    the TCP connect by its timeout, then waits for the peer's handshake with no limit. When this
    fails, distributed bounds it again, and the check of our own can go (keeping only the naming
    of an HTTP server or a dashboard port)."""
    import asyncio

    from distributed.comm import connect

    async def attempt() -> str:
        try:
            comm = await asyncio.wait_for(
                connect(f"tcp://127.0.0.1:{silent_port}", timeout=0.5), 0.5 * 6
            )
        except TimeoutError:
            return "still waiting"  # cancelled by us, five timeouts after its own ran out
        except OSError as err:
            return f"bounded: {err}"
        await comm.close()
        return "connected"

    assert asyncio.run(attempt()) == "still waiting"
    assert _open_to(silent_port) == []
