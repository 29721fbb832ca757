"""Notebook 04 run with Run All in JupyterLab: its panel draws the pipeline's work while the
later cells run (their view's hello is queued behind them), and at the end the stopped cluster
greyed with its work kept. The notebook itself, with small sizes, against a real CPU cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lab_support import (
    ARTIFACTS,
    Lab,
    axe_violations,
    measured,
    set_theme,
    shot,
    smallest_colour_difference,
    start_run_all,
    view_data,
    write_notebook_04,
)

pytestmark = pytest.mark.timeout(400)

PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea"


@pytest.fixture(autouse=True)
def _alone(lab: Lab) -> None:
    lab.shut_down_kernels()


def _open(lab: Lab, gate: Path) -> str:
    write_notebook_04(lab.root / "run04.ipynb", gate=gate)
    return f"{lab.url}lab/workspaces/run04/tree/run04.ipynb?token={lab.token}"


def test_run_all_draws_the_work_while_it_runs_and_keeps_it_after(
    lab: Lab, page: Any, tmp_path: Path
) -> None:
    # the notebook waits before its stop until the test has seen it mid-run: on a loaded
    # machine its pipeline once ended before the panel had drawn a task
    gate = tmp_path / "go-on"
    page.goto(_open(lab, gate))
    start_run_all(page, lab)
    # mid-run: the cells after the panel's still run, and the panel draws their tasks
    page.wait_for_function(
        """scope => {
            const v = document.querySelector(scope + ' .gpudask-view');
            return v && Number(v.dataset.taskRects) > 0 && !v.classList.contains('gpudask-stopped')
                && !v.textContent.includes('No Dask cluster');
        }""",
        arg=PANEL,
        timeout=120_000,
    )
    # the notebook has neither failed nor reached its stop (it waits at the gate): asked of the
    # page, not of the kernel's state on the server, which can read idle for a moment while Run
    # All goes on (seen once in a full run)
    ended = page.evaluate(
        """() => [...document.querySelectorAll('.jp-OutputArea-output')].some(o =>
            o.textContent.includes('Cluster stopped')
            || o.dataset.mimeType === 'application/vnd.jupyter.error')"""
    )
    assert not ended, "the notebook ended before the panel drew its work"
    during = view_data(page, PANEL)
    assert during["state"] == "live" and during["liveness"] == "live", during
    assert "not responding" not in page.locator(f"{PANEL} .gpudask-view").inner_text()
    # the pipeline has run (the notebook waits at its gate): every prefix in its own colour
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(o => o.textContent.includes('tasks running'))",  # %gpu_cluster status, after it
        timeout=300_000,
    )
    page.locator(f"{PANEL} .gpudask-all").first.click()  # the legend then covers all of it
    page.locator(f"{PANEL} .gpudask-view").first.scroll_into_view_if_needed()
    shot(page, "run-all-04-running")
    colours = page.eval_on_selector_all(
        f"{PANEL} .gpudask-legend-prefixes .gpudask-swatch",
        "nodes => nodes.map(n => getComputedStyle(n).backgroundColor)",
    )
    names = page.eval_on_selector_all(
        f"{PANEL} .gpudask-legend-prefixes .gpudask-legend-item", "ns => ns.map(n => n.title)"
    )
    smallest = smallest_colour_difference(colours)
    measured("notebook 04: prefixes in the legend", len(colours))
    measured("notebook 04: smallest colour difference of two prefixes (CIEDE2000)", smallest)
    assert len(colours) >= 12, names  # the pipeline's prefixes, each named
    assert len(set(colours)) == len(colours), (names, colours)
    assert smallest >= 14.0, (names, colours)
    row = int(view_data(page, PANEL)["rowHeight"])
    measured("task stream row height, notebook panel (px)", row)
    assert row >= 60, row  # two lanes at a notebook's width: no longer an 18 px strip
    gate.touch()
    # the end: the last cell stopped the cluster; its work stays, greyed
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(o => o.textContent.includes('Cluster stopped'))",
        timeout=300_000,
    )
    page.wait_for_selector(f"{PANEL} .gpudask-view.gpudask-stopped", timeout=30_000)
    after = view_data(page, PANEL)
    assert int(after["taskRects"]) > 0, after
    assert "No Dask cluster" not in page.locator(f"{PANEL} .gpudask-view").inner_text()
    page.locator(f"{PANEL} .gpudask-view").first.scroll_into_view_if_needed()
    shot(page, "run-all-04-stopped")

    # the same, dark: the page reloads, the panel asks its kernel again and draws the history
    set_theme(page, lab, dark=True)
    try:
        page.wait_for_function(
            """scope => {
                const v = document.querySelector(scope + ' .gpudask-view.gpudask-stopped');
                return v && Number(v.dataset.taskRects) > 0;
            }""",
            arg=PANEL,
            timeout=60_000,
        )
        view = page.locator(f"{PANEL} .gpudask-view").first
        view.scroll_into_view_if_needed()
        view.screenshot(path=str(ARTIFACTS / "run-all-04-stopped-dark.png"))
        assert axe_violations(page, f"{PANEL} .gpudask-view") == []
    finally:
        set_theme(page, lab, dark=False)
