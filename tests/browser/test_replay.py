"""Replayed GPU frames in JupyterLab: the sidebar (frame route answered from a recording) and the
panel widget (the package's panel.js fed by a replaying kernel side) draw the GPU charts without
a GPU; layout at 250 and 450 px, light and dark themes, a projector-sized window, hover, and
accessibility (axe-core: no serious or critical violation)."""

from __future__ import annotations

import datetime
import re
import time
from typing import Any

import pytest
from conftest import open_page
from lab_support import (
    ARTIFACTS,
    Lab,
    axe_violations,
    hover_task,
    no_sideways_scroll,
    run_all,
    set_theme,
    shot,
    sidebar_width,
    view_data,
    wait_drawn,
)
from replay import load

pytestmark = pytest.mark.timeout(600)

SIDEBAR = "#gpudask-sidebar"
PANEL = ".jp-OutputArea"
UNHEARD = "The kernel does not answer this panel"  # the start of the view's UNHEARD_TEXT
CELLS = [
    "import replay\npanel = replay.replay_widget(lose=True)\npanel",
    "print('replaying')",
]


def _gpus() -> int:
    frames = load()
    count = len(frames[-1]["devices"])
    assert count > 0, "the replay must carry GPUs: these tests check the GPU charts"
    return count


def _open_sidebar(page: Any) -> None:
    """Show the sidebar (a restored workspace may show it already: a click would hide it)."""
    page.wait_for_selector(f'.lm-TabBar-tab[data-id="{SIDEBAR[1:]}"]', timeout=60_000)
    if not page.locator(f"{SIDEBAR} .gpudask-view").is_visible():
        page.locator(f'.lm-TabBar-tab[data-id="{SIDEBAR[1:]}"]').click()
    page.wait_for_selector(f"{SIDEBAR} .gpudask-view", timeout=30_000)


def _element_shot(page: Any, selector: str, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(selector).first.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def _stopped_view_keeps_its_gpus(page: Any, scope: str, gpus: int) -> None:
    """After a stop the work is greyed, but the GPUs are still measured: their charts keep one
    colour per GPU, named in the key; the memory chart's title says how much each GPU has."""
    page.wait_for_selector(f"{scope} .gpudask-view.gpudask-stopped", timeout=30_000)
    seen = page.evaluate(
        """scope => {
            const v = document.querySelector(scope + ' .gpudask-view');
            const filter = sel => getComputedStyle(v.querySelector(sel)).filter;
            return {
                gpu: filter('.gpudask-gpu-charts .uplot canvas'),
                stream: filter('.gpudask-stream .uplot canvas'),
                key: [...v.querySelectorAll('.gpudask-chart-key .gpudask-legend-item')]
                    .map(n => n.textContent),
                colors: [...v.querySelectorAll('.gpudask-chart-key .gpudask-key-line')]
                    .map(n => getComputedStyle(n).borderTopColor),
                titles: [...v.querySelectorAll('.gpudask-chart-title')].map(n => n.textContent),
            };
        }""",
        scope,
    )
    assert seen["gpu"] == "none", seen
    assert "grayscale" in seen["stream"], seen
    assert seen["key"][:gpus] == [f"GPU {i}" for i in range(gpus)], seen
    assert len(set(seen["colors"][:gpus])) == gpus, seen
    assert any(t.startswith("GPU memory of ") and "each" in t for t in seen["titles"]), seen


def _stopped_after(page: Any, scope: str, moment: float) -> None:
    """The view's "Cluster stopped at HH:MM:SS" is no earlier than ``moment``: the replay moves
    the recording's stop to the time each snapshot is made."""
    text = page.locator(f"{scope} .gpudask-cluster-text").first.inner_text()
    match = re.search(r"stopped at (\d\d):(\d\d):(\d\d)", text)
    assert match, text
    h, m, s = (int(g) for g in match.groups())
    said = h * 3600 + m * 60 + s
    seen = datetime.datetime.fromtimestamp(moment)
    after = (said - (seen.hour * 3600 + seen.minute * 60 + seen.second) + 5) % 86_400
    assert after < 3_600, (text, seen.isoformat())  # a few seconds' leeway: whole seconds shown


def _heard_again(page: Any, gpus: int) -> bool:
    """Wait until the panel's view draws from a snapshot (True) or says that the kernel does not
    answer it (False)."""
    page.wait_for_function(
        """([scope, lines, unheard]) => {
            const v = document.querySelector(scope + ' .gpudask-view');
            const drawn = v && Number(v.dataset.taskRects) > 0 && Number(v.dataset.lanes) > 0
                && Number(v.dataset.gpuLines) >= lines;
            return drawn || (v && v.textContent.includes(unheard));
        }""",
        arg=[PANEL, gpus, UNHEARD],
        timeout=90_000,
    )
    said = page.locator(f"{PANEL} .gpudask-view .gpudask-messages").first.inner_text()
    return UNHEARD not in said


def test_replayed_gpus_in_the_sidebar_and_the_panel(replay_lab: Lab, browser: Any) -> None:
    gpus = _gpus()
    page = open_page(browser, 1600, 1800)  # tall: element screenshots show whole views
    run_all(page, replay_lab, replay_lab.notebook("replay.ipynb", CELLS), "replaying")

    # the widget: the package's panel.js, with replayed GPU frames
    drawn = wait_drawn(page, PANEL, gpu_lines=gpus)
    assert int(drawn["devices"]) == gpus
    assert drawn["liveness"] == "live"
    _stopped_view_keeps_its_gpus(page, PANEL, gpus)
    tooltip = hover_task(page, PANEL)
    for word in ("key ", "worker ", "thread ", "start ", "duration "):
        assert word in tooltip, tooltip
    page.locator(f"{PANEL} .gpudask-view").first.scroll_into_view_if_needed()
    _element_shot(page, f"{PANEL} .gpudask-view", "panel-light")
    assert axe_violations(page, f"{PANEL} .gpudask-view") == []
    page.set_viewport_size({"width": 1400, "height": 1800})  # the README's picture: docs/panel.png
    page.wait_for_timeout(1000)
    no_sideways_scroll(page, f"{PANEL} .gpudask-view")
    _element_shot(page, f"{PANEL} .gpudask-view", "panel-light-1400")
    page.set_viewport_size({"width": 1600, "height": 1800})

    # the sidebar, fed by the replaying server extension
    _open_sidebar(page)
    drawn = wait_drawn(page, SIDEBAR, gpu_lines=gpus)
    assert int(drawn["devices"]) == gpus
    _stopped_view_keeps_its_gpus(page, SIDEBAR, gpus)
    charts = page.evaluate(
        """scope => [...document.querySelectorAll(scope + ' .uplot')]
            .map(c => c.dataset.plotLeft + '/' + c.dataset.plotWidth)""",
        SIDEBAR,
    )
    assert len(charts) == 3 and len(set(charts)) == 1, charts  # one time axis
    for width in (450, 250):
        sidebar_width(page, width)
        page.wait_for_timeout(800)
        no_sideways_scroll(page, SIDEBAR)
        if width == 250:
            assert view_data(page, SIDEBAR)["layout"] == "compact"
        _element_shot(page, SIDEBAR, f"sidebar-{width}")
    shot(page, "lab-replay-light")
    assert axe_violations(page, SIDEBAR) == []

    reloaded = time.time()
    set_theme(page, replay_lab, dark=True)
    # the reloaded page's view lost its hello (the replay drops it), and asks again: it draws
    # from a snapshot made after the reload, not from the frames made before (its asks reach the
    # kernel although the old page's subshell is gone: gpudask_jupyter.widget.routing)
    assert _heard_again(page, gpus), "the reloaded page's panel says the kernel does not hear it"
    _stopped_after(page, PANEL, reloaded)
    _open_sidebar(page)
    wait_drawn(page, SIDEBAR, gpu_lines=gpus)
    sidebar_width(page, 250)
    no_sideways_scroll(page, SIDEBAR)
    _element_shot(page, SIDEBAR, "sidebar-250-dark")
    page.locator(f"{PANEL} .gpudask-view").first.scroll_into_view_if_needed()
    _element_shot(page, f"{PANEL} .gpudask-view", "panel-dark")
    shot(page, "lab-replay-dark")
    assert axe_violations(page, SIDEBAR) == []
    assert axe_violations(page, f"{PANEL} .gpudask-view") == []
    set_theme(page, replay_lab, dark=False)
    assert page.dialogs == []
    page.context.close()


def test_projector_window_with_the_panel_open(replay_lab: Lab, browser: Any) -> None:
    """1280 x 720: the notebook and the main-area panel side by side, as on a projector."""
    gpus = _gpus()
    page = open_page(browser, 1280, 720)
    page.goto(replay_lab.notebook("projector.ipynb", ["1 + 1"]))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    _open_sidebar(page)
    page.locator(f"{SIDEBAR} .gpudask-open").click()
    main = "#gpudask-main-panel"
    page.wait_for_selector(f"{main} .gpudask-view", timeout=30_000)
    drawn = wait_drawn(page, main, gpu_lines=gpus)
    assert int(drawn["devices"]) == gpus
    page.locator(f'.lm-TabBar-tab[data-id="{SIDEBAR[1:]}"]').click()  # close the sidebar
    page.wait_for_timeout(800)
    assert not page.locator(f"{SIDEBAR} .gpudask-view").is_visible()
    no_sideways_scroll(page, main)
    shot(page, "projector-1280x720")
    assert axe_violations(page, main) == []
    page.context.close()
