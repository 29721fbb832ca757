"""A real dask-gateway server on loopback for the tests: its local backend (each cluster's
scheduler and workers are processes of this machine, of this user), its simple authenticator,
and cluster options as a hub offers them (cores, memory, GPUs per worker). The server and its
proxy are dask-gateway-server's own, installed from the registry by the test command."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support import end_server, free_port

CONFIG = """
import sys
from dask_gateway_server.options import Float, Integer, Options

c.DaskGateway.address = "127.0.0.1:{api_port}"
c.Proxy.address = "127.0.0.1:{port}"
c.DaskGateway.backend_class = "dask_gateway_server.backends.local.UnsafeLocalBackend"
c.DaskGateway.authenticator_class = "dask_gateway_server.auth.SimpleAuthenticator"
c.DaskGateway.db_url = "sqlite:///{work}/gateway.sqlite"
c.LocalBackend.clusters_directory = "{work}/clusters"
c.ClusterConfig.scheduler_cmd = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
c.ClusterConfig.worker_cmd = [sys.executable, "-m", "distributed.cli.dask_worker"]
c.ClusterConfig.idle_timeout = 600


def options_handler(options):
    return {{
        "worker_cores": options.worker_cores,
        "worker_memory": int(options.worker_memory * 2**30),
    }}


c.Backend.cluster_options = Options(
    Integer("worker_cores", 1, min=1, max=2, label="Cores per worker"),
    Float("worker_memory", 1, min=0.5, max=4, label="Memory per worker (GiB)"),
    Integer("worker_gpus", 0, min=0, max=1, label="GPUs per worker"),
    handler=options_handler,
)
"""


class GatewayServer:
    def __init__(self, work: Path, extra: str = "") -> None:
        self.work = work
        self.port = free_port()
        config = work / "gateway_config.py"
        config.write_text(CONFIG.format(api_port=free_port(), port=self.port, work=work) + extra)
        self.log = open(work / "gateway.log", "wb")  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dask_gateway_server", "-f", str(config)],
            cwd=work,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while not self._healthy():
            assert self.process.poll() is None, self.tail()
            assert time.monotonic() < deadline, self.tail()
            time.sleep(0.1)

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.address}/api/health", timeout=5) as answer:
                return answer.status == 200
        except OSError:
            return False

    def tail(self) -> str:
        self.log.flush()
        return (self.work / "gateway.log").read_text(errors="replace")[-4000:]

    def logs(self) -> str:
        """The server's log and the logs of every cluster still running (a cluster's folder and
        its logs go when it stops): what a failed test prints to say what the gateway did."""
        parts = [f"--- gateway.log (end)\n{self.tail()}"]
        for log in sorted((self.work / "clusters").glob("*/logs/*.log")):
            text = log.read_text(errors="replace")[-3000:]
            parts.append(f"--- {log.parent.parent.name}/{log.name} (end)\n{text}")
        return "\n".join(parts)

    def running(self) -> list[str]:
        """The names of the running clusters (of any user), as the gateway lists them."""
        import getpass

        from dask_gateway import Gateway
        from dask_gateway.auth import BasicAuth

        with Gateway(self.address, auth=BasicAuth(getpass.getuser())) as gateway:
            return [c.name for c in gateway.list_clusters()]

    def close(self) -> None:
        end_server(self.process, self.log)  # a gateway stops its clusters as it goes


@contextmanager
def gateway_server(work: Path, extra: str = "") -> Iterator[GatewayServer]:
    """``extra``: more of the server's configuration (Python, as its config file takes it)."""
    pytest.importorskip("dask_gateway_server", reason="dask-gateway-server is not installed")
    server = GatewayServer(work, extra)
    try:
        yield server
    finally:
        server.close()
