"""The transfer benchmark's host figures run where there is no GPU (``--host-only``): every row
of the host's table has a rate for each thread count, so the benchmark cannot rot unnoticed
between the runs on a GPU machine."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "transfer.py"
RATE = r"\d+(\.\d+)? \(\d+(\.\d+)?–\d+(\.\d+)?\)"


def test_host_figures_without_a_gpu() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--host-only", "--gib", "0.02", "--repeat", "2"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| | 1 thread"))
    columns = lines[header].count("thread")
    rows = [line for line in lines[header + 2 :] if line.startswith("| ")]
    labels = [row.split(" | ")[0][2:] for row in rows]
    assert labels[0] == "memcpy, memory already faulted in", labels
    assert "memcpy into fresh memory, 4 KiB pages, the pipeline's pieces" in labels, labels
    for row in rows:
        cells = [c.strip() for c in row.strip("| ").split(" | ")[1:]]
        assert len(cells) == columns, row
        for cell in cells:
            assert re.fullmatch(RATE, cell), row
            assert float(cell.split()[0]) > 0, row
