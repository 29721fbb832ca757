"""The JupyterLab server under test and screenshots."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import ARTIFACTS, measured  # noqa: F401  (the browser tests take them from here)

NOTEBOOK_04 = Path(__file__).parents[2] / "notebooks" / "04_watching_work_in_the_panel.ipynb"
# notebook 04's sizes, long enough to look at the panel while it runs, on two CPU cores
SIZES_04 = "ROWS = 2_000_000\nROUNDS = 6\nPARTITIONS = 16"


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path
    open_prefix: str  # "lab/tree/" (JupyterLab) or "notebooks/" (Notebook 7)

    def notebook(self, name: str, cells: list[str]) -> str:
        nb = {
            "cells": [
                {
                    "cell_type": "code",
                    "metadata": {},
                    "source": src,
                    "outputs": [],
                    "execution_count": None,
                }
                for src in cells
            ],
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (self.root / name).write_text(json.dumps(nb))
        prefix = self.open_prefix
        if prefix == "lab/tree/":  # a workspace of its own: no tab of an earlier test restored
            prefix = f"lab/workspaces/{Path(name).stem}/tree/"
        return f"{self.url}{prefix}{name}?token={self.token}"

    def shut_down_kernels(self) -> None:
        """End every session (and its kernel, and the cluster it started): a test starts alone."""
        import urllib.request

        opener = urllib.request.build_opener()
        headers = {"Authorization": f"token {self.token}"}
        with opener.open(urllib.request.Request(f"{self.url}api/sessions", headers=headers)) as r:
            sessions = json.loads(r.read())
        for session in sessions:
            request = urllib.request.Request(
                f"{self.url}api/sessions/{session['id']}", headers=headers, method="DELETE"
            )
            opener.open(request).close()


def write_notebook_04(path: Path, sizes: str = SIZES_04, gate: Path | None = None) -> None:
    """Notebook 04 written to ``path``, with ``sizes`` appended to its parameters cell; with a
    ``gate``, a cell before its last (the stop) waits until that file exists (at most 120 s), so
    that a test sees the notebook mid-run however fast the pipeline ran."""
    nb = json.loads(NOTEBOOK_04.read_text())
    (parameters,) = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
    parameters["source"] = "".join(parameters["source"]) + "\n" + sizes
    if gate is not None:
        wait = (
            "import pathlib, time\n"
            "_until = time.monotonic() + 120\n"
            f"while not pathlib.Path({str(gate)!r}).exists() and time.monotonic() < _until:\n"
            "    time.sleep(0.05)"
        )
        last = max(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
        cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
        nb["cells"].insert(last, cell | {"source": wait})
    path.write_text(json.dumps(nb))


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def smallest_colour_difference(colours: list[str]) -> float:
    """The smallest CIEDE2000 difference between two of ``colours`` (CSS colours)."""
    import itertools

    from coloraide import Color

    return min(
        float(Color(a).delta_e(Color(b), method="2000"))
        for a, b in itertools.combinations(colours, 2)
    )


def kernel_idle(lab: Lab) -> bool:
    """A notebook's kernel has started and is idle (asked through the server's REST API)."""
    import urllib.request

    with urllib.request.urlopen(f"{lab.url}api/sessions?token={lab.token}", timeout=5) as reply:
        sessions = json.loads(reply.read())
    return any(s["kernel"]["execution_state"] == "idle" for s in sessions)


def start_run_all(page: Any, lab: Lab) -> None:
    """In the open notebook, once its kernel is idle: Run All Cells, and wait until the first
    cell has started; AssertionError when it does not."""
    import time

    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    deadline = time.monotonic() + 60
    while not kernel_idle(lab):
        assert time.monotonic() < deadline, "the notebook's kernel did not start"
        time.sleep(0.5)
    started = "() => document.querySelector('.jp-InputPrompt').textContent.trim() !== '[ ]:'"
    for _ in range(3):  # the menu may open before the notebook has the focus: try again
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            page.wait_for_function(started, timeout=10_000)
            return
        except Exception:
            page.keyboard.press("Escape")
    raise AssertionError("Run All did not start")


def run_all(page: Any, lab: Lab, url: str, done: str, timeout: int = 120_000) -> None:
    """Open ``url``, run every cell, and wait until an output contains ``done``."""
    page.goto(url)
    start_run_all(page, lab)
    try:
        page.wait_for_function(
            "done => [...document.querySelectorAll('.jp-OutputArea-output')]"
            ".some(o => o.textContent.includes(done))",
            arg=done,
            timeout=timeout,
        )
    except Exception:
        shot(page, "run-all-failed")
        raise


def view_data(page: Any, scope: str) -> dict[str, str]:
    """The data attributes of the view under ``scope`` (what it drew)."""
    data: dict[str, str] = page.evaluate(
        "scope => ({...document.querySelector(scope + ' .gpudask-view').dataset})", scope
    )
    return data


def wait_drawn(
    page: Any, scope: str, gpu_lines: int = 0, timeout: int = 60_000, lanes: int = 1
) -> dict[str, str]:
    """Wait until the view under ``scope`` drew task rectangles in ``lanes`` lanes (and
    ``gpu_lines`` GPU lines): a view polled while the work arrives may first draw the tasks of
    one worker alone. When it does not, the failure shows what was there instead (a
    screenshot, the view's data or the text in its place)."""
    try:
        page.wait_for_function(
            """([scope, lines, lanes]) => {
                const v = document.querySelector(scope + ' .gpudask-view');
                return v && Number(v.dataset.taskRects) > 0 && Number(v.dataset.lanes) >= lanes
                    && Number(v.dataset.gpuLines) >= lines;
            }""",
            arg=[scope, gpu_lines, lanes],
            timeout=timeout,
        )
    except Exception as error:
        shot(page, "wait-drawn-failed")
        seen = page.evaluate(
            """scope => [...document.querySelectorAll(scope)].map(n => {
                const v = n.querySelector('.gpudask-view');
                return v ? JSON.stringify(v.dataset) : n.textContent.slice(0, 300);
            })""",
            scope,
        )
        raise AssertionError(f"{scope} was not drawn; there: {seen}") from error
    return view_data(page, scope)


def hover_task(page: Any, scope: str, containing: str = "", within: float = 0) -> str:
    """Move the pointer along the task stream's lanes until a tooltip shows (one that contains
    ``containing``, when given); its text. With ``within`` seconds, sweep again until then: a
    view polled every second may not have drawn the task yet."""
    deadline = time.monotonic() + within
    while True:
        try:
            return hover_point(page, scope, containing)[0]
        except AssertionError:
            if time.monotonic() >= deadline:
                raise


def hover_point(
    page: Any, scope: str, containing: str = "", lanes: Iterable[int] | None = None
) -> tuple[str, float, float]:
    """Like :func:`hover_task` (over ``lanes`` only, when given); the tooltip's text and the
    pointer's position where it showed."""
    over = page.locator(f"{scope} .gpudask-stream .u-over").first
    over.scroll_into_view_if_needed()
    box = over.bounding_box()
    assert box, "the task stream is not on screen"
    count = lane_count(page, scope)
    row = box["height"] / count
    tooltip = page.locator(f"{scope} .gpudask-tooltip").first
    for lane in range(count) if lanes is None else lanes:
        y = box["y"] + row * (lane + 0.5)
        for x in range(int(box["width"])):  # every pixel: a short task is drawn 1 px wide
            page.mouse.move(box["x"] + x, y)
            if tooltip.is_visible():
                text = str(tooltip.inner_text())
                if containing in text:
                    return text, box["x"] + x, y
    raise AssertionError(f"no tooltip over the task stream with {containing!r}")


def lane_count(page: Any, scope: str) -> int:
    """The task stream's lanes under ``scope`` (at least 1, as the chart draws them)."""
    lanes = page.evaluate(
        "scope => document.querySelector(scope + ' .gpudask-view').dataset.lanes", scope
    )
    return max(1, int(lanes))


AXE = Path(__file__).parents[2] / "labextension" / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(page: Any, scope: str) -> list[dict[str, Any]]:
    """Serious and critical WCAG 2 A/AA violations axe-core finds under ``scope``."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result: list[dict[str, Any]] = page.evaluate(
        """async scope => {
            const r = await axe.run(document.querySelector(scope), {
                runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}
            });
            return r.violations
                .filter(v => v.impact === 'serious' || v.impact === 'critical')
                .map(v => ({id: v.id, impact: v.impact, help: v.help,
                            nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': '
                                + (n.failureSummary || '').slice(0, 200))}));
        }""",
        scope,
    )
    return result


def set_theme(page: Any, lab: Lab, dark: bool) -> None:
    """Switch JupyterLab's theme: its user setting, then a reload (what a user's choice in
    Settings > Theme persists)."""
    settings = lab.root.parent / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    name = "JupyterLab Dark" if dark else "JupyterLab Light"
    (settings / "themes.jupyterlab-settings").write_text(json.dumps({"theme": name}))
    # save first: the widget outputs come back with the notebook, their models from the kernel
    page.locator(".jp-NotebookPanel .jp-InputPrompt").first.click()  # not a button of a view
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.wait_for_function(
        "() => !document.querySelector('.lm-TabBar-tab.jp-mod-dirty')", timeout=30_000
    )
    page.reload()
    page.wait_for_function(
        "light => document.body.dataset.jpThemeLight === light",
        arg="false" if dark else "true",
        timeout=60_000,
    )


def no_sideways_scroll(page: Any, scope: str, inner: str = ".gpudask-view") -> None:
    """Neither ``scope`` nor the ``inner`` parts within it scroll sideways."""
    sizes = page.evaluate(
        """([scope, inner]) => [...document.querySelectorAll(scope + ', ' + scope + ' ' + inner)]
            .map(n => [n.scrollWidth, n.clientWidth])""",
        [scope, inner],
    )
    for scroll, client in sizes:
        assert scroll <= client, f"{scope} scrolls sideways: {scroll} > {client}"


def sidebar_width(page: Any, width: int) -> None:
    """Drag the left area's splitter until the GPU Dask sidebar is ``width`` px wide."""
    for _ in range(3):
        current = page.evaluate("() => document.querySelector('#gpudask-sidebar').offsetWidth")
        if abs(current - width) <= 2:
            return
        handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle").first
        box = handle.bounding_box()
        assert box
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + (width - current), y, steps=5)
        page.mouse.up()
        page.wait_for_timeout(300)
