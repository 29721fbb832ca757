"""JupyterLab in Chromium: the panel widget and the sidebar draw a real cluster's work."""

from __future__ import annotations

import time
from typing import Any

import pytest
from lab_support import Lab, shot

pytestmark = pytest.mark.timeout(300)

XSS_KEY = "<img src=x onerror=alert(1)>"

CELLS = [
    "%load_ext gpudask_jupyter",
    "client = %gpu_cluster start --n-workers 2 --memory-limit 1GB",
    "%gpu_cluster panel --interval 0.25",
    "import time\n"
    "futures = client.map(lambda x: (time.sleep(0.05), x)[1], range(40))\n"
    "total = sum(client.gather(futures))\n"
    f"client.submit(lambda: 1, key={XSS_KEY!r}).result()\n"
    "print('done', total)",
]


def _kernel_idle(lab: Lab) -> bool:
    """The notebook's kernel has started and is idle (asked through the server's REST API)."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{lab.url}api/sessions?token={lab.token}", timeout=5) as reply:
        sessions = json.loads(reply.read())
    return any(s["kernel"]["execution_state"] == "idle" for s in sessions)


def _run_all(page: Any, lab: Lab, url: str) -> None:
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    deadline = time.monotonic() + 60
    while not _kernel_idle(lab):
        assert time.monotonic() < deadline, "the notebook's kernel did not start"
        time.sleep(0.5)
    started = "() => document.querySelector('.jp-InputPrompt').textContent.trim() !== '[ ]:'"
    for _ in range(3):  # the menu may open before the notebook has the focus: try again
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            page.wait_for_function(started, timeout=10_000)
            break
        except Exception:
            page.keyboard.press("Escape")
    try:
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
            ".some(o => o.textContent.includes('done 780'))",
            timeout=120_000,
        )
    except Exception:
        shot(page, "run-all-failed")
        raise


def _drawn(page: Any, scope: str, timeout: int = 60_000) -> dict[str, int]:
    page.wait_for_function(
        f"""() => {{
            const v = document.querySelector({scope!r} + ' .gpudask-view');
            return v && Number(v.dataset.taskRects) > 0 && Number(v.dataset.lanes) > 0;
        }}""",
        timeout=timeout,
    )
    return page.evaluate(
        f"""() => {{
            const v = document.querySelector({scope!r} + ' .gpudask-view');
            return {{rects: Number(v.dataset.taskRects), lanes: Number(v.dataset.lanes),
                     frames: Number(v.dataset.frames)}};
        }}"""
    )


def test_panel_and_sidebar_draw_the_task_stream(lab: Lab, page: Any) -> None:
    _run_all(page, lab, lab.notebook("panel.ipynb", CELLS))

    # the panel widget in the notebook's output
    drawn = _drawn(page, ".jp-OutputArea")
    assert drawn["lanes"] == 2  # two workers, one thread each
    shot(page, "panel-widget")

    # the sidebar, for the notebook in focus
    page.locator('.lm-TabBar-tab[data-id="gpudask-sidebar"]').click()
    sidebar = "#gpudask-sidebar"
    page.wait_for_selector(f"{sidebar} .gpudask-view", timeout=30_000)
    drawn = _drawn(page, sidebar)
    assert drawn["lanes"] == 2
    workers = page.locator(f"{sidebar} .gpudask-workers").inner_text()
    assert "127.0.0.1" in workers
    shot(page, "sidebar")

    # a task key full of markup shows as text, and nothing runs
    page.wait_for_function(
        f"() => document.querySelector('{sidebar}').textContent.includes({XSS_KEY!r})",
        timeout=30_000,
    )
    assert page.locator(f"{sidebar} .gpudask-view img").count() == 0
    assert page.locator(".jp-OutputArea .gpudask-view img").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]

    from gpudask_jupyter import nvml

    if not nvml.status().available:  # then the sidebar says why, in words
        assert "No GPU data" in page.locator(f"{sidebar} .gpudask-messages").inner_text()
    shot(page, "sidebar-xss-key-as-text")


def test_panel_renders_in_notebook_7(notebook7: Lab, page: Any) -> None:
    _run_all(page, notebook7, notebook7.notebook("panel.ipynb", CELLS))
    drawn = _drawn(page, ".jp-OutputArea")
    assert drawn["lanes"] == 2
    assert page.locator(".jp-OutputArea .gpudask-view img").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]
    shot(page, "notebook7-panel")
