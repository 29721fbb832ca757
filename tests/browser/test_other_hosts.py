"""The same view in Notebook 7 (the widget, the sidebar, and "Open panel", which needs an area
other than the main one there) and in Voila (the widget alone: the sidebar plugin's notebook
tracker is optional, so nothing fails to activate)."""

from __future__ import annotations

from typing import Any

import pytest
from lab_support import Lab, run_all, shot, wait_drawn
from replay import load

pytestmark = pytest.mark.timeout(400)

CELLS = [
    "%load_ext gpudask_jupyter",
    "client = %gpu_cluster start --n-workers 2 --memory-limit 1GB",
    "%gpu_cluster panel --interval 0.25",
    "futures = client.map(lambda x: x + 1, range(40))\n"
    "total = sum(client.gather(futures))\n"
    "print('done', total)",
]


def _ours(errors: list[str]) -> list[str]:
    """Console errors that concern this package (the hosts log their own)."""
    words = ("gpudask", "INotebookTracker", "failed to activate")
    return [e for e in errors if any(w in e for w in words)]


def test_notebook_7_panel_sidebar_and_open_panel(notebook7: Lab, page: Any) -> None:
    run_all(page, notebook7, notebook7.notebook("panel.ipynb", CELLS), "done 820")
    drawn = wait_drawn(page, ".jp-OutputArea")
    assert drawn["lanes"] == "2"
    assert page.locator(".jp-OutputArea .gpudask-view img").count() == 0
    shot(page, "notebook7-panel")

    # the sidebar, from View > Left Sidebar; then its "Open panel" (the down area in Notebook 7)
    page.get_by_role("menuitem", name="View", exact=True).click()
    page.locator(".lm-Menu-itemLabel", has_text="Left Sidebar").click()
    page.locator(".lm-Menu-itemLabel", has_text="Show GPU Dask").click()
    wait_drawn(page, "#gpudask-sidebar")
    page.locator("#gpudask-sidebar .gpudask-open").click()
    page.wait_for_selector("#gpudask-main-panel .gpudask-view", timeout=30_000)
    wait_drawn(page, "#gpudask-main-panel")
    height = page.evaluate("() => document.querySelector('#gpudask-main-panel').offsetHeight")
    assert height > 200, f"the panel opened {height} px high"
    messages = page.locator("#gpudask-sidebar .gpudask-messages").inner_text()
    assert "no area" not in messages
    shot(page, "notebook7-open-panel")
    assert page.dialogs == []
    assert _ours(page.errors) == []


def test_voila_renders_the_widget(voila: str, page: Any) -> None:
    loaded: list[int] = []
    entry = "gpudask-jupyter/static/remoteEntry"
    page.on("response", lambda r: loaded.append(r.status) if entry in r.url else None)
    page.goto(voila)
    gpus = len(load()[-1]["devices"])
    drawn = wait_drawn(page, "body", gpu_lines=gpus, timeout=120_000)
    assert int(drawn["devices"]) == gpus
    shot(page, "voila-panel")
    assert loaded == [200]  # the sidebar plugin was loaded, and activated without a tracker
    assert _ours(page.errors) == []
