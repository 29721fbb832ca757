"""The panel widget: per-GPU utilisation and memory with the Dask task stream, live.

``Panel()`` (or ``%gpu_cluster panel``) shows an anywidget whose front end is bundled in the
wheel (``static/panel.js``, built from ``labextension/src``: the same view as the JupyterLab
sidebar). The kernel's shared :class:`~..monitor.Monitor` (:mod:`.shared_monitor`) samples on
its own thread; each panel sends its view only what is new since the last frame, as a custom
message. The first panel registers :func:`close_all` with :mod:`..lifecycle`, so ``%unload_ext``
closes every panel and stops the sampler.
"""

from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from .. import lifecycle
from ..frame import DEFAULT_HISTORY, DEFAULT_INTERVAL, clamp_history, clamp_interval
from ..monitor import Cursor
from .shared_monitor import KEY, kernel_monitor, stop_kernel_monitor

STATIC = Path(__file__).parent / "static" / "panel.js"

_panels: weakref.WeakSet[Panel] = weakref.WeakSet()


def _bundle() -> Path:
    if not STATIC.exists():
        raise FileNotFoundError(
            f"the panel's front end is not built ({STATIC.name} missing): install the package with "
            "pip, or run `npm run build` in labextension/"
        )
    return STATIC


class Panel(anywidget.AnyWidget):  # type: ignore[misc]
    """Live GPU utilisation and memory, task stream and progress of the kernel's cluster."""

    _esm = traitlets.Unicode().tag(sync=True)
    interval = traitlets.Float(DEFAULT_INTERVAL).tag(sync=True)
    paused = traitlets.Bool(False).tag(sync=True)
    history = traitlets.Float(DEFAULT_HISTORY).tag(sync=True)
    processes = traitlets.Bool(False).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        from .. import config

        kwargs.setdefault("interval", config.get("refresh-interval"))
        kwargs.setdefault("history", config.get("history"))
        super().__init__(_esm=_bundle().read_text(), **kwargs)
        self._cursor: Cursor | None = None
        self._ready = False  # a view said hello: frames have somewhere to go
        self._send_lock = threading.Lock()
        lifecycle.on_unload(close_all, lifecycle.VIEWS)
        self._monitor = kernel_monitor()
        self._token: int | None = self._monitor.subscribe(
            self._tick, self.interval, self.history, self.processes
        )
        self.on_msg(self._on_message)
        _panels.add(self)

    @traitlets.validate("interval")
    def _valid_interval(self, proposal: dict[str, Any]) -> float:
        return clamp_interval(proposal["value"])

    @traitlets.validate("history")
    def _valid_history(self, proposal: dict[str, Any]) -> float:
        return clamp_history(proposal["value"])

    @traitlets.observe("interval", "history", "processes")
    def _settings_changed(self, change: dict[str, Any]) -> None:
        token = getattr(self, "_token", None)
        if token is not None:
            self._monitor.update(token, **{change["name"]: change["new"]})

    @traitlets.observe("paused")
    def _paused_changed(self, change: dict[str, Any]) -> None:
        if not change["new"]:
            self._cursor = None  # resume with a fresh snapshot

    def _on_message(self, _: Any, content: dict[str, Any], buffers: list[bytes]) -> None:
        if isinstance(content, dict) and content.get("type") == "hello":
            self._cursor = None
            self._ready = True
            self._send_frame()

    def _tick(self) -> None:
        if self._ready and not self.paused:
            self._send_frame()

    def _send_frame(self) -> None:
        with self._send_lock:
            frame, self._cursor = self._monitor.frame(KEY, self._cursor, self.history)
            self.send({"type": "frame", "frame": frame})

    def close(self) -> None:
        token, self._token = getattr(self, "_token", None), None
        if token is not None:
            self._monitor.unsubscribe(token)
        super().close()


def close_all() -> None:
    """Close every panel of the kernel, then stop the sampler they shared (``%unload_ext``)."""
    for panel in list(_panels):
        panel.close()
    stop_kernel_monitor()


def show_panel(**options: Any) -> Panel:
    """What ``%gpu_cluster panel`` shows: a live panel with ``options`` (interval, history,
    processes), displayed in the cell's output. The one entry point of the magic, so the choice of
    what to show where lives here, beside the panel."""
    from IPython.display import display

    panel = Panel(**options)
    display(panel)
    return panel
