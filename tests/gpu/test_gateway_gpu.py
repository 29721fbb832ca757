"""A dask-gateway server (its local backend, on loopback) whose workers are dask-cuda workers on
this machine's GPUs, through ``gpudask_jupyter.cluster.gateway_worker`` as docs/instructors.md
configures it: %gpu_cluster start --gateway makes a cluster whose worker has one GPU, named in
the summary as read on the worker, and --distribute puts cuDF partitions on it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from gateway_server import gateway_server

from gpudask_jupyter.machine import nvml

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(600)]


def _worker_gpu() -> dict[str, Any]:
    """Runs on the worker: the GPUs it sees, and a sum computed on its GPU."""
    import os

    import cupy

    return {
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "devices": cupy.cuda.runtime.getDeviceCount(),
        "sum": int(cupy.arange(10).sum().item()),
    }


def test_a_gateway_of_dask_cuda_workers_gives_a_gpu_cluster(
    shell: Any, tmp_path: Path, capsys: Any
) -> None:
    (first, *_) = nvml.devices()
    extra = f"""
c.ClusterConfig.worker_cmd = [sys.executable, "-m", "gpudask_jupyter.cluster.gateway_worker"]
c.ClusterConfig.environment = {{
    "PYTHONPATH": {os.environ.get("PYTHONPATH", "")!r},
    "GPUDASK_GATEWAY_GPU_LOCKS": {str(tmp_path / "locks")!r},
}}
"""
    (tmp_path / "locks").mkdir()
    with gateway_server(tmp_path, extra) as server:
        client = shell.run_line_magic(
            "gpu_cluster", f"start --gateway {server.address} --n-workers 1 --timeout 240"
        )
        out = capsys.readouterr().out
        assert f"at {server.address}: 1 worker" in out, out
        assert first.name in out, out  # the worker's GPU, read on the worker
        (seen,) = client.run(_worker_gpu).values()
        assert seen["devices"] == 1 and seen["sum"] == 45, seen
        assert seen["visible"] and "," not in seen["visible"], seen  # one GPU, its own

        frame = pd.DataFrame({"x": np.arange(1_000_000), "y": np.arange(1_000_000) * 0.5})
        shell.user_ns["frame"] = frame
        shell.run_cell_magic("to_gpu", "--distribute frame", "")
        spread = shell.user_ns["frame"]
        assert type(spread._meta).__module__.startswith("cudf"), type(spread._meta)
        assert float(spread.y.sum().compute()) == float(frame.y.sum())
        shell.run_line_magic("gpu_cluster", "stop")
        assert server.running() == []
