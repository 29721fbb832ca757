"""The sidebar's cluster actions change the real cluster of the notebook's kernel: Scale to two
workers, then Stop; each shows its progress and its result, and a cell run afterwards sees the
change. The kernel side of the actions is gpudask_jupyter.magics.controls (run_json prints one
GPUDASK_CONTROL_RESULT line)."""

from __future__ import annotations

from typing import Any

import pytest
from lab_support import Lab, run_all, shot

pytestmark = pytest.mark.timeout(400)

SIDEBAR = "#gpudask-sidebar"
CHECK = (
    "from gpudask_jupyter.cluster import session as _cluster\n"
    "_s = _cluster.current()\n"
    "_n = len(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.workers)))"
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


def _action(page: Any, button: str, done: str) -> str:
    page.locator(f"{SIDEBAR} {button}").click()
    status = page.locator(f"{SIDEBAR} .gpudask-action-status")
    status.filter(has_text=done).wait_for(timeout=120_000)
    return str(status.inner_text())


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
    _rerun_check(page, "WORKERS 2 ALIVE True")
    page.locator(f"{SIDEBAR} .gpudask-workers h3").filter(has_text="Workers (2)").wait_for(
        timeout=30_000
    )
    shot(page, "sidebar-scaled")

    text = _action(page, ".gpudask-stop", "Stop: done.")
    _rerun_check(page, "WORKERS 0 ALIVE False")
    cluster.filter(has_text="Cluster stopped at").wait_for(timeout=30_000)
    assert page.locator(f"{SIDEBAR} .gpudask-start").is_enabled()
    shot(page, "sidebar-stopped")
