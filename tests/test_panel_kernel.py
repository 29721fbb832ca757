"""The panel widget in a real kernel: the front end's hello gets a snapshot, then increments
arrive over the comm while a cell runs, and closing the panel or %unload_ext stops the thread."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from test_kernel_lifecycle import run

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


def _frames(kc: Any, comm_id: str, until: float) -> list[dict[str, Any]]:
    frames = []
    while time.monotonic() < until:
        try:
            msg = kc.get_iopub_msg(timeout=max(0.05, until - time.monotonic()))
        except Exception:
            break
        content = msg["content"]
        if msg["msg_type"] == "comm_msg" and content.get("comm_id") == comm_id:
            data = content["data"]
            if data.get("method") == "custom" and data["content"].get("type") == "frame":
                frames.append(data["content"]["frame"] | {"_received": time.monotonic()})
    return frames


def test_panel_streams_frames_over_the_comm_and_stops(kernel) -> None:
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
    frames = _frames(kc, comm_id, time.monotonic() + 3)
    assert frames and frames[0]["kind"] == "snapshot"
    assert all(f["kind"] == "delta" for f in frames[1:])
    assert frames[-1]["cluster"]["state"] == "running"

    # a long cell: frames keep coming while the main thread is busy, tasks show up
    started = time.monotonic()
    msg_id = kc.execute(
        "import time\n"
        "futures = client.map(lambda x: (time.sleep(0.2), x)[1], range(10))\n"
        "busy = time.time() + 3\n"
        "while time.time() < busy: pass\n"
        "client.gather(futures)"
    )
    frames = _frames(kc, comm_id, time.monotonic() + 4)
    during = [f for f in frames if f["_received"] - started < 3]
    assert len(during) >= 4, "the panel stalled while the cell ran"
    tasks = [t for f in frames for t in f["tasks"]]
    assert len({t["key"] for t in tasks if t["action"] == "compute"}) == 10
    json.dumps(frames[-1] | {"_received": 0})
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


def _messages(kc: Any, until: float, kinds: set[str]) -> list[dict[str, Any]]:
    """The panels' custom messages of ``kinds`` until ``until``, with the comm they came on."""
    found = []
    while time.monotonic() < until:
        try:
            msg = kc.get_iopub_msg(timeout=max(0.05, until - time.monotonic()))
        except Exception:
            break
        content = msg["content"]
        if msg["msg_type"] != "comm_msg" or content["data"].get("method") != "custom":
            continue
        data = content["data"]["content"]
        if data.get("type") in kinds:
            found.append(data | {"_comm": content["comm_id"], "_at": time.monotonic()})
    return found


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
    _messages(kc, time.monotonic() + 1.0, {"frame"})  # settle
    window = 4.0
    frames = _messages(kc, time.monotonic() + window, {"frame"})
    rate = len(frames) / window
    print(
        f"after re-running the panel cell 10 times: {rate:.2f} frames/s over "
        f"{len({f['_comm'] for f in frames})} comm(s)"
    )
    assert {f["_comm"] for f in frames} == {previous}
    assert 2.0 <= rate <= 5.0, rate  # one panel at 0.25 s
    _send_custom(kc, previous, {"type": "bye"})
    reply = run(
        kc,
        "import threading, time\n"
        "time.sleep(0.5)\n"
        "print('THREADS', [t.name for t in threading.enumerate()].count('gpudask-monitor'))",
    )
    assert "THREADS 0" in reply["output"], reply["output"]  # no view left: no sampler


def _control(kc: Any, comm_id: str, ident: str, action: str, **extra: Any) -> dict[str, Any]:
    _send_custom(kc, comm_id, {"type": "control", "id": ident, "action": action, **extra})
    deadline = time.monotonic() + 120
    seen: list[dict[str, Any]] = []
    while not any(m["type"] == "control-result" for m in seen):
        assert time.monotonic() < deadline, seen
        seen += [
            m
            for m in _messages(kc, time.monotonic() + 1, {"control-started", "control-result"})
            if m.get("id") == ident
        ]
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
    reply = run(kc, "import gpudask_jupyter.magics.controls as c\nc.run_json('restart')")
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
    text = None
    while text is None:
        msg = kc.get_iopub_msg(timeout=120)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_result":
            text = msg["content"]["data"]["text/plain"]
            assert "application/vnd.jupyter.widget-view+json" in msg["content"]["data"]
            assert msg["content"]["data"][PANEL_MIME] == {}  # the marker a saved output keeps
    assert text.startswith("GPU Dask panel: cluster running, cpu, scheduler "), text
    assert "Workers (1):" in text and "running 0, ready 0, results held 0" in text
    # no front end said hello: once the cells have run, nothing keeps sampling
    time.sleep(5)  # IDLE_GRACE and a tick
    reply = run(
        kc, "print('THREADS', [t.name for t in threading.enumerate()].count('gpudask-monitor'))"
    )
    assert "THREADS 0" in reply["output"]


def test_a_displayed_panel_draws_the_work_of_the_cells_queued_after_it(kernel) -> None:
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
    # queued right behind it, as Run All queues the next cells: busy for several seconds
    kc.execute(
        "import time\n"
        "def work(i):\n"
        "    time.sleep(0.05)\n"
        "    return i\n"
        "end = time.monotonic() + 6\n"
        "while time.monotonic() < end:\n"
        "    client.gather(client.map(work, range(20), pure=False))\n"
    )
    comm_id = None
    deadline = time.monotonic() + 120
    while comm_id is None:
        assert time.monotonic() < deadline
        msg = kc.get_iopub_msg(timeout=60)
        text = msg["content"].get("text", "") if msg["msg_type"] == "stream" else ""
        if msg["parent_header"].get("msg_id") == first and "COMM " in text:
            comm_id = text.split("COMM ")[1].split()[0]
    frames = _frames(kc, comm_id, time.monotonic() + 4)  # no hello sent: the kernel is busy
    assert len(frames) >= 8, "no frames while the queued cell ran"  # 0.25 s apart
    assert frames[-1]["cluster"]["state"] == "running"
    assert any(t["prefix"] == "work" for f in frames for t in f["tasks"])


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
    time.sleep(1.0)  # the cell is printing
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
    kc.shell_channel.send(msg)

    printed, order = "", []
    deadline = time.monotonic() + 60
    while "control-result" not in order:
        assert time.monotonic() < deadline, order
        got = kc.get_iopub_msg(timeout=60)
        content = got["content"]
        parent = got["parent_header"].get("msg_id")
        if parent == cell:
            if got["msg_type"] == "stream":
                printed += content["text"]
            elif got["msg_type"] == "status" and content["execution_state"] == "idle":
                order.append("cell done")
        elif parent == msg["header"]["msg_id"] and got["msg_type"] == "status":
            if content["execution_state"] == "busy":
                order.append("busy with the button")
        elif got["msg_type"] == "comm_msg" and content.get("comm_id") == comm_id:
            data = content["data"].get("content", {})
            if data.get("id") == 7:
                order.append(data["type"])
                result = data
    assert printed.split() == [w for i in range(30) for w in ("tick", str(i))], printed
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


def test_a_reloaded_pages_hello_is_heard_after_the_old_pages_subshell_is_gone(kernel) -> None:
    """A page's view says hello by the page's subshell; the page is reloaded and its subshell
    deleted; the new page's view says hello by another: it gets its snapshot (ipykernel would
    route it to the deleted subshell, where the comm last answered, and drop it)."""
    _, kc = kernel
    comm_id = _new_panel(kc, "panel = gpudask_jupyter.Panel(interval=0.25)")
    old = _subshell(kc, "create_subshell_request")["subshell_id"]
    _hello_by(kc, comm_id, "old page", old)
    frames = _frames(kc, comm_id, time.monotonic() + 2)
    assert frames and frames[0]["kind"] == "snapshot"
    _subshell(kc, "delete_subshell_request", subshell_id=old)
    for sent_to in (_subshell(kc, "create_subshell_request")["subshell_id"], None):
        _hello_by(kc, comm_id, f"new page by {sent_to}", sent_to)
        frames = _frames(kc, comm_id, time.monotonic() + 2)
        assert [f["kind"] for f in frames].count("snapshot") == 1, [f["kind"] for f in frames]
