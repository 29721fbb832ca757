"""A refused request changes nothing: ``start``, ``attach`` and ``join`` with ``--replace`` check
everything first, so a cluster that holds a distributed frame keeps it through every refusal.
Real CPU clusters, a real scheduler in other processes, real files."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from IPython.core.error import UsageError
from support import this_kernel

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.filterwarnings("ignore::gpudask_jupyter.convert.GpuUnavailableWarning"),
]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once it is closed


def _refused(tmp_path: Path, scheduler_address: str) -> list[str]:
    missing = tmp_path / "missing.json"
    not_json = tmp_path / "not.json"
    not_json.write_text("{ this is not JSON")
    closed = _closed_port()
    tls = scheduler_address.replace("tcp://", "tls://")
    return [
        "start --replace --n-workers 64",
        "start --replace --require-gpu",
        "start --replace --protocol ucx",
        "start --replace --no-tls --host 0.0.0.0",
        "start --replace --host 203.0.113.7",
        f"attach --replace --scheduler-file {missing}",
        f"attach --replace --scheduler-file {not_json}",
        f"attach --replace {tls}",
        f"attach --replace tcp://127.0.0.1:{closed} --timeout 1",
        f"join --replace tcp://127.0.0.1:{closed} --timeout 1",
        f"join --replace {scheduler_address} --n-workers 64",
    ]


def test_every_refused_replace_keeps_the_cluster_and_its_data(
    shell: Any, scheduler: Any, tmp_path: Path
) -> None:
    from gpudask_jupyter.machine import nvml

    if nvml.status().available:
        pytest.skip("the refusals include --require-gpu on a machine without a GPU")
    shell.run_line_magic("gpu_cluster", "start --n-workers 2 --memory-limit 1GB")
    before = this_kernel().current()
    frame = pd.DataFrame({"k": np.arange(10_000) % 3, "v": np.arange(10_000.0)})
    shell.user_ns["frame"] = frame
    shell.run_cell_magic("to_gpu", "--distribute -q frame", "frame = frame")
    expected = frame.v.sum()
    for line in _refused(tmp_path, scheduler.address):
        with pytest.raises(UsageError):
            shell.run_line_magic("gpu_cluster", line)
        assert this_kernel().current() is before and before is not None and before.alive, line
        total = shell.ev("frame.v.sum().compute()")
        assert total == expected, line
    shell.run_line_magic("gpu_cluster", "stop")
