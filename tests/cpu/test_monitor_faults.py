"""One cluster cannot stall another: real schedulers that are silent, paused or dead, next to a
good one, sampled the way the Jupyter server samples them (one comm each, no Client).

The good cluster's rate is counted in answers from its scheduler over a few seconds, alone and
then beside the bad ones; it must keep at least 90% of them. A cluster never reached says so,
and nothing is left connected once nobody asks for the clusters any more.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support import DaskProcesses, free_port

from gpudask_jupyter.monitor import Monitor, Source
from gpudask_jupyter.monitor.callers import CommCaller
from gpudask_jupyter.monitor.trackers import CALL_TIMEOUT, CONNECT_TIMEOUT

pytestmark = pytest.mark.timeout(240)

INTERVAL = 0.25
WINDOW = 4.0


class SilentPort:
    """A port that accepts connections and never says a word."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def open_connections(self) -> int:
        """Accepted connections whose other end is still open."""
        count = 0
        for conn in self.accepted:
            conn.setblocking(False)
            try:
                while conn.recv(65536):  # what the peer wrote (its handshake) is read unanswered
                    pass
            except BlockingIOError:
                count += 1  # nothing more to read, and not closed
            except OSError:
                pass
        return count

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent() -> Iterator[SilentPort]:
    port = SilentPort()
    yield port
    port.close()


@pytest.fixture
def paused(tmp_path: Path) -> Iterator[str]:
    """A real ``dask scheduler`` process, stopped with SIGSTOP once it listens."""
    file = tmp_path / "paused.json"
    log = open(tmp_path / "paused.log", "wb")  # noqa: SIM115 - closed below
    args = ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "dask", *args, "--scheduler-file", str(file)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not file.exists():
            assert time.monotonic() < deadline, (tmp_path / "paused.log").read_text()
            time.sleep(0.1)
        time.sleep(0.3)
        address = json.loads(file.read_text())["address"]
        os.kill(proc.pid, signal.SIGSTOP)
        yield address
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def comm_source(address: str) -> Source:
    return Source(
        token=address,
        caller=lambda: CommCaller(address, dict, CONNECT_TIMEOUT),
        mode="attached",
        address=address,
    )


def _answers_over(monitor: Monitor, key: str, seconds: float) -> int:
    before = monitor.answers(key)
    time.sleep(seconds)
    return monitor.answers(key) - before


def _connections_to(port: int) -> int:
    return sum(
        1
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


def test_a_good_cluster_keeps_its_rate_beside_silent_paused_and_dead_ones(
    dask_processes: DaskProcesses, silent: SilentPort, paused: str, caplog
) -> None:
    caplog.set_level(logging.INFO)
    good = comm_source(dask_processes.address)
    alone = Monitor(lambda: {"good": good})
    token = alone.subscribe(lambda: None, interval=INTERVAL)
    try:
        time.sleep(1.0)
        baseline = _answers_over(alone, "good", WINDOW)
    finally:
        alone.unsubscribe(token)

    bad = {
        "silent": comm_source(f"tcp://127.0.0.1:{silent.port}"),
        "paused": comm_source(paused),
        "dead": comm_source(f"tcp://127.0.0.1:{free_port()}"),
    }
    monitor = Monitor(lambda: {"good": comm_source(dask_processes.address), **bad})
    token = monitor.subscribe(lambda: None, interval=INTERVAL)
    try:
        time.sleep(0.4)
        early = {key: monitor.frame(key)[0]["cluster"]["state"] for key in ("silent", "paused")}
        beside = _answers_over(monitor, "good", WINDOW)
        time.sleep(max(0.0, CALL_TIMEOUT + 1 - WINDOW - 0.4))
        frames = {key: monitor.frame(key)[0] for key in ("good", *bad)}
    finally:
        monitor.unsubscribe(token)

    print(f"good cluster: {baseline} answers alone, {beside} beside silent/paused/dead ones")
    assert baseline >= 0.8 * WINDOW / INTERVAL, baseline
    assert beside >= 0.9 * baseline, (beside, baseline)
    assert early == {"silent": "connecting", "paused": "connecting"}  # no answer yet: not running
    assert frames["good"]["cluster"]["state"] == "running"
    assert {w["name"] for w in frames["good"]["workers"]} == {"remote-0", "remote-1"}
    for key in bad:
        cluster = frames[key]["cluster"]
        assert cluster["state"] == "unreachable", (key, cluster)
        assert cluster["message"].startswith("cannot reach the scheduler at tcp://127.0.0.1:")
    # nobody asks any more: no connection is left to any of them
    deadline = time.monotonic() + CALL_TIMEOUT + 2
    good_port = int(dask_processes.address.rsplit(":", 1)[1])
    paused_port = int(paused.rsplit(":", 1)[1])
    while _connections_to(good_port) + _connections_to(paused_port) + silent.open_connections():
        left = (_connections_to(good_port), _connections_to(paused_port), silent.open_connections())
        assert time.monotonic() < deadline, f"connections left open (good, paused, silent): {left}"
        time.sleep(0.2)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_a_cluster_nobody_asks_for_is_not_sampled_and_not_connected(
    dask_processes: DaskProcesses, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpudask_jupyter.monitor import consumers

    sources = {"a": comm_source(dask_processes.address)}
    port = int(dask_processes.address.rsplit(":", 1)[1])
    monitor = Monitor(lambda: sources)
    monitor.request("tab", INTERVAL, "b")  # a sidebar looks at another kernel's cluster
    try:
        time.sleep(1.5)
        assert monitor.answers("a") == 0
        assert _connections_to(port) == 0
        monitor.request("tab", INTERVAL, "a")
        deadline = time.monotonic() + 10
        while monitor.answers("a") == 0:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert _connections_to(port) == 1  # one comm, kept between calls
        monkeypatch.setattr(consumers, "REQUEST_SECONDS", 0.5)  # the tab stops asking
        deadline = time.monotonic() + 10
        while monitor.running or _connections_to(port):
            assert time.monotonic() < deadline, "the sampler or its connection outlived the tab"
            time.sleep(0.1)
    finally:
        monitor.stop()


def test_the_servers_comm_speaks_tls_with_the_entrys_credentials(tmp_path: Path) -> None:
    from distributed import Security
    from support import write_tls_files

    tls = write_tls_files(tmp_path)
    procs = DaskProcesses(tmp_path, tls=tls)
    security = Security(
        tls_ca_file=tls["ca"],
        tls_client_cert=tls["cert"],
        tls_client_key=tls["key"],
        require_encryption=True,
    )
    try:
        procs.wait_for_workers(security=security)
        address = procs.address
        assert address.startswith("tls://")
        with_keys = Source(
            token=1,
            caller=lambda: CommCaller(
                address, lambda: security.get_connection_args("client"), CONNECT_TIMEOUT
            ),
            mode="attached",
            address=address,
        )
        monitor = Monitor(lambda: {"tls": with_keys, "plain": comm_source(address)})
        monitor.tick(wait=CALL_TIMEOUT + 1)
        frames = {key: monitor.frame(key)[0] for key in ("tls", "plain")}
        monitor.stop()
        assert frames["tls"]["cluster"]["state"] == "running"
        assert {w["name"] for w in frames["tls"]["workers"]} == {"remote-0", "remote-1"}
        assert frames["plain"]["cluster"]["state"] == "unreachable"  # no credentials, no data
        assert frames["plain"]["workers"] == []
    finally:
        procs.close()
