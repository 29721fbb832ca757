"""A panel streams while a view is there: views say hello when drawn and bye when disposed, and
the sampler runs only while some panel has a view. Outside a kernel the widget's comm sends
nowhere, which is enough to follow the views' bookkeeping."""

from __future__ import annotations

from typing import Any

import pytest

from gpudask_jupyter.widget import STATIC, Panel

pytestmark = pytest.mark.skipif(not STATIC.exists(), reason="front end not built (npm run build)")


def _say(panel: Panel, **content: Any) -> None:
    panel._handle_custom_msg(content, [])  # what ipywidgets calls for a view's message


def test_two_views_each_say_bye_and_the_sampler_stops_with_the_last() -> None:
    panel = Panel(interval=0.25)
    try:
        assert panel.views == 0 and not panel._monitor.running
        _say(panel, type="hello", view="a")
        _say(panel, type="hello", view="b")
        _say(panel, type="hello", view="a")  # a view resuming from pause says hello again
        assert panel.views == 2 and panel._monitor.running
        _say(panel, type="bye", view="a")
        assert panel.views == 1 and panel._monitor.running
        _say(panel, type="bye", view="b")
        assert panel.views == 0 and not panel._monitor.running
    finally:
        panel.close()


def test_views_without_an_id_count_as_one() -> None:
    panel = Panel(interval=0.25)
    try:
        _say(panel, type="hello")
        _say(panel, type="hello")
        assert panel.views == 1
        _say(panel, type="bye")
        assert panel.views == 0 and not panel._monitor.running
        _say(panel, type="something else", view=["not", "an", "id"])
        _say(panel, type="hello", view=7)  # not an id: counts as the anonymous view
        assert panel.views == 1
    finally:
        panel.close()
    assert not panel._monitor.running
