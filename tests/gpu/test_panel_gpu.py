"""The monitor's frames on a real GPU: utilisation under load, memory moves with allocations,
and the server extension's frames carry this machine's GPUs."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from support import free_port

from gpudask_jupyter.machine import gpus, nvml
from gpudask_jupyter.monitor import Monitor
from gpudask_jupyter.schema.frame import DeviceReading

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(300)]

cupy = pytest.importorskip("cupy")


def _device() -> nvml.Device:
    """The GPU CuPy's device 0 is (the process may run with CUDA_VISIBLE_DEVICES set)."""
    visible = gpus.visible(nvml.devices(), os.environ.get("CUDA_VISIBLE_DEVICES"))
    return visible[0]


def _readings(frame: dict, uuid: str) -> list[DeviceReading]:
    """The device's readings in the frame's samples, by field name."""
    return [
        DeviceReading.from_values(s["values"][uuid])
        for s in frame["samples"]
        if uuid in s["values"]
    ]


def test_utilisation_under_matmul_load_is_high() -> None:
    device = _device()
    monitor = Monitor(lambda: {})
    stop = threading.Event()

    def load() -> None:
        a = cupy.random.random((8192, 8192), dtype=cupy.float32)
        while not stop.is_set():
            for _ in range(20):
                a = a @ a
                a /= cupy.linalg.norm(a)
            cupy.cuda.runtime.deviceSynchronize()

    worker = threading.Thread(target=load)
    worker.start()
    try:
        time.sleep(1.0)
        for _ in range(12):
            monitor.tick()
            time.sleep(0.25)
    finally:
        stop.set()
        worker.join()
    frame, _ = monitor.frame("kernel")
    names = {d["id"]: d for d in frame["devices"]}
    assert names[device.uuid]["name"] == device.name
    readings = _readings(frame, device.uuid)
    utils = [r.utilization for r in readings if r.utilization is not None]
    assert len(utils) >= 10
    assert max(utils) > 50, utils
    assert sorted(utils)[len(utils) // 2] > 50, utils  # the median, not one lucky sample
    last = readings[-1]
    assert last.temperature is not None and last.power is not None and last.power > 0


def test_memory_figure_moves_by_what_is_allocated() -> None:
    device = _device()
    monitor = Monitor(lambda: {})
    cupy.zeros(1)
    cupy.get_default_memory_pool().free_all_blocks()
    time.sleep(0.3)
    monitor.tick()
    size = 10 * 2**30
    block = cupy.empty(size, dtype=cupy.uint8)
    block.fill(1)
    cupy.cuda.runtime.deviceSynchronize()
    time.sleep(0.3)
    monitor.tick()
    frame, _ = monitor.frame("kernel")
    before, after = (r.memory_used for r in _readings(frame, device.uuid)[-2:])
    del block
    cupy.get_default_memory_pool().free_all_blocks()
    moved = after - before
    assert abs(moved - size) <= 0.05 * size, (moved, size)


def test_server_frames_carry_this_machines_gpus(tmp_path: Path) -> None:
    token, port = secrets.token_hex(8), free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path))
    args = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        f"--ServerApp.port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        "--ServerApp.jpserver_extensions={'gpudask_jupyter': True}",
        f"--ServerApp.root_dir={tmp_path}",
    ]
    if os.getuid() == 0:
        args.append("--allow-root")
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - closed with the process
    server = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/gpudask/api/frame?kernel=&interval=0.25&token={token}"
    try:
        deadline = time.monotonic() + 60
        frame = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    frame = json.loads(response.read())["frame"]
                if frame["samples"] and all(
                    d["id"] in frame["samples"][-1]["values"] for d in frame["devices"]
                ):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert frame is not None, (tmp_path / "server.log").read_text()
        assert frame["nvml"]["available"] is True
        assert {d["id"] for d in frame["devices"]} == {d.uuid for d in nvml.devices()}
        values = frame["samples"][-1]["values"]
        for device in nvml.devices():
            reading = DeviceReading.from_values(values[device.uuid])
            assert reading.utilization is not None and 0 <= reading.utilization <= 100
            used = reading.memory_used
            assert used is not None and 0 < used <= device.memory_total
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _hold(nbytes: int) -> object:
    """Runs in a worker: device memory it keeps (the future holds the array)."""
    import cupy

    block = cupy.ones(nbytes, dtype=cupy.uint8)
    cupy.cuda.runtime.deviceSynchronize()
    return block


def test_the_clusters_share_of_each_gpu_and_its_workers_are_ours(shell) -> None:
    from gpudask_jupyter.magics.extension import Extension
    from gpudask_jupyter.widget.shared_monitor import KEY

    client = shell.run_line_magic("gpu_cluster", "start")
    loaded = Extension.of(shell)
    assert loaded is not None
    try:
        monitor = Monitor(loaded.view.sources)
        monitor.tick(wait=5)
        before, _ = monitor.frame(KEY)
        size = 2 * 2**30
        worker = sorted(client.scheduler_info()["workers"])[0]
        held = client.submit(_hold, size, workers=[worker], pure=False)
        held.result()
        deadline = time.monotonic() + 30
        while True:
            monitor.tick(wait=5)
            frame, _ = monitor.frame(KEY)
            shares = {d["id"]: d["cluster_memory"] for d in frame["devices"]}
            grown = [
                d["id"]
                for d in frame["devices"]
                if (shares[d["id"]] or 0)
                - (next(b for b in before["devices"] if b["id"] == d["id"])["cluster_memory"] or 0)
                >= 0.95 * size
            ]
            if grown or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert len(grown) == 1, shares  # on the worker's own GPU, and only there
        assert all(value is not None for value in shares.values()), shares
        assert frame["workers"] and all(w["ours"] for w in frame["workers"])
        assert all(w["gpu"] is not None for w in frame["workers"])
        monitor.stop()
        del held
    finally:
        shell.run_line_magic("gpu_cluster", "stop")
