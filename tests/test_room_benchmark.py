"""The room's load test runs in CI on the CPU: six real student kernels pressing Run at once,
CPU clusters, the room's GPUs given through its test seam. All finish, spread evenly over the
two GPUs, and leave nothing behind; the benchmark's exit status says the same."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).parents[1] / "benchmarks" / "room.py"


@pytest.mark.timeout(600)
def test_six_students_on_two_seam_gpus_all_finish_evenly_and_leave_nothing() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--students", "6", "--cpu", "--seam", "2:16GiB"],
        capture_output=True,
        text=True,
        timeout=580,
    )
    table = dict(
        (cells[0], cells[1])
        for line in done.stdout.splitlines()
        if line.startswith("| ")
        and len(cells := [c.strip() for c in line.strip("|").split("|")]) == 2
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert table["finished"] == "6", table
    assert table["failed otherwise"] == "0", table
    assert table["holders per GPU at most"] == "[3, 3] (max − min 0)", table
    for what in ("processes", "leases", "registry files", "shared memory"):
        assert table[f"left: {what}"] == "0", table
    assert re.fullmatch(r"\d+\.\d\d s \(\d+\.\d\d× alone\)", table["first result, p95"]), table
