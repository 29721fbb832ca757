"""Without a widget front end (terminal IPython, a script) the panel is a text snapshot, printed
once, and nothing is left sampling; the same text is what the widget's text/plain says."""

from __future__ import annotations

import threading
import time

import pytest
from support import this_view

from gpudask_jupyter.schema.frame import VERSION, Frame
from gpudask_jupyter.widget import KEY, show_panel, widget_front_end
from gpudask_jupyter.widget.snapshot import frame_text

pytestmark = pytest.mark.timeout(180)


def _samplers() -> int:
    return [t.name for t in threading.enumerate()].count("gpudask-monitor")


def test_a_terminal_shell_has_no_widget_front_end(shell) -> None:
    assert not widget_front_end()


def test_the_panel_magic_prints_a_snapshot_and_starts_nothing(shell, capsys) -> None:
    shell.run_line_magic("gpu_cluster", "panel")
    out = capsys.readouterr().out
    assert out.startswith("GPU Dask panel: no cluster in this kernel (start one with")
    assert "GPUs:" in out and "<gpudask_jupyter" not in out
    client = shell.run_line_magic("gpu_cluster", "start --n-workers 2 --memory-limit 1GB")
    shell.user_ns["client"] = client
    capsys.readouterr()
    shell.run_cell("held = client.map(lambda x: x + 1, range(6))\nclient.gather(held);")
    deadline = time.monotonic() + 20
    while True:  # the counts come with the workers' next heartbeats
        assert show_panel(text=True) is None
        out = capsys.readouterr().out
        held = [
            int(x.split("results held ")[1].split(";")[0])
            for x in out.splitlines()
            if "results held" in x
        ]
        if sum(held) == 6 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert sum(held) == 6, out
    assert out.startswith("GPU Dask panel: cluster running, cpu, scheduler tls://127.0.0.1:")
    assert "Workers (2):" in out
    assert "Progress by task prefix:\n  lambda: 6 / 6 done" in out
    assert _samplers() == 0
    shell.run_line_magic("gpu_cluster", "stop")


def _frame(**changes: object) -> Frame:
    frame = Frame(
        version=VERSION,
        kind="snapshot",
        time=0.0,
        interval=1.0,
        history=300.0,
        nvml={"available": True, "reason": "", "driver": "580"},
        devices=[
            {
                "id": "GPU-1",
                "label": "0",
                "name": "NVIDIA H200",
                "host": "",
                "mig": False,
                "memory_total": 150 * 2**30,
                "power_limit": 700.0,
                "cluster_memory": 3 * 2**30,
            }
        ],
        samples=[{"t": 0.0, "values": {"GPU-1": [87.0, 10 * 2**30, 50.0, 300.0, None, None]}}],
        cluster={
            "state": "stopped",
            "mode": "gpu",
            "address": "tls://127.0.0.1:1",
            "dashboard": "http://127.0.0.1:8787/status",
            "message": "the cluster was stopped",
            "stopped_at": 0.0,
        },
        workers=[],
        tasks=[],
        progress=[
            {
                "prefix": "matmul",
                "total": 8,
                "done": 5,
                "processing": 2,
                "erred": 1,
                "running": 1,
                "color": "#3f69d3",
            }
        ],
        processes=None,
        waiting=[{"resource": "GPU", "tasks": 3}],
        messages=[],
    )
    frame.update(changes)  # type: ignore[typeddict-item]
    return frame


def test_the_snapshot_names_gpus_progress_waiting_and_a_stop() -> None:
    text = frame_text(_frame())
    assert "GPU Dask panel: cluster stopped, gpu, scheduler tls://127.0.0.1:1" in text
    assert "stopped at " in text and "the cluster was stopped" in text
    assert "  0 NVIDIA H200: 87% busy, memory 10 GiB / 150 GiB (3 GiB this cluster's)" in text
    assert "  matmul: 5 / 8 done, 1 running, 1 waiting for a thread, 1 failed" in text
    assert "Waiting: 3 task(s) ask for the resource 'GPU', which no worker offers" in text
    no_gpu = frame_text(
        _frame(
            devices=[], samples=[], nvml={"available": False, "reason": "no driver", "driver": None}
        )
    )
    assert "GPUs: no GPU data (no driver)" in no_gpu


def test_a_stopped_clusters_panel_keeps_its_final_progress(shell) -> None:
    """The kernel's panels take a last look before a stop: work that ended after the last
    sample is counted done, not left at the round before (a Run All that ends with a stop)."""
    import time

    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'false'")
    client = shell.run_line_magic(
        "gpu_cluster", "start --n-workers 1 --threads-per-worker 1 --memory-limit 1GB"
    )
    monitor = this_view().monitor()
    token = monitor.subscribe(lambda: None, interval=10)  # no sample of its own meanwhile
    try:
        monitor.tick(wait=5)

        def step(i: int) -> int:
            time.sleep(0.05)
            return i

        held = client.map(step, range(20), pure=False)  # results the notebook still holds
        assert client.gather(held) == list(range(20))
        shell.run_line_magic("gpu_cluster", "stop")
        monitor.tick(wait=1)  # the next round finds the cluster gone
        frame, _ = monitor.frame(KEY)
        rows = {row["prefix"]: row for row in frame["progress"]}
        assert rows["step"]["done"] == rows["step"]["total"] == 20, frame["progress"]
        assert frame["cluster"] is not None and frame["cluster"]["state"] == "stopped"
    finally:
        monitor.unsubscribe(token)


def test_the_text_snapshot_shows_the_room_as_the_viewer_may_see_it() -> None:
    """``%gpu_cluster panel --text`` (and an executed notebook's text) carries the room: the
    viewer's own lease by name, the others as counts."""
    import json
    from pathlib import Path

    recorded = json.loads((Path(__file__).parents[1] / "fixtures" / "frames_cpu.json").read_text())
    frame = dict(recorded["frames"][0])
    holder = {
        "who": "you",
        "you": True,
        "share": 7 * 2**30,
        "relied_on": None,
        "used": 3 * 2**30,
        "utilization": 12.0,
        "last_work": time.time(),
        "above": False,
        "idle": False,
    }
    frame["room"] = {
        "gpus": [
            {
                "id": "GPU-0",
                "label": "0",
                "name": "NVIDIA H200",
                "memory_total": 140 * 2**30,
                "memory_used": 30 * 2**30,
                "utilization": 40.0,
                "holders": 3,
                "not_promised": 100 * 2**30,
                "shown": [holder],
                "others": 2,
                "others_idle": 1,
                "others_above": 1,
            }
        ],
        "names": False,
        "idle_after": 600.0,
    }
    text = frame_text(frame)  # type: ignore[arg-type]
    assert "Room: 3 holder(s) on 1 GPU(s)" in text
    assert "GPU 0 NVIDIA H200: 3 holder(s), 100 GiB not promised, 40% busy" in text
    assert "you: 3 GiB of a 7 GiB share" in text
    assert "2 other student(s), 1 idle, 1 above their share" in text
    frame["room"] = None
    assert "Room:" not in frame_text(frame)  # type: ignore[arg-type]
