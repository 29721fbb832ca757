"""A real JupyterHub on loopback for the tests: its own proxy (configurable-http-proxy from the
front end's npm packages), the dummy authenticator, local single-user servers, and a service
token with the admin scopes a test needs to start and stop servers through the hub's REST API,
as an idle culler or an admin would.

The servers run as the hub's account (``SimpleLocalProcessSpawner``): the interpreter of the
tests lives where other accounts cannot read it, so a server of another account could not start
here; what a stopped server leaves is the same whoever runs it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support import end_server, free_port

ROOT = Path(__file__).resolve().parent.parent
PROXY = ROOT / "labextension" / "node_modules" / ".bin" / "configurable-http-proxy"

CONFIG = """
import sys
c = get_config()
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.ConfigurableHTTPProxy.auth_token = {proxy_token!r}
c.JupyterHub.db_url = "sqlite:///{work}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{work}/cookie_secret"
c.JupyterHub.pid_file = "{work}/hub.pid"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {users!r}
c.JupyterHub.spawner_class = "simple"
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--allow-root"]  # the hub's account may be root (CI's is)
c.Spawner.start_timeout = 120
# answer a start once the server is up (JupyterHub 6.1 fails a start that outlasts its default
# 10 s with an InvalidStateError of its own)
c.JupyterHub.tornado_settings = {{"slow_spawn_timeout": 120}}
c.Spawner.http_timeout = 120
c.Spawner.environment = {{
    **{environment!r},
    "JUPYTER_RUNTIME_DIR": lambda spawner: "{work}/runtime-" + spawner.user.name,
}}
c.SimpleLocalProcessSpawner.home_dir_template = "{work}/home-{{username}}"
c.JupyterHub.services = [{{"name": "test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "test-admin",
    "scopes": ["admin:users", "admin:servers", "access:servers", "shutdown", "list:users"],
    "services": ["test"],
}}]
"""


class Hub:
    """A running hub: its REST API with the test service's token."""

    def __init__(
        self, work: Path, users: list[str], environment: dict[str, str], extra: str = ""
    ) -> None:
        """``extra``: more of the hub's configuration (Python, as its config file takes it)."""
        if not PROXY.exists():
            pytest.skip("configurable-http-proxy is not installed (npm ci in labextension)")
        self.work = work
        self.token = secrets.token_hex(16)
        self.port = free_port()
        for user in users:
            (work / f"home-{user}").mkdir(exist_ok=True)
        config = work / "jupyterhub_config.py"
        config.write_text(
            CONFIG.format(
                port=self.port,
                hub_port=free_port(),
                proxy=str(PROXY),
                proxy_port=free_port(),
                proxy_token=secrets.token_hex(16),
                work=work,
                users=set(users),
                environment=environment,
                token=self.token,
            )
            + extra
        )
        self.log = open(work / "hub.log", "wb")  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)],
            cwd=work,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.wait(self._answers, "the hub to answer")

    def _answers(self) -> bool:
        """Whether the hub answers through its proxy (which says 404 until the hub's route is
        added)."""
        try:
            return self.api("GET", "/hub/api/") is not None
        except AssertionError:
            if self.process.poll() is not None:
                raise
            return False

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def api(self, method: str, path: str, body: object = None) -> Any:
        """The hub's (or, through its proxy, a server's) answer as JSON; None while nothing
        listens yet."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url(path), data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=180) as answer:
                text = answer.read()
        except urllib.error.HTTPError as err:
            said = f"{method} {path}: {err.code} {err.read()[:500]!r}"
            if err.code >= 500:  # the hub's own words on what went wrong
                said += f"\nthe hub's log:\n{self.tail()}"
            raise AssertionError(said) from err
        except (ConnectionError, urllib.error.URLError):
            if self.process.poll() is not None:
                raise AssertionError(f"the hub exited: {self.tail()}") from None
            return None
        return json.loads(text) if text else {}

    def wait(self, done: Any, what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}: {self.tail()}"
            time.sleep(0.2)

    def tail(self) -> str:
        self.log.flush()
        return (self.work / "hub.log").read_text(errors="replace")[-4000:]

    def start_server(self, user: str) -> None:
        self.api("POST", f"/hub/api/users/{user}/server")
        self.wait(lambda: self.server(user).get("ready"), f"{user}'s server")

    def server(self, user: str) -> dict[str, Any]:
        found: dict[str, Any] = (
            (self.api("GET", f"/hub/api/users/{user}") or {}).get("servers", {}).get("", {})
        )
        return found

    def stop_server(self, user: str) -> None:
        self.api("DELETE", f"/hub/api/users/{user}/server")
        self.wait(lambda: not self.server(user), f"{user}'s server to stop")

    def close(self) -> None:
        end_server(self.process, self.log)


@contextmanager
def running_hub(
    work: Path, users: list[str], environment: dict[str, str], extra: str = ""
) -> Iterator[Hub]:
    hub = Hub(work, users, environment, extra)
    try:
        yield hub
    finally:
        hub.close()


def kernel_in(hub: Hub, user: str) -> Any:
    """A kernel started in ``user``'s server through the hub's proxy, and a client of it (from
    its connection file, which the server writes in the user's runtime directory)."""
    from jupyter_client import BlockingKernelClient

    started = hub.api("POST", f"/user/{user}/api/kernels", {"name": "python3"})
    connection = hub.work / f"runtime-{user}" / f"kernel-{started['id']}.json"
    hub.wait(connection.exists, "the kernel's connection file")
    client = BlockingKernelClient(connection_file=str(connection))
    client.load_connection_file()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    return client


def environment_for_kernels() -> dict[str, str]:
    """What the test's own environment gives the kernels: the package and its test seams."""
    keep = ("PATH", "PYTHONPATH", "GPUDASK_", "DASK_")
    return {k: v for k, v in os.environ.items() if k.startswith(keep)}
