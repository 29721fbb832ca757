"""GPU time on a real GPU: each source (NVML's per-process samples; CUPTI where cupti-python is
installed) attributes kernels of set durations and copies of set sizes to their prefixes, and
the kernel's own GPU work to its cell, within the issue's bounds (10% with CUPTI, 25% from NVML
for tasks of a second or more)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(300)]

#: the benchmark's work of known GPU time and bytes: a kernel spinning on the GPU's timer for a
#: set time, copies of set sizes. Imported by its name from the checkout, which the workers have
#: on their module path too: distributed sends a task's function by reference wherever plain
#: pickle can, whatever cloudpickle is told, and a worker that cannot import a task's module
#: leaves the cluster (the cell then waits for a worker forever).
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
known_work = importlib.import_module("benchmarks.gpu_time")
spin, copy = known_work.spin, known_work.copy


@pytest.mark.parametrize("source", ["nvml", "cupti"])
def test_each_source_attributes_known_work_to_its_prefix_and_cell(shell: Any, source: str) -> None:
    if source == "cupti":
        pytest.importorskip("cupti")
    shell.run_line_magic("config", f"GpuDaskMagics.gpu_time = '{source}'")
    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'false'")
    client = shell.run_line_magic("gpu_cluster", "start --n-workers 1")
    shell.user_ns.update(client=client, spin=spin, copy=copy)
    assert shell.run_cell("import cupy; spin(0.01, 0)", store_history=True).success
    cell = (
        "futures = [client.submit(spin, 1.0, i, key=f'spin-{i}') for i in range(3)]\n"
        "futures += [client.submit(copy, 256 << 20, i, key=f'copy-{i}') for i in range(2)]\n"
        "client.gather(futures)\n"
        "spin(0.5, 0)\n"
    )
    assert shell.run_cell(cell, store_history=True).success
    frame = shell.run_line_magic("gpu_cluster", "profile").set_index("prefix")
    print(frame.to_string())
    tolerance = 0.1 if source == "cupti" else 0.25
    assert frame.loc["spin", "tasks"] == 3
    assert frame.loc["spin", "GPU s"] == pytest.approx(3.0, rel=tolerance), frame
    assert frame.loc["kernel", "GPU s"] == pytest.approx(0.5, rel=tolerance), frame
    if source == "cupti":
        assert frame.loc["copy", "to GPU MiB"] == pytest.approx(512, rel=0.01), frame
        assert frame.loc["copy", "from GPU MiB"] == pytest.approx(512, rel=0.01), frame
    shell.run_line_magic("gpu_cluster", "stop")
