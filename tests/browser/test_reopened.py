"""A saved notebook with a panel in its outputs, reopened after its kernel session ended (in
JupyterLab and in Notebook 7): the new kernel has no model for the panel, and where the widget
manager would write "Error displaying widget: model not found" the output says in a sentence what
it was and how to see it live; another widget's output keeps the manager's text. Run again, the
panel is live."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from lab_support import Lab, kernel_idle, run_all, shot

from gpudask_jupyter.schema.protocol import PANEL_MIME

pytestmark = pytest.mark.timeout(400)

# the notebook shown (another notebook's outputs, in a hidden tab, would match first)
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"
MODEL_NOT_FOUND = "Error displaying widget: model not found"  # @jupyter-widgets/jupyterlab-manager
ENDED = "The GPU panel of a kernel session that has ended: run this cell again to see it live."

CELLS = [
    "%load_ext gpudask_jupyter",
    "from ipywidgets import IntSlider\nIntSlider(3)",
    "%gpu_cluster panel --interval 0.25",
    "print('done')",
]


def _saved_outputs(lab: Lab, name: str) -> list[dict[str, Any]]:
    nb = json.loads((lab.root / name).read_text())
    return [o for c in nb["cells"] for o in c.get("outputs", [])]


def _texts(page: Any) -> list[str]:
    """The text of every output of the notebook shown, in order."""
    texts: list[str] = page.evaluate(
        "scope => [...document.querySelectorAll(scope + ' .jp-OutputArea-output')]"
        ".map(o => o.textContent)",
        NOTEBOOK,
    )
    return texts


@pytest.mark.parametrize("host", ["lab", "notebook7"])
def test_a_reopened_panel_of_an_ended_session_says_so(
    host: str, request: pytest.FixtureRequest, page: Any
) -> None:
    server: Lab = request.getfixturevalue(host)
    server.shut_down_kernels()
    name = f"reopened-{host}.ipynb"
    url = server.notebook(name, CELLS)
    run_all(page, server, url, "done")
    # live: the panel draws its view, and the plugin leaves it alone
    page.wait_for_selector(f"{NOTEBOOK} .jp-OutputArea-output .gpudask-view", timeout=60_000)
    assert page.locator(f"{NOTEBOOK} .gpudask-ended").count() == 0

    # saved with its outputs (the panel's carries the marker), then the kernel session ends
    page.locator(f"{NOTEBOOK} .jp-InputPrompt").first.click()  # the notebook has the focus
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while not any(PANEL_MIME in o.get("data", {}) for o in _saved_outputs(server, name)):
        assert time.monotonic() < deadline, "the notebook was not saved with the panel's output"
        time.sleep(0.5)
    page.goto("about:blank")
    server.shut_down_kernels()

    # reopened: a new kernel, which has no model of either widget
    page.goto(url)
    page.wait_for_selector(f"{NOTEBOOK} .jp-Cell", timeout=60_000)
    ended = page.locator(f"{NOTEBOOK} .gpudask-ended")
    try:
        ended.wait_for(timeout=60_000)
    finally:
        shot(page, f"reopened-panel-{host}")
    assert ended.inner_text().strip() == ENDED
    assert ended.count() == 1
    texts = _texts(page)
    assert texts.count(ENDED) == 1, texts
    assert texts.count(MODEL_NOT_FOUND) == 1, texts  # the slider's output: not the panel's

    # run again: the panel is live, and the sentence has gone with the old output
    deadline = time.monotonic() + 60
    while not kernel_idle(server):
        assert time.monotonic() < deadline, "the reopened notebook's kernel did not start"
        time.sleep(0.5)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.wait_for_function(
        """scope => document.querySelector(scope + ' .jp-OutputArea-output .gpudask-view')
            && !document.querySelector(scope + ' .gpudask-ended')""",
        arg=NOTEBOOK,
        timeout=60_000,
    )
    assert MODEL_NOT_FOUND not in _texts(page)
    assert page.dialogs == []
