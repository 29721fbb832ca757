"""The room under Ctrl-C, SIGTERM and SIGKILL, on real kernels (jupyter_client) of a shared
machine (the room's test seam for its GPUs, CPU clusters), planned or with elastic shares: at
several moments of a placed start, no lease is left counting for a kernel whose start was undone
or that is gone, and the next start is placed as if it had never been."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from support import ANSWERED_WITHIN, wait_until
from support import run_cell as run
from test_interrupts import _interrupt_after
from test_room_kernel import START

from gpudask_jupyter.cluster.room import leases
from gpudask_jupyter.cluster.room.leases import RoomDir

pytestmark = pytest.mark.timeout(300)

PLACED = "%gpu_cluster start --n-workers 1 --memory-limit 1GB"


@pytest.fixture(autouse=True, params=["planned", "elastic"])
def plan(request: pytest.FixtureRequest, room_env: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each fault twice: in a room the instructor planned (room_env's room-students), and in one
    nobody configured, where shares follow the holders present."""
    if request.param == "elastic":
        monkeypatch.setenv("DASK_GPUDASK__ROOM_STUDENTS", "0")
    return str(request.param)


def _counting(room: Path) -> list[leases.Lease]:
    return RoomDir(room).leases() if room.exists() else []


@pytest.mark.parametrize("delay", [0.0, 0.3, 0.8, 1.5, 3.0])
def test_ctrl_c_during_a_placed_start_leaves_no_lease(
    kernels: Any, room_env: Path, delay: float
) -> None:
    km, kc = kernels()
    assert run(kc, "%load_ext gpudask_jupyter")["status"] == "ok"
    took, _ = _interrupt_after(km, kc, PLACED, delay)
    assert took < ANSWERED_WITHIN, took
    stopped = run(kc, "%gpu_cluster stop")  # waits for the interrupted start to be undone
    assert "Traceback" not in stopped["output"], stopped["output"]
    assert _counting(room_env) == []
    again = run(kc, f"client = {PLACED}")
    assert "room: GPU 0 had nobody else" in again["output"], again["output"]
    assert len(_counting(room_env)) == 1


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
@pytest.mark.parametrize("delay", [0.3, 1.5, 3.0])
def test_a_kernel_ended_during_or_after_a_placed_start_holds_no_share(
    kernels: Any, room_env: Path, delay: float, how: signal.Signals
) -> None:
    km, kc = kernels()
    assert run(kc, "%load_ext gpudask_jupyter")["status"] == "ok"
    kc.execute(PLACED)
    time.sleep(delay)  # the moment of the fault, not a wait for anything
    os.kill(km.provisioner.process.pid, how)
    wait_until(lambda: not km.is_alive(), 30, f"the kernel to end of {how.name}")
    assert _counting(room_env) == []  # a gone kernel's lease never counts
    _, other = kernels()
    out = run(other, START)["output"]
    assert "room: GPU 0 had nobody else" in out, out
    assert [lease.pid for lease in _counting(room_env)] != []
    files = sorted(room_env.glob(f"*/*{leases.SUFFIX}"))
    assert len(files) == 1, files  # what the ended kernel left was reclaimed by this start
