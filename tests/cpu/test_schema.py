"""One description of what Python and the views share: the TypeScript is generated from the
schema modules (the Frame, the widget's messages, the control results, the server's routes), and
each fact it names is the one the package uses; samples are built by name, the cursor has one
spelling, and the interval and history defaults and ranges are the options'."""

from __future__ import annotations

import importlib
import importlib.util
import typing
from pathlib import Path
from types import ModuleType

import pytest

from gpudask_jupyter import config
from gpudask_jupyter.monitor import BadCursor, Cursor
from gpudask_jupyter.monitor.callers import ClientCaller
from gpudask_jupyter.monitor.trackers import ClusterTracker, Source
from gpudask_jupyter.schema import frame, protocol

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    return _script("generate_ts")


@pytest.mark.parametrize(
    "module", ["gpudask_jupyter.schema.frame", "gpudask_jupyter.schema.protocol"]
)
def test_typescript_is_generated_from_the_schema(module: str) -> None:
    generator = _generator()
    target = generator.SOURCES[module]
    assert target.read_text() == generator.render(module), (
        f"{target.relative_to(ROOT)} differs from {module}: "
        "run `python scripts/generate_ts.py` and commit the result"
    )


def test_every_schema_module_has_its_typescript() -> None:
    modules = {
        f"gpudask_jupyter.schema.{path.stem}"
        for path in (ROOT / "gpudask_jupyter" / "schema").glob("*.py")
        if path.stem != "__init__"
    }
    assert set(_generator().SOURCES) == modules


def test_generated_typescript_names_every_field_and_constant() -> None:
    text = _generator().render("gpudask_jupyter.schema.frame")
    for cls in (frame.Frame, frame.DeviceInfo, frame.WorkerInfo, frame.TaskRect, frame.Processes):
        assert f"export interface {cls.__name__} {{" in text
        for name in cls.__annotations__:
            assert f"  {name}: " in text, (cls.__name__, name)
    assert f"export const VERSION = {frame.VERSION};" in text
    fields = text.split("export const SAMPLE_FIELDS = [", 1)[1].split("] as const;", 1)[0]
    assert [line.split("'")[1] for line in fields.strip().splitlines()] == list(frame.SAMPLE_FIELDS)
    assert "export const INTERVAL_RANGE = [0.25, 10] as const;" in text
    assert "export const DEFAULT_HISTORY = 300;" in text


def test_a_reading_goes_on_the_wire_in_field_order_and_comes_back_by_name() -> None:
    reading = frame.DeviceReading(utilization=42.0, memory_used=7, pcie_rx=3)
    values = reading.values()
    assert len(values) == len(frame.SAMPLE_FIELDS)
    assert values[frame.SAMPLE_FIELDS.index("utilization")] == 42.0
    assert values[frame.SAMPLE_FIELDS.index("memory_used")] == 7
    assert values[frame.SAMPLE_FIELDS.index("pcie_rx")] == 3
    assert values[frame.SAMPLE_FIELDS.index("power")] is None
    assert frame.DeviceReading.from_values(values) == reading


def test_heartbeat_gpus_are_readings_of_the_same_type() -> None:
    source = Source(token=1, caller=lambda: ClientCaller(None), mode="attached", address="a")
    tracker = ClusterTracker(source, epoch=1)
    identity = {
        "name": "w0",
        "host": "10.9.9.9",
        "nthreads": 1,
        "metrics": {"gpu_utilization": 55, "gpu_memory_used": 1234, "gpu-memory-total": 9999},
        "gpu": {"name": "NVIDIA H200", "memory-total": 9999},
    }
    tracker._read_workers(0.0, {"tcp://10.9.9.9:1": identity}, set(), {})
    device = "worker:tcp://10.9.9.9:1"
    assert tracker.remote[device]["host"] == "10.9.9.9"
    assert tracker.remote_readings[device] == frame.DeviceReading(utilization=55, memory_used=1234)
    assert tracker.workers[0]["gpu"] == {
        "device": device,
        "name": "NVIDIA H200",
        "utilization": 55,
        "memory_used": 1234,
        "memory_total": 9999,
    }


def test_interval_and_history_defaults_and_ranges_are_the_options() -> None:
    interval, history = config.OPTIONS["refresh-interval"], config.OPTIONS["history"]
    assert interval.limits == frame.INTERVAL_RANGE
    assert history.limits == frame.HISTORY_RANGE
    assert frame.DEFAULT_INTERVAL == interval.default_value == 1.0
    assert frame.DEFAULT_HISTORY == history.default_value == 300.0
    assert "clamped to 0.25–10" in interval.doc and "clamped to 10–3600" in history.doc
    assert frame.clamp_interval(0.001) == 0.25 and frame.clamp_history(10**9) == 3600


def test_the_panels_trait_defaults_are_the_options() -> None:
    from gpudask_jupyter.widget import Panel

    traits = Panel.class_traits()
    assert traits["interval"].default_value == frame.DEFAULT_INTERVAL
    assert traits["history"].default_value == frame.DEFAULT_HISTORY


def test_a_cursor_round_trips_through_text() -> None:
    cursor = Cursor(samples=12, tasks=345, epoch=2)
    assert cursor.encode() == "12.345.2"
    assert Cursor.decode(cursor.encode()) == cursor
    assert Cursor.decode("") is None and Cursor.decode(None) is None
    assert cursor.resumes(epoch=2, samples_seq=12)
    assert not cursor.resumes(epoch=3, samples_seq=12)  # another cluster: a snapshot
    assert not cursor.resumes(epoch=2, samples_seq=11)  # a restarted monitor: a snapshot


@pytest.mark.parametrize(
    "text", ["x", "1.2", "1.2.3.4", "..", "-1.2.3", "1.2.3 ", "1" * 19 + ".1.1"]
)
def test_text_that_is_not_a_cursor_is_refused(text: str) -> None:
    with pytest.raises(BadCursor):
        Cursor.decode(text)


def _script(name: str) -> ModuleType:
    path = ROOT / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: what scripts/record_frames.py recorded (frames_sample.json is a hand-made replay of its own)
RECORDINGS = [
    path
    for path in sorted((ROOT / "tests" / "fixtures").glob("frames_*.json"))
    if path.stem != "frames_sample"
]


#: recordings made on GPU machines before a field was added (re-recorded at the next GPU run)
RECORDED_BEFORE = {"frames_h200": {"gpu_time"}}


@pytest.mark.parametrize("path", RECORDINGS)
def test_recorded_frames_are_frames_of_this_version_small_enough_to_commit(path: Path) -> None:
    import json

    assert path.stat().st_size < 1024 * 1024
    frames = json.loads(path.read_text())["frames"]
    assert frames[0]["kind"] == "snapshot"
    states = set()
    for recorded in frames:
        # a recording made before a field was added lacks that field alone; the view takes a
        # missing field as none (state.ts), so older recordings still replay
        missing = RECORDED_BEFORE.get(path.stem, set())
        assert set(recorded) | missing == set(frame.Frame.__annotations__)
        assert recorded["version"] == frame.VERSION
        if recorded["cluster"]:
            states.add(recorded["cluster"]["state"])
            assert set(recorded["cluster"]) == set(frame.ClusterInfo.__annotations__)
        for worker in recorded["workers"]:
            assert set(worker) == set(frame.WorkerInfo.__annotations__)
        for device in recorded["devices"]:
            assert set(device) == set(frame.DeviceInfo.__annotations__)
    assert {"running", "stopped"} <= states  # the run, then the history after stop
    assert any(t["prefix"] == "matmul_load" for f in frames for t in f["tasks"])


def test_a_recording_is_trimmed_below_the_limit_keeping_its_frames() -> None:
    import json

    recorder = _script("record_frames")
    task = {"worker": "w", "thread": 1, "start": 1.123456789, "stop": 2.0, "key": "k" * 50}
    frames = [{"kind": "snapshot", "tasks": [task] * 1000}, {"kind": "delta", "tasks": [task]}]
    out = recorder.trimmed(frames, limit=20_000)
    assert [f["kind"] for f in out] == ["snapshot", "delta"]
    assert len(json.dumps(out)) <= 20_000
    assert out[0]["tasks"][0]["start"] == 1.1235 and len(out[1]["tasks"]) == 1


def test_generated_typescript_carries_the_protocols_facts() -> None:
    text = _generator().render("gpudask_jupyter.schema.protocol")
    assert f"export const RESULT_PREFIX = '{protocol.RESULT_PREFIX}';" in text
    assert f"export const CONTROL_MODULE = '{protocol.CONTROL_MODULE}';" in text
    assert "export const CONTROL_ACTIONS = ['start', 'stop', 'restart', 'scale', 'detach']" in text
    assert "export interface ControlResultMessage extends ActionResult {" in text
    assert "  n?: number;" in text  # NotRequired is optional in TypeScript
    assert "import type { Frame } from './frame.generated';" in text
    frame_text = _generator().render("gpudask_jupyter.schema.frame")
    assert "  'disk-read': '#f0ad4e'," in frame_text


def test_the_control_module_is_the_one_the_sidebar_runs() -> None:
    module = importlib.import_module(protocol.CONTROL_MODULE)
    assert callable(module.run_json)
    assert typing.get_args(protocol.ControlAction) == protocol.CONTROL_ACTIONS


def test_the_server_serves_the_routes_the_sidebar_asks() -> None:
    from gpudask_jupyter.server import handlers

    assert [route for route, _ in handlers.ROUTES] == [protocol.FRAME_ROUTE, protocol.KERNELS_ROUTE]


def test_the_panels_synced_traits_are_the_protocols() -> None:
    from gpudask_jupyter.widget import Panel

    synced = {
        name
        for name, trait in Panel.class_traits(sync=True).items()
        if not name.startswith("_") and name not in Panel.__mro__[1].class_traits(sync=True)
    }
    assert synced == set(protocol.PANEL_TRAITS)


def test_task_colours_are_the_schemas() -> None:
    from gpudask_jupyter.monitor.taskstream import rectangles

    raw = [
        ("w", 1, 0.0, 1.0, "transfer", "k", "k", False, 0),
        ("w", 1, 1.0, 2.0, "compute", "x-1", "x", True, 1),
        ("w", 1, 2.0, 3.0, "compute", "y-1", "y", False, 13),
    ]
    transfer, failed, computed = rectangles(raw)
    assert transfer["color"] == frame.ACTION_COLORS["transfer"]
    assert failed["color"] == frame.ERROR_COLOR
    assert computed["color"] == frame.PALETTE[13 % len(frame.PALETTE)]
    assert set(frame.ACTION_COLORS) == set(typing.get_args(frame.Action)) - {"compute"}
