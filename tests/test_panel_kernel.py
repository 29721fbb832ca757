"""The panel widget in a real kernel: the front end's hello gets a snapshot, then increments
arrive over the comm while a cell runs, and closing the panel or %unload_ext stops the thread."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from test_kernel_lifecycle import kernel, run  # noqa: F401  (the fixture)

from gpudask_jupyter.widget import STATIC

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(not STATIC.exists(), reason="front end not built (npm run build)"),
]


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


def test_panel_streams_frames_over_the_comm_and_stops(kernel) -> None:  # noqa: F811
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


def test_unload_stops_panels_and_sampler(kernel) -> None:  # noqa: F811
    _, kc = kernel
    reply = run(
        kc,
        "%load_ext gpudask_jupyter\n"
        "import gpudask_jupyter, threading\n"
        "panels = [gpudask_jupyter.Panel(interval=0.25), gpudask_jupyter.Panel(interval=1)]\n"
        "count = lambda: [t.name for t in threading.enumerate()].count('gpudask-monitor')\n"
        "shared = count()\n"
        "%unload_ext gpudask_jupyter\n"
        "print('SHARED', shared, 'AFTER', count(), 'CLOSED', [p.comm is None for p in panels])",
    )
    assert reply["status"] == "ok", reply["output"]
    assert "SHARED 1 AFTER 0 CLOSED [True, True]" in reply["output"], reply["output"]
