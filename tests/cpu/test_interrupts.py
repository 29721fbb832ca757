"""Ctrl-C at any moment of a cluster command, on a real kernel (jupyter_client, ipykernel): the
cell returns within two seconds, nothing is left running once the interrupted command is undone
(no worker process, no listening port, no registry entry or TLS folder), and the next command
works. The interrupt is the kernel manager's own (SIGINT), sent at several moments of each
command, from the import of dask onwards in a fresh kernel."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from support import (
    ANSWERED_WITHIN,
    kernel_value,
    read_iopub,
    spawned_workers,
    wait_gone,
    wait_until,
)
from support import run_cell as run

pytestmark = pytest.mark.timeout(300)

START = "%gpu_cluster start --n-workers 2 --memory-limit 1GB"


def _listening(pid: int) -> set[int]:
    return {
        c.laddr.port
        for c in psutil.Process(pid).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    }


BEGUN = "gpudask-test: the cell has begun"


def _interrupt_after(km: Any, kc: Any, code: str, delay: float) -> tuple[float, dict[str, Any]]:
    """Run ``code``, interrupt the kernel ``delay`` seconds after the cell's own code has begun;
    (seconds from the interrupt to the reply, the reply's content).

    The delay counts from the cell's first line, not from the request: an interrupt that lands
    in ipykernel's own preparation of a request (before any line of the cell runs) is caught by
    ipykernel, which then sends no reply at all, whatever the cell holds (``1 + 1`` too). A line
    magic is preceded by a line that says the cell has begun; a cell magic, which must be the
    first line, is timed from the kernel's ``execute_input`` (its delays leave that preparation
    well behind)."""
    cell_magic = code.startswith("%%")
    msg_id = kc.execute(code if cell_magic else f"print({BEGUN!r}, flush=True)\n{code}")

    def begun(msg: dict[str, Any]) -> bool:
        if msg["parent_header"].get("msg_id") != msg_id:
            return False
        if cell_magic:
            return bool(msg["msg_type"] == "execute_input")
        return msg["msg_type"] == "stream" and BEGUN in msg["content"]["text"]

    read_iopub(kc, begun, 60, "the cell to begin")
    time.sleep(delay)  # the moment of the interrupt, not a wait for anything
    interrupted = time.monotonic()
    km.interrupt_kernel()
    while True:
        reply = kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            took = time.monotonic() - interrupted
            break
    # ipykernel sends an error reply before it starts aborting what is queued behind it
    # (stop_on_error); its "idle" comes after that has begun, so a request sent once idle is
    # not aborted with the queue
    read_iopub(kc, _idle_after(msg_id), 60, "the interrupted cell's idle")
    return took, dict(reply["content"])


def _idle_after(msg_id: str) -> Callable[[dict[str, Any]], bool]:
    def idle(msg: dict[str, Any]) -> bool:
        mine = msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
        return mine and msg["content"]["execution_state"] == "idle"

    return idle


def _nothing_left(km: Any, kc: Any, runtime_dir: Path, ports: set[int]) -> None:
    """After ``stop`` (which waits for an interrupted command to be undone): no worker, no port
    beyond the kernel's own, no registry entry, no TLS folder."""
    kernel = km.provisioner.process.pid
    reply = run(kc, "%gpu_cluster stop")
    assert reply["status"] == "ok", reply["output"]
    assert "CancelledError" not in reply["output"] and "Traceback" not in reply["output"]
    assert wait_gone(spawned_workers(kernel)) == []
    assert _listening(kernel) <= ports
    assert _files_of_a_cluster(runtime_dir) == []


def _files_of_a_cluster(runtime_dir: Path) -> list[str]:
    """Registry entries and TLS folders; not the note of the kernel's last stop, which stays
    while the kernel lives (its next start or its undertaker removes it)."""
    from gpudask_jupyter import registry

    found = runtime_dir.glob(f"{registry.ENTRY_PREFIX}*")
    return sorted(p.name for p in found if not p.name.endswith(registry.STOPPED_SUFFIX))


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.6])  # the imports take about 0.7 s here
def test_ctrl_c_during_a_start_that_waits_for_the_background_imports(
    kernel: Any, runtime_dir: Path, delay: float
) -> None:
    """The kernel idled a second after ``%load_ext``: the imports a first start needs run on a
    thread, and a start that comes then waits for them. Ctrl-C ends that wait at once; the cell
    shows one line that says what happens next, and the next start works."""
    km, kc = kernel
    reply = run(kc, "%load_ext gpudask_jupyter")
    assert reply["status"] == "ok", reply["output"]
    ports = _listening(km.provisioner.process.pid)
    # the kernel idles a second, then imports on a thread, dask first (asked without a cell,
    # which would put the imports off)
    wait_until(
        lambda: kernel_value(kc, "'dask' in __import__('sys').modules") == "True",
        60,
        "the imports made ahead of the first start to begin",
    )
    took, content = _interrupt_after(km, kc, START, delay)
    assert took < ANSWERED_WITHIN, took
    assert content["status"] == "error"
    if content["ename"] == "Interrupted":  # ours; a moment before the magic shows Python's own
        assert content["traceback"] == [
            "KeyboardInterrupt: %gpu_cluster start interrupted: what it had begun is being "
            "finished or undone on its own thread, and the next %gpu_cluster command waits for that"
        ]
    _nothing_left(km, kc, runtime_dir, ports)
    reply = run(kc, f"client = {START}\nprint(len(client.scheduler_info()['workers']))")
    assert reply["status"] == "ok", reply["output"]
    assert reply["output"].strip().endswith("2"), reply["output"]


@pytest.mark.parametrize("delay", [0.0, 0.15, 0.4, 0.8, 1.3, 2.5])
def test_ctrl_c_during_start(kernel: Any, runtime_dir: Path, delay: float) -> None:
    km, kc = kernel
    reply = run(kc, "%load_ext gpudask_jupyter")  # dask is not imported yet: start imports it
    assert reply["status"] == "ok", reply["output"]
    ports = _listening(km.provisioner.process.pid)
    took, _ = _interrupt_after(km, kc, START, delay)
    assert took < ANSWERED_WITHIN, took
    _nothing_left(km, kc, runtime_dir, ports)
    reply = run(kc, f"client = {START}\nprint(len(client.scheduler_info()['workers']))")
    assert reply["status"] == "ok", reply["output"]
    assert reply["output"].split()[-1] == "2"
    _nothing_left(km, kc, runtime_dir, ports)


@pytest.mark.parametrize(
    ("command", "delay"),
    [
        ("%gpu_cluster stop", 0.05),
        ("%gpu_cluster stop", 0.3),
        ("%gpu_cluster scale 1", 0.05),
        ("%gpu_cluster scale 1", 0.3),
        ("%gpu_cluster restart", 0.1),
        ("%gpu_cluster restart", 0.5),
        ("%gpu_cluster start --replace --n-workers 1", 0.3),
        ("%gpu_cluster profile", 0.05),
        ("%gpu_cluster profile --seconds 60", 0.2),
    ],
)
def test_ctrl_c_during_a_command_on_a_running_cluster(
    kernel: Any, runtime_dir: Path, command: str, delay: float
) -> None:
    km, kc = kernel
    reply = run(kc, "%load_ext gpudask_jupyter")
    assert reply["status"] == "ok", reply["output"]
    ports = _listening(km.provisioner.process.pid)
    reply = run(kc, START)
    assert reply["status"] == "ok", reply["output"]
    took, _ = _interrupt_after(km, kc, command, delay)
    assert took < ANSWERED_WITHIN, took
    # the next command works (it waits for the interrupted one to finish first)
    reply = run(kc, "%gpu_cluster status")
    assert reply["status"] == "ok", reply["output"]
    assert "Traceback" not in reply["output"] and "CancelledError" not in reply["output"]
    _nothing_left(km, kc, runtime_dir, ports)
    reply = run(kc, f"client = {START}\nprint(client.submit(sum, [1, 2]).result(timeout=30))")
    assert reply["status"] == "ok", reply["output"]
    assert reply["output"].split()[-1] == "3"
    _nothing_left(km, kc, runtime_dir, ports)


SPREAD = (
    "%%to_gpu --distribute --npartitions 32 -q\n"
    "import numpy as np, pandas as pd\n"
    "frame = pd.DataFrame({'x': np.arange(20_000_000.0), 'y': np.arange(20_000_000)})\n"
)
GATHER = "%%to_cpu --gather -q lazy\npass\n"
LAZY = (
    "import time, dask.dataframe as dd, numpy as np, pandas as pd\n"
    "def slow(part):\n"
    "    time.sleep(0.2)\n"
    "    return part\n"
    "lazy = dd.from_pandas(pd.DataFrame({'x': np.arange(400_000.0)}), npartitions=16)"
    ".map_partitions(slow)\n"
)
HELD = (
    "import gc, time\n"
    "deadline = time.monotonic() + 20\n"
    "while True:\n"
    "    gc.collect()\n"
    "    held = sum(len(k) for k in client.has_what().values())\n"
    "    if held == 0 or time.monotonic() > deadline:\n"
    "        break\n"
    "    time.sleep(0.2)\n"
    "print('HELD', held)\n"
)


@pytest.mark.parametrize(("what", "delay"), [("spread", 0.3), ("spread", 1.0), ("gather", 0.5)])
def test_ctrl_c_during_a_transfer_leaves_no_key_and_no_segment(
    kernel: Any, runtime_dir: Path, what: str, delay: float
) -> None:
    from gpudask_jupyter.convert.distribute import shared_memory

    km, kc = kernel
    reply = run(kc, f"%load_ext gpudask_jupyter\nclient = {START}\n{LAZY}")
    assert reply["status"] == "ok", reply["output"]
    pid = km.provisioner.process.pid
    took, content = _interrupt_after(km, kc, SPREAD if what == "spread" else GATHER, delay)
    assert took < ANSWERED_WITHIN, took
    assert content["status"] == "error"  # interrupted: nothing rebound
    names = "print('KINDS', type(lazy).__module__, type(globals().get('frame')).__module__)"
    reply = run(kc, HELD + names)
    assert reply["status"] == "ok", reply["output"]
    assert "HELD 0" in reply["output"]
    kinds = reply["output"].split("KINDS")[1].split()
    assert kinds[0].startswith("dask") and not kinds[1].startswith("dask")  # nothing rebound
    mine = f"{shared_memory.SEGMENT_PREFIX}{pid}-"
    assert [n for n in shared_memory.ours() if n.startswith(mine)] == []
    reply = run(kc, GATHER)  # the next transfer works
    assert reply["status"] == "ok", reply["output"]
    _nothing_left(km, kc, runtime_dir, set(_listening(pid)))


def _panel_answer(kc: Any, kind: str) -> dict[str, Any]:
    """The next message of ``kind`` a panel sends over its comm."""

    def custom(msg: dict[str, Any]) -> dict[str, Any]:
        data = msg["content"].get("data", {}) if msg["msg_type"] == "comm_msg" else {}
        return dict(data["content"]) if data.get("method") == "custom" else {}

    read = read_iopub(kc, lambda msg: custom(msg).get("type") == kind, 60, f"the panel's {kind}")
    return custom(read[-1])


@pytest.mark.parametrize("delay", [0.2, 0.4])  # a first start here takes 0.6 to 0.8 s
def test_ctrl_c_during_a_start_from_the_panels_button(
    kernel: Any, runtime_dir: Path, delay: float
) -> None:
    """A button runs its magic as a message on the main shell, which Ctrl-C interrupts as it
    does a cell: the view is answered (the start interrupted, in words), nothing is left, and
    the next start works."""
    from test_panel_kernel import _new_panel, _send_custom

    km, kc = kernel
    comm_id = _new_panel(kc)
    ports = _listening(km.provisioner.process.pid)
    _send_custom(kc, comm_id, {"type": "control", "id": 1, "action": "start", "n": 2})
    _panel_answer(kc, "control-started")
    time.sleep(delay)  # the moment of the interrupt, not a wait for anything
    km.interrupt_kernel()
    result = _panel_answer(kc, "control-result")
    assert result["ok"] is False and "interrupted" in result["text"], result
    _nothing_left(km, kc, runtime_dir, ports)
    reply = run(kc, f"client = {START}\nprint(len(client.scheduler_info()['workers']))")
    assert reply["status"] == "ok", reply["output"]
    assert reply["output"].split()[-1] == "2"
    _nothing_left(km, kc, runtime_dir, ports)


def _connections_to(pid: int, port: int) -> list[Any]:
    return [
        c
        for c in psutil.Process(pid).net_connections(kind="inet")
        if c.raddr and c.raddr.port == port
    ]


@pytest.mark.parametrize("command", ["attach", "join"])
def test_ctrl_c_during_an_attach_to_a_silent_port_closes_its_connection(
    kernel: Any, silent_port: int, command: str
) -> None:
    """The port accepts and never answers: Ctrl-C answers at once, and the check left running
    on the command's thread closes its connection then, not at the end of its --timeout."""
    km, kc = kernel
    assert run(kc, "%load_ext gpudask_jupyter")["status"] == "ok"
    pid = km.provisioner.process.pid
    msg_id = kc.execute(
        f"%gpu_cluster {command} tcp://127.0.0.1:{silent_port} --timeout 600"
        + (" --n-workers 1 --memory-limit 1GB" if command == "join" else "")
    )
    # the check is waiting for a greeting
    wait_until(lambda: _connections_to(pid, silent_port), 120, "the kernel to connect")
    km.interrupt_kernel()
    while True:
        reply = kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    assert reply["content"]["status"] == "error"
    wait_until(  # far below the command's own 600 s
        lambda: not _connections_to(pid, silent_port),
        60,
        lambda: f"the check to close its connection: {_connections_to(pid, silent_port)}",
    )
    assert run(kc, "%gpu_cluster status")["status"] == "ok"
