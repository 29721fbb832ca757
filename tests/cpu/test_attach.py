"""%gpu_cluster attach against real scheduler and worker processes on loopback."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest
from IPython.core.error import UsageError
from support import DaskProcesses, free_port, this_kernel, write_tls_files

from gpudask_jupyter import registry


def test_attach_by_address_then_stop_only_detaches(
    shell, dask_processes: DaskProcesses, capsys
) -> None:
    from distributed import default_client

    client = shell.run_line_magic("gpu_cluster", f"attach {dask_processes.address}")
    out = capsys.readouterr().out
    assert default_client() is client
    assert f"Attached to {dask_processes.address}: 2 workers" in out
    assert "remote-0" in out and "remote-1" in out
    # CPU workers: the GPU columns' dashes are said to mean that, as a CPU cluster's are
    assert "GPU columns: no worker reports a GPU" in out, out
    assert client.submit(lambda x: x * 2, 21).result() == 42
    shell.run_line_magic("gpu_cluster", "status")
    assert "Attached cluster at" in capsys.readouterr().out
    shell.run_line_magic("gpu_cluster", "stop")
    assert "keeps running" in capsys.readouterr().out
    assert all(proc.poll() is None for proc in dask_processes.procs)
    dask_processes.wait_for_workers(2)


def test_attach_by_scheduler_file_and_address_without_scheme(
    shell, dask_processes: DaskProcesses
) -> None:
    client = shell.run_line_magic(
        "gpu_cluster", f"attach --scheduler-file {dask_processes.scheduler_file}"
    )
    assert client.scheduler.address == dask_processes.address
    shell.run_line_magic("gpu_cluster", "stop")
    bare = dask_processes.address.removeprefix("tcp://")
    client = shell.run_line_magic("gpu_cluster", f"attach {bare}")
    assert client.scheduler.address == dask_processes.address


def test_attached_cluster_cannot_be_scaled_from_here(shell, dask_processes: DaskProcesses) -> None:
    shell.run_line_magic("gpu_cluster", f"attach {dask_processes.address}")
    with pytest.raises(UsageError, match="did not start it, so it cannot scale it"):
        shell.run_line_magic("gpu_cluster", "scale 5")


def test_attach_writes_registry_entry(
    shell, dask_processes: DaskProcesses, runtime_dir: Path
) -> None:
    shell.run_line_magic("gpu_cluster", f"attach {dask_processes.address}")
    (entry,) = registry.read_all(runtime_dir).values()
    assert entry.mode == "attached"
    assert entry.scheduler_address == dask_processes.address
    shell.run_line_magic("gpu_cluster", "stop")
    assert registry.read_all(runtime_dir) == {}


def test_nobody_answering_fails_within_timeout_naming_the_address(shell) -> None:
    address = f"tcp://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(UsageError, match=f"No Dask scheduler answered at {address} within 2 s"):
        shell.run_line_magic("gpu_cluster", f"attach {address} --timeout 2s")
    assert time.monotonic() - started < 10
    assert this_kernel().current() is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("attach", "needs a scheduler ADDRESS or --scheduler-file"),
        ("attach tcp://127.0.0.1:1 --scheduler-file x.json", "one of them"),
        ("attach --scheduler-file /nonexistent/scheduler.json", "no such file"),
        ("attach tls://127.0.0.1:1", "uses TLS: pass --tls-ca-file"),
        ("attach 127.0.0.1:1 --tls-ca-file ca.pem", "TLS needs all of"),
    ],
)
def test_attach_input_errors(shell, line: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        shell.run_line_magic("gpu_cluster", line)


def test_second_attach_refuses_until_replace(shell, dask_processes: DaskProcesses, capsys) -> None:
    first = shell.run_line_magic("gpu_cluster", f"attach {dask_processes.address}")
    again = shell.run_line_magic("gpu_cluster", f"attach {dask_processes.address}")
    assert again is first
    assert "already running" in capsys.readouterr().err
    replaced = shell.run_line_magic("gpu_cluster", f"attach --replace {dask_processes.address}")
    assert replaced is not first


def test_attach_to_tls_scheduler(shell, tmp_path: Path) -> None:
    tls = write_tls_files(tmp_path)
    procs = DaskProcesses(tmp_path, tls=tls)
    try:
        client = shell.run_line_magic(
            "gpu_cluster",
            f"attach {procs.address} --tls-ca-file {tls['ca']} "
            f"--tls-cert {tls['cert']} --tls-key {tls['key']}",
        )
        assert procs.address.startswith("tls://")
        client.wait_for_workers(2, timeout=60)
        assert client.submit(lambda: 5).result() == 5
        shell.run_line_magic("gpu_cluster", "stop")
        assert all(psutil.pid_exists(p.pid) for p in procs.procs)
    finally:
        procs.close()
