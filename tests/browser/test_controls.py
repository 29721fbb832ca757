"""The sidebar's cluster actions change the real cluster of the notebook's kernel: Scale to two
workers, then Stop; each shows its progress and its result, and a cell run afterwards sees the
change. The kernel side of the actions is gpudask_jupyter.widget.sidebar_actions (run_json
prints one GPUDASK_CONTROL_RESULT line)."""

from __future__ import annotations

from typing import Any

import pytest
from lab_support import Lab, axe_violations, measured, run_all, set_theme, shot, view_data

pytestmark = pytest.mark.timeout(400)

SIDEBAR = "#gpudask-sidebar"
CHECK = (
    "from gpudask_jupyter.magics.extension import Extension as _Extension\n"
    "_s = _Extension.of(get_ipython()).cluster.current()\n"
    "_n = len(_s.client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.workers)))"
    " if _s is not None and _s.alive else 0\n"
    "print('WORKERS', _n, 'ALIVE', _s is not None and _s.alive)"
)
CELLS = [
    "%load_ext gpudask_jupyter",
    "client = %gpu_cluster start --n-workers 1 --memory-limit 1GB",
    "futures = client.map(lambda x: x + 1, range(20))\nprint('done', sum(client.gather(futures)))",
    CHECK,
]


def _rerun_check(page: Any, expected: str) -> None:
    """Run the last cell again and wait for ``expected`` in its output."""
    page.locator(".jp-Notebook .jp-Cell").last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    page.locator(".jp-Notebook .jp-Cell").last.locator(".jp-OutputArea-output").filter(
        has_text=expected
    ).wait_for(timeout=60_000)


#: Records, for every change of the action's line, what the header and the buttons say in
#: that same moment (a MutationObserver runs before the browser paints again).
WATCH = """scope => {
    const view = document.querySelector(scope + ' .gpudask-view');
    window.gpudaskSeen = [];
    new MutationObserver(() => window.gpudaskSeen.push({
        status: view.querySelector('.gpudask-action-status').textContent,
        header: view.querySelector('.gpudask-cluster-text').textContent,
        start: view.querySelector('.gpudask-start').disabled,
        stop: !view.querySelector('.gpudask-stop').hidden,
    })).observe(view.querySelector('.gpudask-action-status'),
                {childList: true, subtree: true, characterData: true});
}"""


def _action(page: Any, button: str, done: str, clicks: int = 1) -> str:
    page.evaluate(WATCH, SIDEBAR)
    page.locator(f"{SIDEBAR} {button}").click(click_count=clicks)
    status = page.locator(f"{SIDEBAR} .gpudask-action-status")
    status.filter(has_text=done).wait_for(timeout=120_000)
    return str(status.inner_text())


def _when_done(page: Any, done: str) -> dict[str, Any]:
    """What the view said in the moment its result first said ``done``."""
    seen: list[dict[str, Any]] = page.evaluate("() => window.gpudaskSeen")
    first = next(s for s in seen if done in s["status"])
    measured(f"sidebar in the moment of '{done}'", first)
    return first


def _frames(page: Any) -> int:
    return int(view_data(page, SIDEBAR)["frames"])


def test_scale_and_stop_from_the_sidebar(lab: Lab, page: Any) -> None:
    lab.shut_down_kernels()
    run_all(page, lab, lab.notebook("controls.ipynb", CELLS), "WORKERS 1 ALIVE True")
    page.locator(f'.lm-TabBar-tab[data-id="{SIDEBAR[1:]}"]').click()
    cluster = page.locator(f"{SIDEBAR} .gpudask-cluster")
    cluster.filter(has_text="Cluster running").wait_for(timeout=60_000)
    # the 20 tasks ran before the sidebar first looked: the scheduler recorded them from the start
    page.wait_for_function(
        "s => Number(document.querySelector(s + ' .gpudask-view')?.dataset.taskRects) >= 20",
        arg=SIDEBAR,
        timeout=30_000,
    )
    assert page.locator(f"{SIDEBAR} .gpudask-start").is_disabled()  # a cluster runs

    page.locator(f"{SIDEBAR} .gpudask-scale-input").fill("2")
    text = _action(page, ".gpudask-scale .gpudask-button", "Scale: done.")
    assert "2 workers" in text, text
    # the header changed with the result, not a frame later
    assert "Cluster running (cpu), 2 workers" in _when_done(page, "Scale: done.")["header"]
    _rerun_check(page, "WORKERS 2 ALIVE True")
    page.locator(f"{SIDEBAR} .gpudask-workers h3").filter(has_text="Workers (2)").wait_for(
        timeout=30_000
    )
    shot(page, "sidebar-scaled")

    # a number the box refuses stays refused, frames after frames, until the box changes
    box = page.locator(f"{SIDEBAR} .gpudask-scale-input")
    box.fill("-3")
    page.locator(f"{SIDEBAR} .gpudask-scale .gpudask-button").click()
    status = page.locator(f"{SIDEBAR} .gpudask-action-status")
    refusal = "Scale: give a whole number of workers, 0 to 1024."
    status.filter(has_text=refusal).wait_for(timeout=10_000)
    frames = _frames(page)
    page.wait_for_function(
        "([s, n]) => Number(document.querySelector(s + ' .gpudask-view').dataset.frames) >= n",
        arg=[SIDEBAR, frames + 2],
        timeout=30_000,
    )
    assert status.inner_text() == refusal, status.inner_text()
    assert box.get_attribute("aria-invalid") == "true"
    measured("sidebar: the refusal two frames later", status.inner_text())
    shot(page, "sidebar-refusal")
    assert axe_violations(page, SIDEBAR) == []
    box.fill("2")
    assert refusal not in status.inner_text()

    text = _action(page, ".gpudask-stop", "Stop: done.")
    moment = _when_done(page, "Stop: done.")
    assert moment["header"].startswith("Cluster stopped"), moment
    assert moment["start"] is False and moment["stop"] is False, moment  # Start offered at once
    _rerun_check(page, "WORKERS 0 ALIVE False")
    cluster.filter(has_text="Cluster stopped at").wait_for(timeout=30_000)
    assert page.locator(f"{SIDEBAR} .gpudask-start").is_enabled()
    shot(page, "sidebar-stopped")

    # Start, double-clicked: one cluster, and no failure reported of the cluster that runs
    _action(page, ".gpudask-start", "Start: done.", clicks=2)
    moment = _when_done(page, "Start: done.")
    assert moment["header"].startswith("Cluster running (cpu)"), moment
    assert moment["start"] is True and moment["stop"] is True, moment
    seen = page.evaluate("() => window.gpudaskSeen.map(s => s.status)")
    assert not any("failed" in s for s in seen), seen
    _rerun_check(page, "ALIVE True")
    shot(page, "sidebar-started-again")
    assert axe_violations(page, SIDEBAR) == []

    # the same, dark: the theme's setting, then a reload (the sidebar follows the notebook again)
    set_theme(page, lab, dark=True)
    try:
        cluster.filter(has_text="Cluster running").wait_for(timeout=60_000)
        shot(page, "sidebar-started-again-dark")
        assert axe_violations(page, SIDEBAR) == []
    finally:
        set_theme(page, lab, dark=False)
