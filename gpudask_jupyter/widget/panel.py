"""The panel widget: per-GPU utilisation and memory with the Dask task stream, live.

``Panel()`` (or ``%gpu_cluster panel``) shows an anywidget whose front end is bundled in the
wheel (``static/panel.js``, built from ``labextension/src``: the same view as the JupyterLab
sidebar). The kernel's shared :class:`~..monitor.Monitor` (:mod:`.shared_monitor`) samples on
its own thread; each panel sends its views only what is new since the last frame, as a custom
message, and only while a view is there: the view says ``hello`` when it is drawn and ``bye``
when it is disposed (re-running the cell, closing the output), so a panel nobody sees costs
nothing, and the sampler stops with the last view. The views' buttons arrive as ``control``
messages and run on the kernel's cluster (:meth:`.shared_monitor.KernelView.control`). Every
panel belongs to its kernel's view (:class:`.shared_monitor.KernelView`), which the extension
closes on ``%unload_ext``: every panel, and the sampler.

Where no widget front end exists (a terminal, ``jupyter console``), :func:`show_panel` prints a
text snapshot instead (:mod:`.snapshot`), and the widget's ``text/plain`` is that snapshot, which
executed notebooks keep.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from .. import config
from ..monitor import Cursor
from ..schema.frame import DEFAULT_HISTORY, DEFAULT_INTERVAL, clamp_history, clamp_interval
from ..schema.protocol import (
    PANEL_MIME,
    ControlResultMessage,
    ControlStartedMessage,
    FrameMessage,
    KernelMessage,
)
from .routing import on_main_thread, route
from .shared_monitor import KEY, KernelView, in_a_kernel, this_kernel_view
from .snapshot import snapshot_text

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static" / "panel.js"
REPR_WAIT = 1.0
"""Seconds the widget's text/plain waits for the scheduler when no panel samples yet."""
UNANNOUNCED = "\0unannounced"
"""The view a displayed panel assumes until one says hello (see :meth:`Panel._expect_view`)."""
UNANNOUNCED_FOR = 600.0
"""Seconds a displayed panel sends frames while cells run with no view having said hello."""
IDLE_GRACE = 3.0
"""Seconds it goes on once the cells have run: a front end's hello comes then, or none will."""


def _bundle() -> Path:
    if not STATIC.exists():
        raise FileNotFoundError(
            f"the panel's front end is not built ({STATIC.name} missing): install the package with "
            "pip, or run `npm run build` in labextension/"
        )
    return STATIC


class Panel(anywidget.AnyWidget):  # type: ignore[misc]
    """Live GPU utilisation and memory, task stream and progress of the kernel's cluster.

    What ``%gpu_cluster panel`` shows: displayed in a notebook cell (as a cell's last value, or
    with ``display``), it samples on a background thread of the kernel while a view draws it,
    and stops when the last view goes. Without a GPU, NVML or a cluster it says which and shows
    what it can; where no widget can be drawn its ``text/plain`` is a text snapshot. The
    settings below are traitlets: the panel's own controls change them, and so can code.

    Parameters
    ----------
    interval : float, optional
        Seconds between samples, clamped to 0.25–10 (default: the ``refresh-interval``
        option).
    history : float, optional
        Seconds of GPU history and task stream to keep, clamped to 10–3600 (default: the
        ``history`` option).
    processes : bool, default False
        Also list your GPU processes (other users' only as a count).
    paused : bool, default False
        Stop sending new samples to the views until set to False again.
    view : KernelView, optional
        The kernel whose cluster it shows: by default the one this runs in (loading the
        extension there, as ``%load_ext gpudask_jupyter`` would).
    **kwargs
        Passed on to ``anywidget.AnyWidget`` (``layout``, for example).

    Attributes
    ----------
    views : int
        How many views are drawing the panel now.

    Raises
    ------
    FileNotFoundError
        The panel's front end is not built (a source checkout without ``npm run build``); a
        package installed with pip has it.

    See Also
    --------
    close : Stop the panel's samples and remove it from every view.

    Examples
    --------
    >>> from gpudask_jupyter import Panel
    >>> panel = Panel(interval=0.5, history=600)
    >>> panel.interval, panel.history, panel.processes, panel.paused
    (0.5, 600.0, False, False)
    >>> panel.interval = 60  # outside 0.25–10 seconds: clamped
    >>> panel.interval
    10.0
    >>> panel.views  # no front end has drawn it
    0
    >>> panel.close()

    In a notebook cell, the live panel (the same as ``%gpu_cluster panel``):

    >>> Panel()  # doctest: +SKIP
    """

    _esm = traitlets.Unicode().tag(sync=True)
    interval = traitlets.Float(DEFAULT_INTERVAL).tag(sync=True)
    paused = traitlets.Bool(False).tag(sync=True)
    history = traitlets.Float(DEFAULT_HISTORY).tag(sync=True)
    processes = traitlets.Bool(False).tag(sync=True)

    def __init__(self, view: KernelView | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("interval", config.get("refresh-interval"))
        kwargs.setdefault("history", config.get("history"))
        super().__init__(_esm=_bundle().read_text(), **kwargs)
        self._cursor: Cursor | None = None
        self._views: set[str] = set()  # views that said hello and not yet bye
        self._token: int | None = None
        self._unannounced_until = 0.0  # monotonic; see _expect_view
        self._send_lock = threading.RLock()
        self._view = view if view is not None else this_kernel_view()
        self._monitor = self._view.monitor()
        self.on_msg(self._on_message)
        route(self.comm)
        self._view.add(self)

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
        return len(self._views - {UNANNOUNCED})

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
            on_main_thread(self._control, content)

    def _expect_view(self) -> None:
        """Displayed: send frames at once, before any view says hello.

        A view's hello reaches the kernel only once the kernel is idle: under Run All, or in
        Voila, the cells after the panel's are queued before it. Frames travel the other way at
        any time (from the sampler's thread), so the panel starts as if a view had said hello,
        until one does (its hello then brings a fresh snapshot). Where no front end draws it
        (a notebook executed by nbconvert), nobody ever will: the frames stop
        :data:`IDLE_GRACE` seconds after the cells have run
        (:meth:`.shared_monitor.KernelView._cells_ran`)."""
        with self._send_lock:
            if self._views or self.paused:
                return
            self._unannounced_until = time.monotonic() + UNANNOUNCED_FOR
            self._views.add(UNANNOUNCED)
            self._cursor = None
            if self._token is None and self.comm is not None:
                self._token = self._monitor.subscribe(
                    self._tick, self.interval, self.history, self.processes
                )

    def _cells(self, running: bool) -> None:
        """A cell starts (``running``) or has run: while cells run the unannounced frames go
        on; once they have run, for :data:`IDLE_GRACE` seconds more."""
        with self._send_lock:
            now = time.monotonic()
            if self._views != {UNANNOUNCED} or now > self._unannounced_until:
                return
            self._unannounced_until = now + (UNANNOUNCED_FOR if running else IDLE_GRACE)

    def _hello(self, view: str) -> None:
        with self._send_lock:
            self._views.discard(UNANNOUNCED)
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
            if not view:  # a view without an id: its bye stands for every view
                self._views.discard(UNANNOUNCED)
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
        if self._views == {UNANNOUNCED} and time.monotonic() > self._unannounced_until:
            self._bye(UNANNOUNCED)  # displayed where no view ever said hello
            return
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
        """A button of a view: run it (on the kernel's main thread, after any running cell:
        :mod:`.routing`) and answer with its result."""
        ident: Any = content.get("id")  # echoed as the view sent it
        n = content.get("n")
        self._send_to_views(ControlStartedMessage(type="control-started", id=ident))
        result = self._view.control(str(content.get("action")), n if isinstance(n, int) else None)
        self._send_to_views(ControlResultMessage(type="control-result", id=ident, **result))

    # -- text ----------------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, with the text snapshot as its ``text/plain`` (what a notebook executed
        without a browser keeps) and the marker :data:`PANEL_MIME`, by which the JupyterLab
        plugin tells this panel's output apart once its model is gone (a saved notebook,
        reopened with a new kernel)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        self._expect_view()
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        return {
            **data,
            PANEL_MIME: {},
            "text/plain": snapshot_text(self._view, REPR_WAIT),
        }, metadata

    def close(self) -> None:
        with self._send_lock:
            self._views.clear()
        self._unsubscribe()
        super().close()


def widget_front_end() -> bool:
    """Whether a widget can be drawn where this runs: in an IPython kernel (JupyterLab, Notebook,
    VS Code, Voilà, nbconvert/papermill keep the widget and its text), not in a terminal."""
    return in_a_kernel()


def show_panel(
    text: bool | None = None, view: KernelView | None = None, **options: Any
) -> Panel | None:
    """What ``%gpu_cluster panel`` shows: a live panel with ``options`` (interval, history,
    processes) in the cell's output; or, with ``text`` (default: where no widget front end
    exists), a text snapshot printed once, starting nothing. The one entry point of the magic,
    so the choice of what to show where lives here, beside the panel."""
    if text is None:
        text = not widget_front_end()
    view = view if view is not None else this_kernel_view()
    if text:
        print(snapshot_text(view), flush=True)
        return None
    from IPython.display import display

    panel = Panel(view, **options)
    display(panel)
    return panel
