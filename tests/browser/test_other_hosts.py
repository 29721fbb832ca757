"""The same view in Notebook 7 (the widget, the sidebar, and "Open panel", which needs an area
other than the main one there) and in Voila (the widget alone: the sidebar plugin's notebook
tracker is optional, so nothing fails to activate). Notebook 04 in Voila, with a real kernel:
its panel draws the work while the later cells run, and keeps the stopped cluster's work."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import serve_voila
from lab_support import Lab, run_all, shot, view_data, wait_drawn, write_notebook_04
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
    drawn = wait_drawn(page, ".jp-OutputArea", lanes=2)
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


STOPPED = "Cluster stopped; its workers are gone"  # what the last cell of notebook 04 prints


@pytest.fixture(params=[False, True], ids=["rendered-at-end", "progressive"])
def voila_04(request: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, bool]]:
    """Voila serving notebook 04, as it renders by default (the cells run before the page shows
    them) or progressively (each cell's output shows as it ran); the URL and which."""
    progressive: bool = request.param
    base = tmp_path_factory.mktemp("voila04")
    write_notebook_04(base / "run04.ipynb")
    args = (f"--progressive_rendering={progressive}",)
    for url in serve_voila(base, base / "run04.ipynb", args):
        yield url, progressive


def _panel_text(page: Any) -> str:
    return str(page.locator(".gpudask-view").first.inner_text())


def test_voila_04_draws_the_work_while_it_runs_and_keeps_it_after(
    voila_04: tuple[str, bool], page: Any
) -> None:
    url, progressive = voila_04
    page.goto(url, wait_until="commit", timeout=60_000)  # the page comes while the cells run
    name = "voila-04-progressive" if progressive else "voila-04"
    if progressive:
        # mid-run: the cells after the panel's still run, and the panel draws their tasks
        page.wait_for_function(
            """stopped => {
                const v = document.querySelector('.gpudask-view');
                return v && Number(v.dataset.taskRects) > 0
                    && !v.classList.contains('gpudask-stopped')
                    && !v.textContent.includes('No Dask cluster')
                    && !document.body.textContent.includes(stopped);
            }""",
            arg=STOPPED,
            timeout=180_000,
        )
        during = view_data(page, "body")
        assert during["state"] == "live" and during["liveness"] == "live", during
        assert "not responding" not in _panel_text(page)
        page.locator(".gpudask-view").first.scroll_into_view_if_needed()
        shot(page, f"{name}-running")
    # the end: the last cell stopped the cluster; its work stays, greyed
    page.wait_for_function(
        "stopped => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(o => o.textContent.includes(stopped))",
        arg=STOPPED,
        timeout=300_000,
    )
    try:
        page.wait_for_selector(".gpudask-view.gpudask-stopped", timeout=30_000)
    finally:
        page.locator(".gpudask-view").first.scroll_into_view_if_needed()
        shot(page, f"{name}-stopped")
    after = view_data(page, "body")
    assert int(after["taskRects"]) > 0, after
    assert "No Dask cluster" not in _panel_text(page)
    assert _ours(page.errors) == []
