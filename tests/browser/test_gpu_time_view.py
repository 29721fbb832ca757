"""The views' GPU time in JupyterLab: a kernel's cluster measures a stand-in GPU (the GPU-time
plugin reading it as CUPTI would), three prefixes run (one keeping the GPU busy, one half the
time, one never); the panel widget and the sidebar show each prefix's busy share, GPU seconds,
peak and bytes, in the light and dark themes, at a 250 px sidebar and in a projector-sized
window, with no serious or critical axe-core violation."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import _serve, open_page
from lab_support import (
    ARTIFACTS,
    Lab,
    axe_violations,
    no_sideways_scroll,
    run_all,
    set_theme,
    shot,
    sidebar_width,
)
from test_room import _open_sidebar

pytestmark = pytest.mark.timeout(600)

SIDEBAR = "#gpudask-sidebar"
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea"
MAIN = "#gpudask-main-panel"
CELLS = [
    "%load_ext gpudask_jupyter",
    "client = %gpu_cluster start --n-workers 2 --threads-per-worker 1 --memory-limit 1GB",
    "import cloudpickle, stand_in_gpu\n"
    "from gpudask_jupyter.gpu_time import worker_plugin\n"
    "cloudpickle.register_pickle_by_value(stand_in_gpu)\n"
    "client.unregister_worker_plugin(worker_plugin.NAME)\n"
    "plugin = worker_plugin.GpuTimePlugin(\n"
    "    interval=0.2, make_source=stand_in_gpu.worker_source('cupti'))\n"
    "client.register_plugin(plugin, name=worker_plugin.NAME)",
    "%gpu_cluster panel --interval 0.5",
    "work = [client.submit(stand_in_gpu.busy, 1.0, 256 << 20, key=f'gpu-groupby-{i}', pure=False)"
    " for i in range(4)]\n"
    "work += [client.submit(stand_in_gpu.busy, 1.0, 64 << 20, 0.5, key=f'gpu-merge-{i}',"
    " pure=False) for i in range(4)]\n"
    "work += [client.submit(stand_in_gpu.busy, 0.5, 0, 0.0, key=f'read-csv-{i}', pure=False)"
    " for i in range(2)]\n"
    "client.gather(work)\n"
    "client.run(worker_plugin.flush)\n"
    "print('measured')",
]


@pytest.fixture(scope="module")
def gpu_time_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab whose kernels import the tests' stand-in GPU."""
    tests = Path(__file__).parents[1]
    pythonpath = os.pathsep.join(
        p for p in (str(tests), str(tests / "browser"), os.environ.get("PYTHONPATH", "")) if p
    )
    yield from _serve(
        "jupyterlab", tmp_path_factory.mktemp("gputime"), extra_env={"PYTHONPATH": pythonpath}
    )


def _drawn(page: Any, scope: str, timeout: int = 60_000) -> dict[str, Any]:
    """Wait until the view under ``scope`` shows the three prefixes' GPU time; what it shows."""
    page.wait_for_function(
        r"""scope => {
            const rows = [
                ...document.querySelectorAll(scope + ' .gpudask-view .gpudask-gputime-row')
            ];
            // every task's figures in: 4, 4 and 2 tasks
            const counts = rows.map(r => (/(\d+) tasks/.exec(r.textContent) || [])[1]);
            return rows.length === 3 && counts.join() === '4,4,2';
        }""",
        arg=scope,
        timeout=timeout,
    )
    seen: dict[str, Any] = page.evaluate(
        """scope => {
            const section = document.querySelector(scope + ' .gpudask-view .gpudask-gputime');
            const rows = [...section.querySelectorAll('.gpudask-gputime-row')];
            const text = (row, sel) => row.querySelector(sel).textContent;
            return {
                rows: rows.map(r => ({
                    name: text(r, '.gpudask-prefix'),
                    busy: text(r, '.gpudask-gputime-busy'),
                    facts: text(r, '.gpudask-gputime-facts'),
                    fill: r.querySelector('.gpudask-gputime-fill').style.width,
                })),
                source: text(section, '.gpudask-gputime-source'),
                fontSize: parseFloat(getComputedStyle(section).fontSize),
            };
        }""",
        scope,
    )
    return seen


def _check(seen: dict[str, Any]) -> None:
    names = [r["name"] for r in seen["rows"]]
    assert names == ["gpu-groupby", "gpu-merge", "read-csv"], seen  # most GPU time first
    busy = [int(r["busy"].removesuffix("% busy")) for r in seen["rows"]]
    assert busy[0] >= 95 and 45 <= busy[1] <= 55 and busy[2] == 0, seen
    assert "s GPU of 4 s" in seen["rows"][0]["facts"], seen  # 4 tasks of 1 s
    assert "1 GiB to GPU" in seen["rows"][0]["facts"], seen  # 4 tasks of 256 MiB
    assert "peak 256 MiB" in seen["rows"][0]["facts"], seen
    assert "4 tasks" in seen["rows"][1]["facts"], seen
    assert "CUPTI (1 µs resolution): 2 worker(s)" in seen["source"], seen


def _section_shot(page: Any, scope: str, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    section = page.locator(f"{scope} .gpudask-view .gpudask-gputime").first
    section.scroll_into_view_if_needed()
    section.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_the_panel_and_the_sidebar_show_where_the_gpu_time_went(
    gpu_time_lab: Lab, browser: Any
) -> None:
    lab = gpu_time_lab
    page = open_page(browser, 1600, 1800)
    run_all(page, lab, lab.notebook("gputime.ipynb", CELLS), "measured")
    for theme in ("light", "dark"):
        if theme == "dark":
            set_theme(page, lab, dark=True)
        _check(_drawn(page, PANEL, timeout=120_000))
        _section_shot(page, PANEL, f"gputime-panel-{theme}")
        assert axe_violations(page, f"{PANEL} .gpudask-view") == []
        _open_sidebar(page)
        sidebar_width(page, 250)
        _check(_drawn(page, SIDEBAR))
        no_sideways_scroll(page, SIDEBAR, ".gpudask-gputime")
        _section_shot(page, SIDEBAR, f"gputime-sidebar-250-{theme}")
        assert axe_violations(page, SIDEBAR) == []
        # a projector: the panel opened beside the notebook, the sidebar closed
        page.set_viewport_size({"width": 1280, "height": 720})
        page.locator(f"{SIDEBAR} .gpudask-open").click()
        page.wait_for_selector(f"{MAIN} .gpudask-view", timeout=30_000)
        page.locator(f'.lm-TabBar-tab[data-id="{SIDEBAR[1:]}"]').click()
        seen = _drawn(page, MAIN)
        _check(seen)
        assert seen["fontSize"] >= 13, seen
        no_sideways_scroll(page, MAIN, ".gpudask-gputime")
        _section_shot(page, MAIN, f"gputime-projector-{theme}")
        shot(page, f"gputime-projector-1280x720-{theme}")
        assert axe_violations(page, MAIN) == []
        page.set_viewport_size({"width": 1600, "height": 1800})
    set_theme(page, lab, dark=False)
    assert page.dialogs == []
    page.context.close()
