"""The room of a shared GPU server in JupyterLab: a student's kernel starts its cluster, is placed
on a GPU of the room (the room's test seam: two GPUs of 16 GiB, CPU clusters, real leases), other
students hold leases too; the panel widget and the sidebar show the Room section, the student's
own lease marked "you" and the others as counts, in the light and dark themes, at a 250 px
sidebar and in a projector-sized window, with no serious or critical axe-core violation."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import open_page
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
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from room_locks import StandIn

from gpudask_jupyter.cluster.room.leases import Lease, RoomDir, Share
from gpudask_jupyter.machine import processes

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        os.getuid() != 0,
        reason="other students' lease files are theirs: only root can make them (CI runs as root)",
    ),
]

SIDEBAR = "#gpudask-sidebar"
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea"
MAIN = "#gpudask-main-panel"
CELLS = [
    "%load_ext gpudask_jupyter",
    "client = %gpu_cluster start --n-workers 1 --memory-limit 1GB",
    "%gpu_cluster panel --interval 0.5",
    "print('placed')",
]
GiB = 2**30
#: GPU 0 as a student sees it once the others came: themselves, two others (one idle a while)
OTHERS_0 = "2 other students · 1 idle"
#: the others' uids: no account needs to exist (a lease names its owner; root gives the file)
STUDENTS = [
    (4_242_001, "alice", 0, 3600.0),
    (4_242_002, "bob", 0, 5.0),
    (4_242_003, "carol", 1, 30.0),
]


@pytest.fixture
def sleeper() -> Iterator[list[StandIn]]:
    """Live processes, one per other student, of that student's account: their kernels, each
    holding the lock of its lease."""
    made = [StandIn(uid=uid) for uid, *_ in STUDENTS]
    try:
        yield made
    finally:
        for process in made:
            process.stop()


def _other_students(room: Path, kernels: list[StandIn]) -> None:
    """Leases of three other students, as their kernels would write them (files of their own,
    in folders of their own, each kernel holding its lock)."""
    now = time.time()
    for (uid, user, gpu, idle_for), kernel in zip(STUDENTS, kernels, strict=True):
        directory = RoomDir(room, uid=uid)
        uuid = f"GPU-00000000-0000-0000-0000-{gpu:012d}"  # the test seam's GPUs
        lease = Lease(
            uid,
            user,
            kernel.pid,
            processes.process_started(kernel.pid) or 0,
            f"kernel-of-{user}",
            [Share(uuid, gpu, 2 * GiB)],
            now - 600,
            now - idle_for,
        )
        os.chown(directory.folder(), uid, -1)
        kernel.hold(directory.folder())
        os.chown(directory.write(lease), uid, -1)


def _room_drawn(page: Any, scope: str, others: str = OTHERS_0, timeout: int = 60_000) -> None:
    """Wait until the view under ``scope`` draws both GPUs of the room, and the others of GPU 0
    as ``others`` (the room is read every few seconds)."""
    page.wait_for_function(
        """([scope, others]) => {
            const v = document.querySelector(scope + ' .gpudask-view');
            const counted = v && v.querySelector('.gpudask-room-others');
            return v && v.dataset.room === '2' && counted && counted.textContent === others;
        }""",
        arg=[scope, others],
        timeout=timeout,
    )


def _room_text(page: Any, scope: str) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(
        """scope => {
            const room = document.querySelector(scope + ' .gpudask-view .gpudask-room');
            const all = sel => [...room.querySelectorAll(sel)].map(n => n.textContent);
            const blocks = [...room.querySelectorAll('.gpudask-room-gpu')];
            return {
                heading: room.querySelector('h3').textContent,
                titles: all('.gpudask-room-title'),
                facts: all('.gpudask-room-facts'),
                you: all('.gpudask-room-you'),
                who: all('.gpudask-room-who'),
                others: all('.gpudask-room-others').filter(t => t),
                text: room.textContent,
                tops: blocks.map(b => Math.round(b.getBoundingClientRect().top)),
                fontSize: parseFloat(getComputedStyle(room).fontSize),
            };
        }""",
        scope,
    )
    return result


def _check_student_view(page: Any, scope: str) -> dict[str, Any]:
    seen = _room_text(page, scope)
    assert seen["heading"] == "Room: 4 holders on 2 GPUs", seen
    assert seen["titles"] == ["GPU 0", "GPU 1"], seen
    # auto share: 16 GiB over the 2 holders planned a GPU, two CUDA contexts set aside: 7 GiB
    # (+1 GiB of contexts); two other students' 2 GiB (+1 GiB each): 16 - 8 - 6 = 2 GiB left
    assert seen["facts"] == ["3 holders · 2 GiB not promised", "1 holder · 13 GiB not promised"]
    assert seen["who"] == ["you"] and len(seen["you"]) == 1, seen
    assert seen["you"][0].startswith("you share 7 GiB · last work "), seen
    assert seen["others"] == [OTHERS_0, "1 other student"], seen
    for name in ("alice", "bob", "carol", "kernel-of"):
        assert name not in seen["text"], (name, seen["text"])
    assert "counted, not named" in seen["text"]
    return seen


def _room_shot(page: Any, scope: str, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    room = page.locator(f"{scope} .gpudask-view .gpudask-room").first
    room.scroll_into_view_if_needed()
    room.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def _open_sidebar(page: Any) -> None:
    """Open the sidebar unless it is open: its tab clicked when it is not the current one, and
    clicked again where a page still starting let the click go (a new notebook's page)."""
    tab = page.locator(f'.lm-TabBar-tab[data-id="{SIDEBAR[1:]}"]')
    view = page.locator(f"{SIDEBAR} .gpudask-view")
    tab.wait_for(timeout=60_000)
    for _ in range(3):
        if view.is_visible():
            return
        if "lm-mod-current" not in (tab.get_attribute("class") or ""):
            tab.click()
        try:
            view.wait_for(state="visible", timeout=10_000)
            return
        except PlaywrightTimeout:
            continue
    view.wait_for(state="visible", timeout=10_000)


def _in_the_sidebar(page: Any, theme: str) -> None:
    _open_sidebar(page)
    sidebar_width(page, 250)
    _room_drawn(page, SIDEBAR)
    seen = _check_student_view(page, SIDEBAR)
    assert seen["tops"][0] < seen["tops"][1]  # one GPU under the other at 250 px
    no_sideways_scroll(page, SIDEBAR, ".gpudask-room")
    _room_shot(page, SIDEBAR, f"room-sidebar-250-{theme}")
    shot(page, f"room-lab-{theme}")
    assert axe_violations(page, SIDEBAR) == []


def _on_a_projector(page: Any, theme: str) -> None:
    """1280 x 720, the panel opened beside the notebook, the sidebar closed: the GPUs side by
    side, the text no smaller than the theme's."""
    page.set_viewport_size({"width": 1280, "height": 720})
    _open_sidebar(page)
    page.locator(f"{SIDEBAR} .gpudask-open").click()
    page.wait_for_selector(f"{MAIN} .gpudask-view", timeout=30_000)
    page.locator(f'.lm-TabBar-tab[data-id="{SIDEBAR[1:]}"]').click()  # close the sidebar
    _room_drawn(page, MAIN)
    seen = _check_student_view(page, MAIN)
    assert seen["tops"][0] == seen["tops"][1], seen  # side by side
    assert seen["fontSize"] >= 13, seen
    no_sideways_scroll(page, MAIN, ".gpudask-room")
    _room_shot(page, MAIN, f"room-projector-{theme}")
    shot(page, f"room-projector-1280x720-{theme}")
    assert axe_violations(page, MAIN) == []
    page.set_viewport_size({"width": 1600, "height": 1800})


def test_a_student_sees_the_room_in_the_panel_and_the_sidebar(
    room_lab: tuple[Lab, Path], browser: Any, sleeper: list[StandIn]
) -> None:
    lab, room = room_lab
    page = open_page(browser, 1600, 1800)  # tall: element screenshots show whole sections
    run_all(page, lab, lab.notebook("room.ipynb", CELLS), "placed")
    printed = page.locator(".jp-OutputArea-output").all_inner_texts()
    assert any("room: GPU 0 had nobody else" in t for t in printed), printed
    _other_students(room, sleeper)

    for theme in ("light", "dark"):
        if theme == "dark":
            set_theme(page, lab, dark=True)
        # the panel widget, fed in the kernel
        _room_drawn(page, PANEL, timeout=120_000)
        _check_student_view(page, PANEL)
        _room_shot(page, PANEL, f"room-panel-{theme}")
        assert axe_violations(page, f"{PANEL} .gpudask-view") == []
        # the sidebar, fed by the server for the notebook in focus: the same room, the same "you"
        _in_the_sidebar(page, theme)
        _on_a_projector(page, theme)
    set_theme(page, lab, dark=False)
    _a_second_notebook_of_the_same_account(page, lab)
    assert page.dialogs == []
    page.context.close()


SECOND = [*CELLS[:2], "print('second placed')"]


def _a_second_notebook_of_the_same_account(page: Any, lab: Lab) -> None:
    """The same student opens a second notebook and starts its cluster too: the sidebar, for
    the notebook in focus, marks that one "you" and names the first by its notebook, read from
    its kernel's environment (no file another user could read names it)."""
    run_all(page, lab, lab.notebook("second.ipynb", SECOND), "second placed")
    _open_sidebar(page)
    sidebar_width(page, 250)
    for theme in ("light", "dark"):
        if theme == "dark":
            set_theme(page, lab, dark=True)
            _open_sidebar(page)
            sidebar_width(page, 250)
        page.wait_for_function(  # the room is read every few seconds: both kernels in it
            """scope => {
                const who = [...document.querySelectorAll(scope + ' .gpudask-room-who')];
                return who.some(n => n.textContent === 'you (room.ipynb)')
                    && document.querySelector(scope + ' .gpudask-room-you') !== null;
            }""",
            arg=SIDEBAR,
            timeout=60_000,
        )
        seen = _room_text(page, SIDEBAR)
        assert seen["heading"] == "Room: 5 holders on 2 GPUs", seen
        assert sorted(seen["who"]) == ["you", "you (room.ipynb)"], seen
        assert len(seen["you"]) == 1 and seen["you"][0].startswith("you share "), seen
        no_sideways_scroll(page, SIDEBAR, ".gpudask-room")
        _room_shot(page, SIDEBAR, f"room-sidebar-two-notebooks-{theme}")
        assert axe_violations(page, SIDEBAR) == []
    set_theme(page, lab, dark=False)
