"""The panel widget: per-GPU utilisation and memory with the Dask task stream, live.

``Panel()`` (or ``%gpu_cluster panel``) shows an anywidget whose front end is bundled in the
wheel (``static/panel.js``, built from ``labextension/src``: the same view as the JupyterLab
sidebar). The kernel's shared :class:`~..monitor.Monitor` (:mod:`.shared_monitor`) samples on
its own thread; each panel sends its views only what is new since the last frame, as a custom
message, and only while a view is there: the view says ``hello`` when it is drawn and ``bye``
when it is disposed (re-running the cell, closing the output), so a panel nobody sees costs
nothing, and the sampler stops with the last view. The views' buttons arrive as ``control``
messages and run through :mod:`..magics.controls`. The first panel registers :func:`close_all` with
:mod:`..lifecycle`, so ``%unload_ext`` closes every panel and stops the sampler.

Where no widget front end exists (a terminal, ``jupyter console``), :func:`show_panel` prints a
text snapshot instead (:mod:`.snapshot`), and the widget's ``text/plain`` is that snapshot, which
executed notebooks keep.
"""

from __future__ import annotations

import logging
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from .. import lifecycle
from ..monitor import Cursor
from ..schema.frame import DEFAULT_HISTORY, DEFAULT_INTERVAL, clamp_history, clamp_interval
from ..schema.protocol import (
    ControlResultMessage,
    ControlStartedMessage,
    FrameMessage,
    KernelMessage,
)
from .shared_monitor import KEY, kernel_monitor, stop_kernel_monitor
from .snapshot import snapshot_text

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static" / "panel.js"
REPR_WAIT = 1.0
"""Seconds the widget's text/plain waits for the scheduler when no panel samples yet."""

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
        self._views: set[str] = set()  # views that said hello and not yet bye
        self._token: int | None = None
        self._send_lock = threading.RLock()
        lifecycle.on_unload(close_all, lifecycle.VIEWS)
        self._monitor = kernel_monitor()
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

    # -- the views ------------------------------------------------------------------------------

    @property
    def views(self) -> int:
        """How many views are drawing this panel now (as far as they said)."""
        return len(self._views)

    def _on_message(self, _: Any, content: Any, buffers: list[bytes]) -> None:
        """A view's message: ``hello`` (drawn, or resumed), ``bye`` (disposed), ``control`` (a
        button). A ``view`` id in hello and bye, where a view sends one, tells two views of one
        panel apart; without it, one bye stands for every view."""
        if not isinstance(content, dict):
            return
        kind, view = content.get("type"), content.get("view")
        view = view if isinstance(view, str) else ""
        if kind == "hello":
            self._hello(view)
        elif kind == "bye":
            self._bye(view)
        elif kind == "control":
            self._control(content)

    def _hello(self, view: str) -> None:
        with self._send_lock:
            self._views.add(view)
            self._cursor = None
            if self._token is None and self.comm is not None:
                self._token = self._monitor.subscribe(
                    self._tick, self.interval, self.history, self.processes
                )
        self._send_frame()

    def _bye(self, view: str) -> None:
        with self._send_lock:
            self._views.discard(view)
            if self._views:
                return
        self._unsubscribe()

    def _unsubscribe(self) -> None:
        """Stop the frames (and the sampler, if no other panel has a view). Not under the send
        lock: stopping the sampler waits for its thread, which may be waiting for that lock."""
        with self._send_lock:
            token, self._token = self._token, None
        if token is not None:
            self._monitor.unsubscribe(token)

    def _tick(self) -> None:
        if self._views and not self.paused:
            self._send_frame()

    def _send_frame(self) -> None:
        with self._send_lock:
            if not self._views:
                return
            frame, self._cursor = self._monitor.frame(KEY, self._cursor, self.history)
            if self._send_to_views(FrameMessage(type="frame", frame=frame)):
                return
            self._views.clear()  # nobody can receive frames: stop making them
        self._unsubscribe()

    def _send_to_views(self, content: KernelMessage) -> bool:
        try:
            if self.comm is None:
                return False
            self.send(content)
        except Exception:
            log.debug("a panel message could not be sent", exc_info=True)
            return False
        return True

    def _control(self, content: dict[str, Any]) -> None:
        """A button of a view: run it (on the kernel's main thread, where comm messages are
        handled, after any running cell) and answer with its result."""
        from ..magics import controls

        ident: Any = content.get("id")  # echoed as the view sent it
        n = content.get("n")
        self._send_to_views(ControlStartedMessage(type="control-started", id=ident))
        result = controls.run(str(content.get("action")), n if isinstance(n, int) else None)
        self._send_to_views(ControlResultMessage(type="control-result", id=ident, **result))

    # -- text ----------------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, with the text snapshot as its ``text/plain`` (what a notebook executed
        without a browser keeps)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        return {**data, "text/plain": snapshot_text(REPR_WAIT)}, metadata

    def close(self) -> None:
        with self._send_lock:
            self._views.clear()
        self._unsubscribe()
        super().close()


def close_all() -> None:
    """Close every panel of the kernel, then stop the sampler they shared (``%unload_ext``)."""
    for panel in list(_panels):
        panel.close()
    stop_kernel_monitor()


def widget_front_end() -> bool:
    """Whether a widget can be drawn where this runs: in an IPython kernel (JupyterLab, Notebook,
    VS Code, Voilà, nbconvert/papermill keep the widget and its text), not in a terminal."""
    shell_module = sys.modules.get("ipykernel.zmqshell")
    if shell_module is None:
        return False
    from IPython import get_ipython

    return isinstance(get_ipython(), shell_module.ZMQInteractiveShell)


def show_panel(text: bool | None = None, **options: Any) -> Panel | None:
    """What ``%gpu_cluster panel`` shows: a live panel with ``options`` (interval, history,
    processes) in the cell's output; or, with ``text`` (default: where no widget front end
    exists), a text snapshot printed once, starting nothing. The one entry point of the magic,
    so the choice of what to show where lives here, beside the panel."""
    if text is None:
        text = not widget_front_end()
    if text:
        print(snapshot_text(), flush=True)
        return None
    from IPython.display import display

    panel = Panel(**options)
    display(panel)
    return panel
