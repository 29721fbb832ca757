"""The widget's front end alone (harness.py: no Jupyter, so no JupyterLab CSS variables, as in VS
Code or an HTML export), fed replayed GPU frames: its fallback colours keep WCAG AA contrast in a
light and a dark page, it fits 250 px without sideways scrolling, and its tooltip names a task."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import open_page
from harness import serve
from lab_support import ARTIFACTS, axe_violations, hover_point, hover_task, lane_count, wait_drawn
from replay import load

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("harness")) as url:
        yield url


@pytest.mark.parametrize(("theme", "width"), [("light", 250), ("dark", 250), ("dark", 900)])
def test_without_jupyter_styles(harness: str, browser: Any, theme: str, width: int) -> None:
    page = open_page(browser, width + 20, 1400)
    page.goto(f"{harness}?theme={theme}&width={width}")
    gpus = len(load()[-1]["devices"])
    drawn = wait_drawn(page, "#host", gpu_lines=gpus)
    assert drawn["layout"] == ("compact" if width < 320 else "wide")
    sizes = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert sizes[0] <= sizes[1], sizes
    assert axe_violations(page, "#host") == []
    tooltip = hover_task(page, "#host")
    assert "duration " in tooltip
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"harness-{theme}-{width}.png"), full_page=True)
    assert page.errors == []
    page.context.close()


def test_the_tooltip_names_the_task_under_the_pointer_after_the_page_moved(
    harness: str, browser: Any
) -> None:
    """Text above the chart that grows (a message, a status line wrapping) moves the chart
    under a still pointer; the next move must name the task now under it, not the one that was."""
    page = open_page(browser, 920, 1400)
    page.goto(f"{harness}?width=900")
    wait_drawn(page, "#host")
    page.locator("#host .gpudask-pause").click()  # hold the window still
    page.locator("#host .gpudask-messages").filter(has_text="Paused").wait_for()
    lanes = lane_count(page, "#host")
    assert lanes >= 2, lanes
    before, x, y = hover_point(page, "#host", lanes=[lanes - 1])
    row = page.locator("#host .gpudask-stream .u-over").bounding_box()["height"] / lanes
    page.evaluate(
        """row => {
            const spacer = document.createElement('div');
            spacer.style.height = row + 'px';
            document.getElementById('host').prepend(spacer);
        }""",
        row,
    )
    tooltip = page.locator("#host .gpudask-tooltip").first
    page.mouse.move(x + 1, y)  # still over the chart, now over the lane above
    moved = tooltip.inner_text() if tooltip.is_visible() else ""
    page.mouse.move(0, 0)
    page.mouse.move(x + 1, y)  # entering afresh: what the chart says there
    fresh = tooltip.inner_text() if tooltip.is_visible() else ""
    assert moved == fresh, (before, moved, fresh)
    assert moved != before
    page.context.close()


def test_the_charts_stay_put_while_the_window_follows(harness: str, browser: Any) -> None:
    """At 250 px the text above the task stream wraps (the window's description, whose times
    change every second, and the GPU readouts, whose length changes with the samples). The task
    stream may move down once, when a longer text first shows, but never back up and down."""
    page = open_page(browser, 270, 1400)
    page.goto(f"{harness}?width=250")
    wait_drawn(page, "#host")
    text = page.locator("#host .gpudask-window-text")
    assert text.inner_text().startswith("Following the work"), text.inner_text()
    seen: list[tuple[float, str]] = []
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        box = page.locator("#host .gpudask-stream").bounding_box()
        seen.append((box["y"], text.inner_text()))
        page.wait_for_timeout(100)
    highest = [max(y for y, _ in seen[: i + 1]) for i in range(len(seen))]
    back_up = [(y, t) for (y, t), top in zip(seen, highest, strict=True) if y < top - 1]
    assert not back_up, seen  # fractions of a pixel: glyphs of other heights
    page.context.close()


def test_bye_when_the_view_goes(harness: str, browser: Any) -> None:
    page = open_page(browser, 900, 900)
    page.goto(harness)
    wait_drawn(page, "#host")
    page.evaluate("() => window.cleanup()")
    sent = page.evaluate("() => window.sent.map(m => m.type)")
    assert sent[0] == "hello" and sent[-1] == "bye", sent
    assert page.locator(".gpudask-view").count() == 0
    page.context.close()


def test_harness_serves_the_recording(tmp_path: Path) -> None:
    from harness import build

    built = build(tmp_path)
    assert (built / "panel.js").stat().st_size > 10_000
    assert (built / "snapshot.json").stat().st_size > 1_000
