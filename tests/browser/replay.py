"""Recorded frames, replayed: the GPU charts and the task stream drawn in CI without a GPU.

A recording is a JSON file of real frames, either a list or ``{"meta": ..., "frames": [...]}``
(tests/fixtures/frames_*.json; record_frames.py writes one). The replay moves every time in it
so that the recording ends *now* (the view follows the work, so it must look recent), gives a
view all of it as one snapshot, then keeps it alive with small deltas: one sample repeating the
last values, no new task.

Used by the test-only widget (``ReplayPanel``: the package's own panel.js with a replaying
kernel side) and by the test-only server extension (replay_server.py) that answers the
sidebar's frame requests.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parents[1] / "fixtures"
#: recordings in the order the tests prefer them: real GPUs, then made-up GPUs, then no GPU
PREFERRED = ("frames_h200.json", "frames_sample.json", "frames_cpu.json")


def fixture_path() -> Path:
    """The recording to replay: $GPUDASK_REPLAY, else the first of PREFERRED that exists."""
    chosen = os.environ.get("GPUDASK_REPLAY")
    if chosen:
        return Path(chosen)
    for name in PREFERRED:
        if (FIXTURES / name).exists():
            return FIXTURES / name
    raise FileNotFoundError(f"no recording in {FIXTURES}: run tests/browser/record_frames.py")


def load(path: Path | str | None = None) -> list[dict[str, Any]]:
    data = json.loads(Path(path or fixture_path()).read_text())
    frames = data["frames"] if isinstance(data, dict) else data
    if not frames:
        raise ValueError(f"{path}: no frames")
    return [f for f in frames if isinstance(f, dict) and "version" in f]


def shifted(frame: dict[str, Any], dt: float) -> dict[str, Any]:
    """The frame with every time moved by ``dt`` seconds."""
    out = copy.deepcopy(frame)
    out["time"] += dt
    for sample in out.get("samples", []):
        sample["t"] += dt
    for task in out.get("tasks", []):
        task["start"] += dt
        task["stop"] += dt
    cluster = out.get("cluster")
    if cluster and cluster.get("stopped_at") is not None:
        cluster["stopped_at"] += dt
    return out


def snapshot(frames: list[dict[str, Any]], now: float | None = None) -> dict[str, Any]:
    """All the recording as one snapshot ending at ``now``: samples and tasks of every frame,
    the rest (devices, workers, progress...) of the last one."""
    now = time.time() if now is None else now
    dt = now - frames[-1]["time"]
    last = shifted(frames[-1], dt)
    last["kind"] = "snapshot"
    last["samples"] = [s for f in frames for s in shifted(f, dt).get("samples", [])]
    last["tasks"] = [t for f in frames for t in shifted(f, dt).get("tasks", [])]
    # every worker the recording saw, in case the last frame lost one
    workers = {w["address"]: w for f in frames for w in f.get("workers", [])}
    workers.update({w["address"]: w for w in last.get("workers", [])})
    last["workers"] = list(workers.values())
    last["history"] = max(last.get("history", 300), now - last["samples"][0]["t"] + 1)
    return last


def keepalive(last: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """A delta at ``now``: one sample with the last values of every device, nothing else new."""
    now = time.time() if now is None else now
    out = copy.deepcopy(last)
    out["kind"] = "delta"
    out["time"] = now
    values = last["samples"][-1]["values"] if last.get("samples") else {}
    out["samples"] = [{"t": now, "values": values}]
    out["tasks"] = []
    return out


class Replayer:
    """What a replaying kernel or server sends: a snapshot first, then keepalive deltas."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.frames = load(path)
        self._last: dict[str, Any] | None = None

    def frame(self, fresh: bool) -> dict[str, Any]:
        if fresh or self._last is None:
            self._last = snapshot(self.frames)
            return self._last
        return keepalive(self._last)


def replay_widget(path: str | None = None, interval: float = 0.25, lose: bool = False) -> Any:
    """A panel widget (the package's own front end) fed from a recording, for a notebook cell.
    ``lose``: the first hello of every view after the first is lost on the way, as a kernel
    drops a comm message for a subshell it does not know."""
    import anywidget
    import traitlets

    from gpudask_jupyter.widget import STATIC
    from gpudask_jupyter.widget.routing import route

    class ReplayPanel(anywidget.AnyWidget):  # type: ignore[misc]
        _esm = traitlets.Unicode(STATIC.read_text()).tag(sync=True)
        interval = traitlets.Float(0.25).tag(sync=True)
        paused = traitlets.Bool(False).tag(sync=True)
        history = traitlets.Float(300).tag(sync=True)
        processes = traitlets.Bool(False).tag(sync=True)

    replayer = Replayer(path)
    panel = ReplayPanel(interval=interval)
    lock = threading.Lock()
    views: set[str] = set()  # as the package's panel: a bye stops only its own view's frames
    heard: set[str] = set()  # every view that said hello, lost or not

    def send(fresh: bool) -> None:
        with lock:
            panel.send({"type": "frame", "frame": replayer.frame(fresh)})

    def on_message(_: Any, content: Any, buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        view = str(content.get("view", ""))
        if content.get("type") == "hello":
            with lock:
                lost = lose and bool(heard) and view not in heard
                heard.add(view)
                if lost:
                    return
                views.add(view)
            send(True)
        elif content.get("type") == "bye":
            with lock:
                views.discard(view)

    def loop() -> None:
        while True:
            time.sleep(interval)
            if views:
                send(False)

    panel.on_msg(on_message)
    route(panel.comm)  # as the package's panel
    threading.Thread(target=loop, daemon=True, name="gpudask-replay").start()
    return panel
