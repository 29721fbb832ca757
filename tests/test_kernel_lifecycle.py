"""No orphans: a real ipykernel that started a cluster leaves no worker after shutdown/restart."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager
from support import spawned_workers, wait_gone

pytestmark = pytest.mark.timeout(240)


def run(kc: Any, code: str, timeout: float = 120) -> dict[str, Any]:
    """Execute ``code`` and return the reply content, with stdout/stderr collected."""
    msg_id = kc.execute(code)
    streams: list[str] = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            streams.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            streams.append("\n".join(msg["content"]["traceback"]))
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = kc.get_shell_msg(timeout=timeout)["content"]
    reply["output"] = "".join(streams)
    return dict(reply)


@pytest.fixture
def kernel(runtime_dir: Path) -> Iterator[tuple[KernelManager, Any]]:
    """A kernel started the way jupyter_server starts one (connection file kernel-<id>.json)."""
    kernel_id = str(uuid.uuid4())
    km = KernelManager(
        kernel_name="python3",
        kernel_id=kernel_id,
        connection_file=str(runtime_dir / f"kernel-{kernel_id}.json"),
    )
    km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)


def _start_cluster(km: KernelManager, kc: Any) -> list[Any]:
    reply = run(
        kc,
        "%load_ext gpudask_jupyter\nclient = %gpu_cluster start --n-workers 2 --memory-limit 1GB",
    )
    assert reply["status"] == "ok", reply["output"]
    workers = spawned_workers(km.provisioner.process.pid)
    assert len(workers) == 2, reply["output"]
    return workers


def test_kernel_shutdown_leaves_no_worker(kernel) -> None:
    km, kc = kernel
    workers = _start_cluster(km, kc)
    km.shutdown_kernel(now=False)
    assert wait_gone(workers) == []


def test_kernel_restart_leaves_no_worker(kernel) -> None:
    km, kc = kernel
    workers = _start_cluster(km, kc)
    km.restart_kernel(now=False)
    assert wait_gone(workers) == []
    kc.wait_for_ready(timeout=60)
    reply = run(kc, "1 + 1")
    assert reply["status"] == "ok"


def test_interrupting_a_cell_keeps_the_workers(kernel) -> None:
    km, kc = kernel
    workers = _start_cluster(km, kc)
    kc.execute("import time\ntime.sleep(30)")
    time.sleep(1)
    km.interrupt_kernel()
    kc.wait_for_ready(timeout=30)
    time.sleep(1)
    assert all(w.is_running() for w in workers)
    reply = run(
        kc,
        "n = len(client.scheduler_info()['workers'])\n"
        "print(n, client.submit(sum, [1, 2]).result(timeout=30))",
    )
    assert reply["status"] == "ok", reply["output"]
    assert reply["output"].split() == ["2", "3"]


def test_kernel_id_names_the_registry_entry(kernel, runtime_dir) -> None:
    km, kc = kernel
    _start_cluster(km, kc)
    from gpudask_jupyter import registry

    entries = registry.read_all(runtime_dir)
    assert list(entries) == [km.kernel_id]
    reply = run(kc, "%gpu_cluster stop")
    assert reply["status"] == "ok"
    assert registry.read_all(runtime_dir) == {}


def test_usage_error_fails_the_cell_with_one_line(kernel) -> None:
    _, kc = kernel
    reply = run(kc, "%load_ext gpudask_jupyter\n%gpu_cluster scale many")
    assert reply["status"] == "error"
    assert reply["ename"] == "UsageError"
    assert "expected a number of workers" in reply["output"]
    assert "Traceback" not in reply["output"]
