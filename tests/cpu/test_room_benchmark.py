"""The room's load test runs in CI on the CPU: six real student kernels pressing Run at once,
CPU clusters, the room's GPUs given through its test seam, no ``room-students`` (as an
instructor who set nothing leaves it), one other account made before and six more while the
kernels start (as a hub makes its students' accounts; where the tests run as root). In two rooms
one after the other, all finish, spread evenly over the two GPUs, and leave nothing behind; the
benchmark's exit status says the same."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "room.py"


@pytest.mark.timeout(900)
def test_six_students_with_no_plan_all_finish_evenly_and_leave_nothing() -> None:
    accounts = ["--other-accounts", "1", "--accounts-arriving", "6"] if os.getuid() == 0 else []
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--students", "6", "--cpu", "--seam", "2:16GiB",
         "--runs", "2", *accounts],
        capture_output=True,
        text=True,
        timeout=880,
    )  # fmt: skip
    table = dict(
        (cells[0], cells[1])
        for line in done.stdout.splitlines()
        if line.startswith("| ")
        and len(cells := [c.strip() for c in line.strip("|").split("|")]) == 2
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    title = next(iter(table.values()))
    assert "room-students unset" in title and "2 run(s)" in title, title
    assert table["finished"] == "6", table
    assert table["failed otherwise"] == "0", table
    assert table["holders per GPU, max − min"] == "0", table
    for what in ("processes", "leases", "registry files", "shared memory"):
        assert table[f"left: {what}"] == "0", table
    figure = r"\d+\.\d\d( \(\d+\.\d\d–\d+\.\d\d\))?"
    assert re.fullmatch(figure, table["first result, p95 (× alone)"]), table
    listed = subprocess.run(["getent", "passwd"], capture_output=True, text=True).stdout
    assert "gpudask-bench" not in listed  # the accounts it made are gone
