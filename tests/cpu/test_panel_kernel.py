"""The panel widget in a real kernel: the front end's hello gets a snapshot, then increments
arrive over the comm while a cell runs, and closing the panel or %unload_ext stops the thread."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import kernel_value, printed, read_iopub, wait_until
from support import run_cell as run

from gpudask_jupyter.schema.protocol import PANEL_MIME
from gpudask_jupyter.widget import STATIC

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(not STATIC.exists(), reason="front end not built (npm run build)"),
]


def _new_panel(kc: Any, code: str = "panel = gpudask_jupyter.Panel()") -> str:
    """Run ``code``, which makes ``panel``, in the kernel; the panel's comm id."""
    reply = run(kc, f"import gpudask_jupyter\n{code}\nprint('COMM', panel.comm.comm_id)")
    assert reply["status"] == "ok", reply["output"]
    return str(reply["output"].split("COMM ")[1].split()[0])


def _send_custom(kc: Any, comm_id: str, content: dict[str, Any]) -> None:
    msg = kc.session.msg(
        "comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": content}}
    )
    kc.shell_channel.send(msg)


def _custom(msg: dict[str, Any]) -> dict[str, Any]:
    """A panel's custom message (with ``_comm``, the comm it came on); {} for anything else."""
    content = msg["content"]
    if msg["msg_type"] != "comm_msg" or content["data"].get("method") != "custom":
        return {}
    return dict(content["data"]["content"]) | {"_comm": content["comm_id"]}


Frames = list[dict[str, Any]]


def _frames(
    kc: Any, comm_id: str, enough: Callable[[Frames], bool], what: str, timeout: float = 60
) -> Frames:
    """The frames the panel of ``comm_id`` sends, read until ``enough(frames)`` holds; fails,
    saying ``what`` did not come, after ``timeout`` seconds."""
    frames: Frames = []

    def more(msg: dict[str, Any]) -> bool:
        data = _custom(msg)
        if data.get("_comm") != comm_id or data.get("type") != "frame":
            return False
        frames.append(data["frame"])
        return enough(frames)

    read_iopub(kc, more, timeout, lambda: f"{what} (frames: {[f['kind'] for f in frames]})")
    return frames


THREADS = "[t.name for t in __import__('threading').enumerate()].count('gpudask-monitor')"
"""The kernel's sampler threads, asked with :func:`kernel_value`."""


def _no_sampler_left(kc: Any, what: str) -> None:
    """Wait until the kernel runs no sampler: asked without a cell (a cell would keep a
    displayed panel sending)."""
    wait_until(lambda: kernel_value(kc, THREADS) == "0", 60, what)


def test_panel_streams_frames_over_the_comm_and_stops(kernel, tmp_path: Path) -> None:
    _, kc = kernel
    reply = run(
        kc,
        "%load_ext gpudask_jupyter\n"
        "client = %gpu_cluster start --n-workers 1 --memory-limit 1GB\n"
        "import gpudask_jupyter, json\n"
        "panel = gpudask_jupyter.Panel(interval=0.25)\n"
        "print('COMM', panel.comm.comm_id)",
    )
    assert reply["status"] == "ok", reply["output"]
    comm_id = reply["output"].split("COMM ")[1].split()[0]
    _send_custom(kc, comm_id, {"type": "hello"})
    frames = _frames(kc, comm_id, lambda f: len(f) >= 5, "a snapshot and four increments")
    assert frames[0]["kind"] == "snapshot"
    assert all(f["kind"] == "delta" for f in frames[1:])
    assert frames[-1]["cluster"]["state"] == "running"

    # a long cell: frames keep coming while the main thread is busy, tasks show up. The cell
    # keeps the main thread busy until the test has seen frames come meanwhile (a minute at most)
    seen = tmp_path / "seen"
    msg_id = kc.execute(
        "import pathlib, time\n"
        "futures = client.map(lambda x: (time.sleep(0.2), x)[1], range(10))\n"
        f"seen, busy = pathlib.Path({str(seen)!r}), time.time() + 60\n"
        "i = 0\n"
        "while time.time() < busy:\n"
        "    i += 1\n"
        "    if i % 100_000 == 0 and seen.exists():\n"
        "        break\n"
        "client.gather(futures)"
    )
    frames, running = [], []

    def follow(msg: dict[str, Any]) -> None:
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status":
            running.append(msg["content"]["execution_state"] == "busy")
        data = _custom(msg)
        if data.get("_comm") == comm_id and data.get("type") == "frame":
            frames.append(data["frame"] | {"_while_busy": running == [True]})

    def busy_frames() -> int:
        return sum(f["_while_busy"] for f in frames)

    read_iopub(
        kc,
        lambda msg: follow(msg) or busy_frames() >= 4,
        60,
        lambda: f"frames while the cell ran (the panel stalled: {busy_frames()} came)",
    )
    seen.touch()

    def computed() -> set[str]:
        return {t["key"] for f in frames for t in f["tasks"] if t["action"] == "compute"}

    read_iopub(
        kc,
        lambda msg: follow(msg) or (running == [True, False] and len(computed()) == 10),
        60,
        lambda: f"the cell's end and its ten tasks in the frames ({len(computed())} came)",
    )
    json.dumps(frames[-1])
    while kc.get_shell_msg(timeout=30)["parent_header"].get("msg_id") != msg_id:
        pass

    reply = run(
        kc,
        "import threading\n"
        "panel.close()\n"
        "print('THREADS', [t.name for t in threading.enumerate() if t.name == 'gpudask-monitor'])",
    )
    assert "THREADS []" in reply["output"], reply["output"]


def test_unload_stops_panels_and_sampler(kernel) -> None:
    _, kc = kernel
    reply = run(
        kc,
        "%load_ext gpudask_jupyter\n"
        "import gpudask_jupyter, threading\n"
        "panels = [gpudask_jupyter.Panel(interval=0.25), gpudask_jupyter.Panel(interval=1)]\n"
        "count = lambda: [t.name for t in threading.enumerate()].count('gpudask-monitor')\n"
        "print('BEFORE', count(), 'COMMS', *[p.comm.comm_id for p in panels])",
    )
    assert "BEFORE 0" in reply["output"], reply["output"]  # no view yet: nothing samples
    for comm_id in reply["output"].split("COMMS ")[1].split():
        _send_custom(kc, comm_id, {"type": "hello"})
    reply = run(
        kc,
        "shared = count()\n"
        "%unload_ext gpudask_jupyter\n"
        "print('SHARED', shared, 'AFTER', count(), 'CLOSED', [p.comm is None for p in panels])",
    )
    assert reply["status"] == "ok", reply["output"]
    assert "SHARED 1 AFTER 0 CLOSED [True, True]" in reply["output"], reply["output"]


def test_rerunning_a_panel_cell_keeps_the_frame_rate_of_one_panel(kernel) -> None:
    _, kc = kernel
    reply = run(kc, "%load_ext gpudask_jupyter\nimport gpudask_jupyter")
    assert reply["status"] == "ok", reply["output"]
    previous = None
    for _ in range(10):  # what JupyterLab does: the old output's view goes, a new one comes
        reply = run(
            kc, "panel = gpudask_jupyter.Panel(interval=0.25)\nprint('COMM', panel.comm.comm_id)"
        )
        comm_id = reply["output"].split("COMM ")[1].split()[0]
        if previous is not None:
            _send_custom(kc, previous, {"type": "bye"})
        _send_custom(kc, comm_id, {"type": "hello"})
        previous = comm_id
    # the kernel hears the last bye before the last hello: once that hello's snapshot has come,
    # no panel said bye to sends another frame
    frames: Frames = []

    def frame(msg: dict[str, Any]) -> dict[str, Any]:
        data = _custom(msg)
        if data.get("type") == "frame":
            frames.append(data["frame"] | {"_comm": data["_comm"]})
            return frames[-1]
        return {}

    def last_snapshot(msg: dict[str, Any]) -> bool:
        data = frame(msg)
        return data.get("_comm") == previous and data["kind"] == "snapshot"

    read_iopub(kc, last_snapshot, 60, "the last panel's snapshot")
    frames.clear()
    read_iopub(kc, lambda msg: bool(frame(msg)) and len(frames) >= 12, 60, "twelve frames")
    times = [f["time"] for f in frames]  # the kernel's clock, when it made each frame
    rate = (len(frames) - 1) / (times[-1] - times[0])
    print(
        f"after re-running the panel cell 10 times: {rate:.2f} frames/s over "
        f"{len({f['_comm'] for f in frames})} comm(s)"
    )
    assert {f["_comm"] for f in frames} == {previous}
    # one panel at 0.25 s: the kernel samples at its interval and sends one frame a sample,
    # counted on the kernel's clock (which a loaded machine only spaces further)
    assert {f["interval"] for f in frames} == {0.25}
    assert rate <= 5.0, rate
    _send_custom(kc, previous, {"type": "bye"})
    _no_sampler_left(kc, "the sampler to stop: no view is left")


def _control(kc: Any, comm_id: str, ident: str, action: str, **extra: Any) -> dict[str, Any]:
    _send_custom(kc, comm_id, {"type": "control", "id": ident, "action": action, **extra})
    seen: list[dict[str, Any]] = []

    def answer(msg: dict[str, Any]) -> bool:
        data = _custom(msg)
        if data.get("id") == ident and data["type"] in {"control-started", "control-result"}:
            seen.append(data)
        return any(m["type"] == "control-result" for m in seen)

    read_iopub(kc, answer, 120, lambda: f"the result of {action} (seen: {seen})")
    assert [m["type"] for m in seen] == ["control-started", "control-result"]
    return seen[-1]


def test_the_panels_buttons_run_in_the_kernel_and_answer_in_words(kernel) -> None:
    _, kc = kernel
    comm_id = _new_panel(kc)
    started = _control(kc, comm_id, "1", "start", n=1)
    assert started["ok"] is True, started
    assert started["text"].startswith("Started a CPU cluster: 1 worker, scheduler ")
    assert "|" not in started["text"] and "+--" not in started["text"]  # no table
    assert started["cluster"]["state"] == "running" and started["cluster"]["workers"] == 1
    assert started["cluster"]["mode"] == "cpu"
    again = _control(kc, comm_id, "2", "start")
    # a second Start (a double click) finds the cluster it asked for: no failure, the same cluster
    assert again["ok"] is True and "already running" in again["text"], again
    assert again["text"].endswith("nothing to start.") and again["cluster"] == started["cluster"]
    scaled = _control(kc, comm_id, "3", "scale", n=2)
    assert scaled["ok"] is True and scaled["cluster"]["workers"] == 2, scaled
    refused = _control(kc, comm_id, "4", "detach")
    assert refused["ok"] is False and "stop shuts it down" in refused["text"]
    wrong = _control(kc, comm_id, "5", "scale")
    assert wrong["ok"] is False and wrong["text"] == "scale: say how many workers."
    stopped = _control(kc, comm_id, "6", "stop")
    assert stopped == stopped | {"ok": True, "action": "stop", "cluster": None}
    assert stopped["text"] == "Cluster stopped; its workers are gone."
    reply = run(kc, "import gpudask_jupyter.widget.sidebar_actions as c\nc.run_json('restart')")
    line = [x for x in reply["output"].splitlines() if x.startswith("GPUDASK_CONTROL_RESULT ")]
    result = json.loads(line[0].split(" ", 1)[1])
    assert result["ok"] is False and "has no cluster" in result["text"], result


def test_the_widgets_text_is_a_snapshot_an_executed_notebook_keeps(kernel) -> None:
    _, kc = kernel
    msg_id = kc.execute(
        "%load_ext gpudask_jupyter\n"
        "client = %gpu_cluster start --n-workers 1 --memory-limit 1GB\n"
        "import gpudask_jupyter, threading\n"
        "gpudask_jupyter.Panel()"
    )
    (*_, result) = read_iopub(
        kc,
        lambda msg: (
            msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_result"
        ),
        120,
        "the panel's output",
    )
    data = result["content"]["data"]
    text = data["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data[PANEL_MIME] == {}  # the marker a saved output keeps
    assert text.startswith("GPU Dask panel: cluster running, cpu, scheduler "), text
    assert "Workers (1):" in text and "running 0, ready 0, results held 0" in text
    # no front end said hello: once the cells have run (and IDLE_GRACE after), nothing samples
    _no_sampler_left(kc, "the sampler to stop once the cells have run")


def test_a_displayed_panel_draws_the_work_of_the_cells_queued_after_it(
    kernel, tmp_path: Path
) -> None:
    """Run All: the cells after the panel's are queued before its view's hello, which the
    kernel reads only once idle. The displayed panel sends frames at once, so the view sees the
    cluster and the tasks of those cells while they run; then the hello brings a snapshot."""
    _, kc = kernel
    first = kc.execute(
        "%load_ext gpudask_jupyter\n"
        "client = %gpu_cluster start --n-workers 1 --memory-limit 1GB\n"
        "import gpudask_jupyter\n"
        "from IPython.display import display\n"
        "panel = gpudask_jupyter.Panel(interval=0.25)\n"
        "display(panel)\n"
        "print('COMM', panel.comm.comm_id)"
    )
    # queued right behind it, as Run All queues the next cells: busy until the test has seen
    # what it looks for (a minute at most)
    seen = tmp_path / "seen"
    kc.execute(
        "import pathlib, time\n"
        "def work(i):\n"
        "    time.sleep(0.05)\n"
        "    return i\n"
        f"seen, end = pathlib.Path({str(seen)!r}), time.monotonic() + 60\n"
        "while not seen.exists() and time.monotonic() < end:\n"
        "    client.gather(client.map(work, range(20), pure=False))\n"
    )
    (*_, said) = read_iopub(kc, printed(first, "COMM "), 120, "the panel's comm id")
    comm_id = said["content"]["text"].split("COMM ")[1].split()[0]
    # no hello sent: the kernel is busy
    frames = _frames(
        kc,
        comm_id,
        lambda f: len(f) >= 8 and any(t["prefix"] == "work" for x in f for t in x["tasks"]),
        "frames with the queued cell's tasks while it ran",
    )
    seen.touch()
    assert frames[-1]["cluster"]["state"] == "running"


@pytest.mark.parametrize("routed", [True, False], ids=["routed", "without-routing"])
def test_a_button_sent_over_a_subshell_runs_after_the_cell_and_takes_none_of_its_output(
    kernel, routed: bool
) -> None:
    """JupyterLab 4.6 sends a widget's messages by a kernel subshell, whose thread handles them
    while a cell runs. A button runs the magic a cell may be running too, capturing what it
    prints: it must wait for the cell, and every line the cell prints must reach the cell. The
    panel routes it to the main shell; a kernel that cannot route hands it to the subshell's
    thread, and the panel moves it to the main thread."""
    _, kc = kernel
    code = "panel = gpudask_jupyter.Panel()"
    if not routed:  # as a kernel without ipykernel 7.4's routing: the subshell's thread has it
        code += "\npanel.comm._reply_subshell_for = lambda data, sent_to: sent_to"
    comm_id = _new_panel(kc, code)
    subshell = _subshell(kc, "create_subshell_request")["subshell_id"]

    cell = kc.execute("import time\nfor i in range(30):\n    print('tick', i)\n    time.sleep(0.1)")
    msg = kc.session.msg(
        "comm_msg",
        {
            "comm_id": comm_id,
            "data": {
                "method": "custom",
                "content": {"type": "control", "id": 7, "action": "scale", "n": 2},
            },
        },
    )
    msg["header"]["subshell_id"] = subshell
    said: list[str] = []
    order: list[str] = []
    result: dict[str, Any] = {}

    def follow(got: dict[str, Any]) -> bool:
        content = got["content"]
        parent = got["parent_header"].get("msg_id")
        if parent == cell:
            if got["msg_type"] == "stream":
                said.append(content["text"])
            elif got["msg_type"] == "status" and content["execution_state"] == "idle":
                order.append("cell done")
        elif parent == msg["header"]["msg_id"] and got["msg_type"] == "status":
            if content["execution_state"] == "busy":
                order.append("busy with the button")
        elif got["msg_type"] == "comm_msg" and content.get("comm_id") == comm_id:
            data = content["data"].get("content", {})
            if data.get("id") == 7:
                order.append(data["type"])
                result.update(data)
        return "control-result" in order

    read_iopub(kc, lambda got: follow(got) or bool(said), 60, "the cell to print")
    kc.shell_channel.send(msg)  # while the cell prints
    read_iopub(kc, follow, 60, lambda: f"the button's result (seen: {order})")
    out = "".join(said)
    assert out.split() == [w for i in range(30) for w in ("tick", str(i))], out
    # the main shell takes the button after the cell; a subshell at once, and hands it over
    taken = ["cell done", "busy with the button"]
    assert order == [*(taken if routed else taken[::-1]), "control-started", "control-result"]
    assert result["ok"] is False and "has no cluster" in result["text"], result


def _subshell(kc: Any, request: str, **content: Any) -> dict[str, Any]:
    kc.control_channel.send(kc.session.msg(request, content))
    reply = kc.control_channel.get_msg(timeout=30)["content"]
    assert reply.get("status") == "ok", reply
    return dict(reply)


def _hello_by(kc: Any, comm_id: str, view: str, subshell: str | None) -> None:
    msg = kc.session.msg(
        "comm_msg",
        {
            "comm_id": comm_id,
            "data": {"method": "custom", "content": {"type": "hello", "view": view}},
        },
    )
    if subshell is not None:
        msg["header"]["subshell_id"] = subshell
    kc.shell_channel.send(msg)


def _snapshot_and_four_more(frames: Frames) -> bool:
    """The hello's snapshot and four ticks after it (a second snapshot for one hello would be
    among them), or twelve ticks without one."""
    kinds = [f["kind"] for f in frames]
    if "snapshot" in kinds:
        return len(kinds) - kinds.index("snapshot") > 4
    return len(kinds) >= 12


def test_a_reloaded_pages_hello_is_heard_after_the_old_pages_subshell_is_gone(kernel) -> None:
    """A page's view says hello by the page's subshell; the page is reloaded and its subshell
    deleted; the new page's view says hello by another: it gets its snapshot (ipykernel would
    route it to the deleted subshell, where the comm last answered, and drop it)."""
    _, kc = kernel
    comm_id = _new_panel(kc, "panel = gpudask_jupyter.Panel(interval=0.25)")
    old = _subshell(kc, "create_subshell_request")["subshell_id"]
    _hello_by(kc, comm_id, "old page", old)
    frames = _frames(kc, comm_id, lambda f: len(f) >= 1, "the old page's snapshot")
    assert frames[0]["kind"] == "snapshot"
    _subshell(kc, "delete_subshell_request", subshell_id=old)
    for sent_to in (_subshell(kc, "create_subshell_request")["subshell_id"], None):
        _hello_by(kc, comm_id, f"new page by {sent_to}", sent_to)
        frames = _frames(kc, comm_id, _snapshot_and_four_more, "frames after the hello")
        assert [f["kind"] for f in frames].count("snapshot") == 1, [f["kind"] for f in frames]
