"""The widget's front end alone (harness.py: no Jupyter, so no JupyterLab CSS variables, as in VS
Code or an HTML export), fed replayed GPU frames: its fallback colours keep WCAG AA contrast in a
light and a dark page, it fits 250 px without sideways scrolling, and its tooltip names a task."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import open_page
from harness import serve
from lab_support import ARTIFACTS, axe_violations, hover_task, wait_drawn
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
