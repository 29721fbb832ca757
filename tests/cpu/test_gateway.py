"""Clusters from a real dask-gateway server on loopback (its local backend, its own proxy and TLS):
start with options, a refused option, scale and adaptive bounds, --distribute and --gather onto
its workers, the panel's frames carrying its workers, stop, stop --keep then attach --gateway, a
kernel's shutdown leaving no cluster on the gateway, a gateway that is not there and one that
accepts and stays silent, each failing within --timeout in a sentence naming the address."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from gateway_server import GatewayServer, gateway_server
from IPython.core.error import UsageError
from support import free_port, stand_in_room, this_kernel, this_view, use_stand_in_room
from support import run_cell as run

from gpudask_jupyter import registry
from gpudask_jupyter.cluster.kinds import Gateway

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.filterwarnings("ignore::gpudask_jupyter.convert.GpuUnavailableWarning"),
    # dask-gateway's own clients made inside its calls (a cluster that failed to connect) close
    # themselves twice, the second time in __del__: its bug, said as "Exception ignored"
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    with gateway_server(tmp_path_factory.mktemp("gateway")) as server:
        yield server


@pytest.fixture
def hub_env(gateway: GatewayServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[GatewayServer]:
    """The gateway's address as daskhub gives it to every user. Its logs and those of the
    clusters a failed test left running are printed as it ends (pytest shows them on failure:
    a worker that left, seen once in CI, says why only there)."""
    import dask.config

    monkeypatch.setenv("DASK_GATEWAY__ADDRESS", gateway.address)
    dask.config.refresh()
    yield gateway
    print(gateway.logs())


def _start(shell: Any, extra: str = "") -> Any:
    return shell.run_line_magic("gpu_cluster", f"start --gateway --n-workers 1 {extra}")


def test_a_cluster_from_the_gateway_with_options_scaled_and_stopped(
    shell: Any, hub_env: GatewayServer, capsys: Any, runtime_dir: Path
) -> None:
    client = _start(shell, "--option worker_cores=2 --option worker_memory=1.5 --timeout 60")
    out = capsys.readouterr().out
    assert f"Asking dask-gateway at {hub_env.address} for a cluster" in out
    assert "dask-gateway cluster " in out and f"at {hub_env.address}: 1 worker" in out, out
    assert "TLS credentials dask-gateway made for this cluster alone" in out
    assert "dashboard:" in out and "/clusters/" in out, out
    (worker,) = client.scheduler_info()["workers"].values()
    assert worker["nthreads"] == 2 and worker["memory_limit"] == int(1.5 * 2**30)
    assert client.submit(sum, [1, 2]).result() == 3
    (name,) = hub_env.running()
    (entry,) = registry.read_all(runtime_dir).values()
    assert entry.mode == "gateway" and entry.scheduler_address.endswith(name)
    assert entry.security() is not None  # the sidebar reaches it with the cluster's own TLS

    shell.run_line_magic("gpu_cluster", "gateway")
    listed = capsys.readouterr().out
    assert name in listed and "running" in listed and "worker_memory" in listed, listed

    shell.run_line_magic("gpu_cluster", "scale 2")
    assert len(client.scheduler_info()["workers"]) == 2
    shell.run_line_magic("gpu_cluster", "scale --adapt 1 3")
    assert "between 1 and 3 workers" in capsys.readouterr().out
    shell.run_line_magic("gpu_cluster", "stop")
    assert f"Cluster {name} shut down by dask-gateway" in capsys.readouterr().out
    assert hub_env.running() == []
    assert registry.read_all(runtime_dir) == {}
    assert not list(runtime_dir.glob("gpudask-kernel-*-tls"))


def test_an_option_the_gateway_does_not_offer_is_refused_naming_what_it_does(
    shell: Any, hub_env: GatewayServer
) -> None:
    with pytest.raises(UsageError) as refused:
        _start(shell, "--option worker_gpus_typo=1")
    text = str(refused.value)
    assert f"The gateway at {hub_env.address} offers no cluster option 'worker_gpus_typo'" in text
    assert "worker_cores (now 1), worker_memory (now 1.0), worker_gpus (now 0)" in text
    with pytest.raises(UsageError, match="refuses worker_cores=9"):
        _start(shell, "--option worker_cores=9")
    with pytest.raises(UsageError, match="--gpus is a number of GPU workers"):
        shell.run_line_magic("gpu_cluster", "start --gateway --gpus 0,1")
    with pytest.raises(UsageError, match="--rmm-pool-size is not taken"):
        shell.run_line_magic("gpu_cluster", "start --gateway --rmm-pool-size 1GB")
    with pytest.raises(UsageError, match="--option and --auth are for a cluster of dask-gateway"):
        shell.run_line_magic("gpu_cluster", "start --option worker_cores=1")
    assert hub_env.running() == []


def test_gpus_ask_the_gateway_for_gpu_workers(shell: Any, hub_env: GatewayServer) -> None:
    """--gpus N: N workers, each with the gateway's GPU option set to one GPU."""
    client = shell.run_line_magic("gpu_cluster", "start --gateway --gpus 1")
    assert len(client.scheduler_info()["workers"]) == 1
    session = this_kernel().current()
    assert session is not None and isinstance(session.kind, Gateway)
    assert session.kind.made.options["worker_gpus"] == 1
    shell.run_line_magic("gpu_cluster", "stop")


def test_distribute_and_gather_onto_the_gateways_workers(
    shell: Any, hub_env: GatewayServer
) -> None:
    client = shell.run_line_magic("gpu_cluster", "start --gateway --n-workers 2")
    frame = pd.DataFrame({"x": np.arange(100_000), "y": np.arange(100_000) * 0.5})
    shell.user_ns["frame"] = frame
    shell.run_cell_magic("to_gpu", "--distribute -q frame", "pass")
    spread = shell.user_ns["frame"]
    assert type(spread).__module__.startswith("dask")
    assert len(client.who_has()) > 0
    shell.run_cell_magic("to_cpu", "--gather -q frame", "pass")
    pd.testing.assert_frame_equal(shell.user_ns["frame"], frame)
    shell.run_line_magic("gpu_cluster", "stop")


def test_the_panels_frames_carry_the_gateways_workers(shell: Any, hub_env: GatewayServer) -> None:
    from gpudask_jupyter.monitor import Monitor
    from gpudask_jupyter.widget.shared_monitor import KEY

    client = shell.run_line_magic("gpu_cluster", "start --gateway --n-workers 2")
    client.submit(sum, [1, 2]).result()
    monitor = Monitor(this_view().sources)
    try:
        monitor.tick()
        frame, _ = monitor.frame(KEY)
    finally:
        monitor.stop()
    json.dumps(frame)
    addresses = sorted(w["address"] for w in frame["workers"])
    assert addresses == sorted(client.scheduler_info()["workers"]), frame["workers"]
    assert frame["cluster"]["mode"] == "gateway"
    shell.run_line_magic("gpu_cluster", "stop")


def test_stop_keep_leaves_it_running_and_attach_gateway_comes_back(
    shell: Any, hub_env: GatewayServer, capsys: Any
) -> None:
    _start(shell)
    capsys.readouterr()
    (name,) = hub_env.running()
    shell.run_line_magic("gpu_cluster", "stop --keep")
    out = capsys.readouterr().out
    assert f"keeps the cluster {name} running" in out
    assert f"%gpu_cluster attach --gateway {name}" in out
    assert hub_env.running() == [name]
    client = shell.run_line_magic("gpu_cluster", f"attach --gateway {name}")
    assert client.submit(sum, [2, 2]).result() == 4
    shell.run_line_magic("gpu_cluster", "stop")
    assert "dask-gateway keeps it running" in capsys.readouterr().out
    assert hub_env.running() == [name]  # a cluster this kernel did not start is left
    with pytest.raises(UsageError, match="has no running cluster 'nope' of yours"):
        shell.run_line_magic("gpu_cluster", "attach --gateway nope")
    import getpass

    from dask_gateway import Gateway
    from dask_gateway.auth import BasicAuth

    with Gateway(hub_env.address, auth=BasicAuth(getpass.getuser())) as gateway:
        gateway.stop_cluster(name)


def test_a_kernels_shutdown_leaves_no_cluster_on_the_gateway(
    hub_env: GatewayServer, kernel: Any
) -> None:
    km, kc = kernel
    reply = run(kc, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start --gateway")
    assert reply["status"] == "ok", reply["output"]
    assert len(hub_env.running()) == 1
    km.shutdown_kernel(now=False)
    assert hub_env.running() == []


def test_a_gateway_that_is_not_there_fails_within_the_timeout_naming_it(shell: Any) -> None:
    address = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(UsageError) as refused:
        shell.run_line_magic("gpu_cluster", f"start --gateway {address} --timeout 5")
    assert f"No dask-gateway answered at {address} (nothing listens there)" in str(refused.value)


def test_a_gateway_that_accepts_and_stays_silent_fails_within_the_timeout(
    shell: Any, silent_port: int
) -> None:
    address = f"http://127.0.0.1:{silent_port}"
    with pytest.raises(UsageError) as refused:
        shell.run_line_magic("gpu_cluster", f"start --gateway {address} --timeout 2")
    assert f"No dask-gateway answered at {address} (it did not answer within 2 s)" in str(
        refused.value
    )


def test_no_address_at_all_says_where_one_comes_from(
    shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dask.config

    monkeypatch.delenv("DASK_GATEWAY__ADDRESS", raising=False)
    with (
        dask.config.set({"gateway.address": None}),
        pytest.raises(UsageError, match="No dask-gateway address: give one"),
    ):
        shell.run_line_magic("gpu_cluster", "start --gateway")


GPU_WORKERS = """
c.ClusterConfig.worker_cmd = [sys.executable, "-m", "gpudask_jupyter.cluster.gateway_worker"]
c.ClusterConfig.environment = {{
    **{seam!r},
    "GPUDASK_GATEWAY_GPU_LOCKS": "{locks}",
    "GPUDASK_GATEWAY_WORKER_COMMAND": sys.executable + " -m distributed.cli.dask_worker",
}}
"""


def test_gateway_workers_each_take_a_gpu_of_their_own(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented GPU set-up: the worker command takes one GPU no other worker holds
    (the room's test seam stands for two GPUs; a plain dask worker for dask cuda worker)."""
    import os

    locks = tmp_path / "locks"
    locks.mkdir()
    (tmp_path / "gw").mkdir()
    with gateway_server(
        tmp_path / "gw", GPU_WORKERS.format(locks=locks, seam=stand_in_room("2:16GiB"))
    ) as server:
        client = shell.run_line_magic(
            "gpu_cluster", f"start --gateway {server.address} --n-workers 2"
        )
        seen = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
        assert sorted(seen.values()) == [
            "GPU-00000000-0000-0000-0000-000000000000",
            "GPU-00000000-0000-0000-0000-000000000001",
        ]
        shell.run_line_magic("gpu_cluster", "stop")


def test_a_gpu_worker_finds_every_gpu_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpudask_jupyter.cluster import gateway_worker

    use_stand_in_room(monkeypatch, "2:16GiB")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    first = gateway_worker.take_gpu(tmp_path)
    second = gateway_worker.take_gpu(tmp_path)
    assert first is not None and second is not None and first[0] != second[0]
    assert gateway_worker.take_gpu(tmp_path) is None  # both held
    import os

    os.close(first[1])  # a worker ends: its GPU is free again
    again = gateway_worker.take_gpu(tmp_path)
    assert again is not None and again[0] == first[0]


def test_the_sidebars_monitor_reaches_the_gateway_cluster_with_its_own_credentials(
    shell: Any, hub_env: GatewayServer
) -> None:
    """The server side reads the kernel's registry entry (gateway:// address, the cluster's
    credentials in the owner-only folder) and follows the cluster's workers."""
    from gpudask_jupyter.monitor import Monitor
    from gpudask_jupyter.registry.kernel_id import kernel_id
    from gpudask_jupyter.server.registry_monitor import RegistrySources

    client = shell.run_line_magic("gpu_cluster", "start --gateway --n-workers 2")
    monitor = Monitor(RegistrySources())
    try:
        deadline = 60.0
        import time

        end = time.monotonic() + deadline
        while True:
            monitor.tick()
            frame, _ = monitor.frame(kernel_id())
            if frame["cluster"] and frame["cluster"]["state"] == "running" and frame["workers"]:
                break
            assert time.monotonic() < end, frame["cluster"]
            time.sleep(0.2)
    finally:
        monitor.stop()
    assert frame["cluster"]["mode"] == "gateway"
    assert sorted(w["address"] for w in frame["workers"]) == sorted(
        client.scheduler_info()["workers"]
    )
    shell.run_line_magic("gpu_cluster", "stop")


def test_start_gateway_help_lists_the_gateways_own_options(
    shell: Any, hub_env: GatewayServer, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``start --gateway --help``: the magic's help, then the options this gateway offers, which
    no fixed help can know (and nothing else: not the user's clusters); a gateway that does not
    answer is said in a sentence."""
    from gpudask_jupyter.cluster import gateway

    def listing(*args: Any) -> None:
        raise AssertionError("a help lists no cluster")

    monkeypatch.setattr(gateway, "listing", listing)
    shell.run_line_magic("gpu_cluster", "start --gateway --help")
    out = capsys.readouterr().out
    assert "%gpu_cluster start [" in out and "--option NAME=VALUE" in out, out  # the help
    assert f"Cluster options of dask-gateway at {hub_env.address}" in out, out
    for name in ("worker_cores", "worker_memory", "worker_gpus"):
        assert name in out, out
    nobody = f"http://127.0.0.1:{free_port()}"
    shell.run_line_magic("gpu_cluster", f"start --gateway {nobody} --timeout 5 --help")
    out = capsys.readouterr().out
    assert "could not be read" in out and nobody in out, out
    assert hub_env.running() == []  # a help starts nothing
