"""One description of the Frame: TypeScript is generated from frame.py, samples are built by name,
and the interval and history defaults and ranges are the options'."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from gpudask_jupyter import config, frame

ROOT = Path(__file__).resolve().parents[1]


def _generator() -> ModuleType:
    path = ROOT / "scripts" / "generate_frame_ts.py"
    spec = importlib.util.spec_from_file_location("generate_frame_ts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_typescript_is_generated_from_frame_py() -> None:
    generator = _generator()
    committed = generator.TARGET.read_text()
    assert committed == generator.render(), (
        "labextension/src/view/frame.generated.ts differs from gpudask_jupyter/frame.py: "
        "run `python scripts/generate_frame_ts.py` and commit the result"
    )


def test_generated_typescript_names_every_field_and_constant() -> None:
    text = _generator().render()
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
