"""%gpu_cluster in a real IPython shell, on the CPU fallback that CI (no GPU) gets."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from support import spawned_workers, this_kernel, wait_gone

from gpudask_jupyter import registry
from gpudask_jupyter.machine import processes

START = "start --n-workers 2 --threads-per-worker 1 --memory-limit 1GB"


@pytest.fixture(autouse=True)
def _no_gpu_here() -> None:
    from gpudask_jupyter.machine import nvml

    if nvml.status().available:
        pytest.skip("this module tests the CPU fallback; this machine has a GPU")


@pytest.fixture
def alone(shell) -> None:
    """This machine counts as used by nobody else: the dashboard starts by default."""
    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'false'")


@pytest.mark.usefixtures("alone")
def test_start_falls_back_to_cpu_with_warning_and_returns_default_client(shell, capsys) -> None:
    from distributed import Client, default_client

    client = shell.run_line_magic("gpu_cluster", START)
    out = capsys.readouterr()
    assert isinstance(client, Client)
    assert default_client() is client
    assert "no usable GPU" in out.err and "--require-gpu" in out.err
    assert "CPU Dask cluster (no GPU): 2 workers" in out.out
    # the reason once, in the summary's last line, not again in the warning
    reason = [line for line in out.out.splitlines() if line.startswith("no GPU: ")]
    assert len(reason) == 1, out.out
    assert reason[0].removeprefix("no GPU: ") not in out.err
    assert "dashboard: http://127.0.0.1:" in out.out
    assert len(client.scheduler_info()["workers"]) == 2
    assert client.submit(sum, [1, 2, 3]).result() == 6
    assert len(spawned_workers()) == 2


@pytest.mark.usefixtures("alone")
def test_binds_to_loopback_with_tls_by_default(shell) -> None:
    client = shell.run_line_magic("gpu_cluster", START)
    assert client.scheduler.address.startswith("tls://127.0.0.1:")
    assert all(addr.startswith("tls://127.0.0.1:") for addr in client.scheduler_info()["workers"])
    assert this_kernel().current().dashboard_link.startswith("http://127.0.0.1:")


def test_require_gpu_is_an_error_and_starts_nothing(shell) -> None:
    with pytest.raises(UsageError, match=r"No usable GPU: .*Nothing was started"):
        shell.run_line_magic("gpu_cluster", "start --require-gpu --n-workers 1")
    assert this_kernel().current() is None
    assert spawned_workers() == []


def test_require_gpu_from_config(shell) -> None:
    shell.run_line_magic("config", "GpuDaskMagics.require_gpu = True")
    with pytest.raises(UsageError, match="No usable GPU"):
        shell.run_line_magic("gpu_cluster", "start --n-workers 1")
    assert this_kernel().current() is None


def test_gpus_flag_without_gpu_says_so(shell) -> None:
    with pytest.raises(UsageError, match="--gpus: this machine has no usable GPU"):
        shell.run_line_magic("gpu_cluster", "start --gpus 0")
    assert spawned_workers() == []


def test_second_start_changes_nothing_until_replace(shell, capsys) -> None:
    first = shell.run_line_magic("gpu_cluster", START)
    address = first.scheduler.address
    workers = {p.pid for p in spawned_workers()}
    capsys.readouterr()
    again = shell.run_line_magic("gpu_cluster", "start --n-workers 1")
    assert again is first
    assert "already running" in capsys.readouterr().err
    assert {p.pid for p in spawned_workers()} == workers
    replaced = shell.run_line_magic(
        "gpu_cluster", "start --replace --n-workers 1 --memory-limit 1GB"
    )
    assert replaced.scheduler.address != address
    assert len(replaced.scheduler_info()["workers"]) == 1
    assert wait_gone([p for p in spawned_workers() if p.pid in workers] or []) == []


def test_status_scale_restart(shell, capsys) -> None:
    client = shell.run_line_magic("gpu_cluster", START)
    capsys.readouterr()
    shell.run_line_magic("gpu_cluster", "")
    status = capsys.readouterr().out
    assert "CPU cluster (no GPU) at tls://127.0.0.1:" in status
    assert "tasks running / ready / results held" in status
    shell.run_line_magic("gpu_cluster", "scale 1")
    assert len(client.scheduler_info()["workers"]) == 1
    shell.run_line_magic("gpu_cluster", "scale 2")
    assert len(client.scheduler_info()["workers"]) == 2
    future = client.submit(lambda: 41 + 1)
    assert future.result() == 42
    shell.run_line_magic("gpu_cluster", "restart")
    assert "Workers restarted." in capsys.readouterr().out
    assert len(client.scheduler_info()["workers"]) == 2
    assert client.submit(lambda: 7).result() == 7


def test_stop_leaves_no_worker_process_and_removes_registry(shell, runtime_dir: Path) -> None:
    shell.run_line_magic("gpu_cluster", START)
    workers = spawned_workers()
    assert len(workers) == 2
    entry = registry.path_for(this_kernel().current().kernel_id, runtime_dir)
    assert entry.exists()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    shell.run_line_magic("gpu_cluster", "stop")
    assert wait_gone(workers) == []
    assert this_kernel().current() is None
    assert not entry.exists()


@pytest.mark.parametrize("magic", ["unload_ext", "reload_ext"])
def test_unload_and_reload_close_the_cluster(magic: str) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "gpudask_jupyter")
    try:
        ip.run_line_magic("gpu_cluster", START)
        kernel = this_kernel()
        workers = spawned_workers()
        assert len(workers) == 2
        ip.run_line_magic(magic, "gpudask_jupyter")
        assert wait_gone(workers) == []
        assert kernel.current() is None
        if magic == "reload_ext":
            assert "gpu_cluster" in ip.magics_manager.magics["line"]
    finally:
        if "gpu_cluster" in ip.magics_manager.magics["line"]:
            ip.run_line_magic("unload_ext", "gpudask_jupyter")
    assert "gpu_cluster" not in ip.magics_manager.magics["line"]


@pytest.mark.usefixtures("alone")
def test_registry_entry_describes_the_cluster(shell, runtime_dir: Path) -> None:
    client = shell.run_line_magic("gpu_cluster", START)
    entries = registry.read_all(runtime_dir)
    assert len(entries) == 1
    (entry,) = entries.values()
    assert entry.scheduler_address == client.scheduler.address
    assert entry.mode == "cpu"
    assert entry.pid == os.getpid()
    assert entry.started == processes.process_started(os.getpid())
    assert entry.dashboard_link and entry.dashboard_link.startswith("http://127.0.0.1:")
    assert entry.tls is not None


def test_no_tls_is_plain_tcp_with_a_warning(shell, runtime_dir: Path, capsys) -> None:
    client = shell.run_line_magic("gpu_cluster", START + " --no-tls")
    out = capsys.readouterr()
    assert "--no-tls" in out.err and "any local user" in out.err and "run code as you" in out.err
    assert client.scheduler.address.startswith("tcp://127.0.0.1:")
    assert "every local user (plain TCP): they can run code as you" in out.out
    (entry,) = registry.read_all(runtime_dir).values()
    assert entry.tls is None


def test_tls_start_encrypts_and_registers_credentials(shell, runtime_dir: Path) -> None:
    client = shell.run_line_magic("gpu_cluster", START + " --tls")
    assert client.scheduler.address.startswith("tls://127.0.0.1:")
    assert client.submit(lambda: "secret").result() == "secret"
    (entry,) = registry.read_all(runtime_dir).values()
    assert entry.tls is not None
    for path in entry.tls.values():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    from distributed import Client

    with Client(entry.scheduler_address, security=entry.security(), timeout=10) as second:
        assert len(second.scheduler_info()["workers"]) == 2
    shell.run_line_magic("gpu_cluster", "stop")
    assert not any(Path(p).exists() for p in entry.tls.values())


def test_dashboard_can_be_switched_off(shell, capsys) -> None:
    shell.run_line_magic("gpu_cluster", START + " --dashboard-address none")
    assert this_kernel().current().dashboard_link is None
    assert "dashboard: http" not in capsys.readouterr().out
