"""What a student's kernel leaves when the hub ends their server, on a real JupyterHub (its own
proxy, local single-user servers, the REST API an idle culler or an admin uses): the server
stops at once, each kernel ends without running a closer (ipykernel's parent poller calls
``os._exit``), and still no registry entry, TLS folder (with the cluster's private key), room
lease or worker process stays behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psutil
import pytest
from hub import environment_for_kernels, kernel_in, running_hub
from support import run_cell as run

pytestmark = pytest.mark.timeout(600)

START = (
    "%load_ext gpudask_jupyter\n"
    "client = %gpu_cluster start --n-workers 1 --memory-limit 1GB\n"
    "import os, psutil\n"
    "print('PIDS', os.getpid(), *[p.pid for p in psutil.Process().children(recursive=True)])"
)


def _what_is_left(work: Path, user: str, room: Path) -> list[str]:
    runtime = work / f"runtime-{user}"
    files = [p.name for p in runtime.glob("gpudask-kernel-*")] if runtime.exists() else []
    return files + [str(p) for p in room.glob("*/*.lease.json")]


def _start_a_cluster(hub: Any, user: str, room: Path) -> list[psutil.Process]:
    hub.start_server(user)
    kc = kernel_in(hub, user)
    reply = run(kc, START)
    kc.stop_channels()
    assert reply["status"] == "ok", reply["output"]
    pids = [int(p) for p in reply["output"].split("PIDS")[1].split()]
    assert len(_what_is_left(hub.work, user, room)) == 3  # entry, TLS folder, lease
    return [psutil.Process(pid) for pid in pids]


def _nothing_left(hub: Any, user: str, room: Path, processes: list[psutil.Process]) -> None:
    _, alive = psutil.wait_procs(processes, timeout=60)
    assert [p for p in alive if p.status() != psutil.STATUS_ZOMBIE] == [], alive
    hub.wait(lambda: _what_is_left(hub.work, user, room) == [], "the kernel's files to go", 60)


@pytest.mark.parametrize("how", ["the server stopped", "the hub shut down"])
def test_a_server_the_hub_ends_leaves_nothing(tmp_path: Path, room_env: Path, how: str) -> None:
    room_env.mkdir(mode=0o1777, exist_ok=True)
    with running_hub(tmp_path, ["alice"], environment_for_kernels()) as hub:
        processes = _start_a_cluster(hub, "alice", room_env)
        if how == "the server stopped":
            hub.stop_server("alice")
        else:
            hub.api("POST", "/hub/api/shutdown", {"servers": True, "proxy": True})
            hub.process.wait(120)
        _nothing_left(hub, "alice", room_env, processes)
    assert os.path.isdir(room_env)
