"""Where a view's messages to its panel are handled: on which of the kernel's shells.

JupyterLab 4.6 sends a widget's messages by a kernel subshell (one per comm target), whose
thread handles them even while a cell runs. ipykernel 7.4 then routes each message to a comm to
the subshell of the last message the comm published under: once a hello came by a page's
subshell, every later message went there, a reloaded page's too, and when that page's subshell
was deleted the kernel dropped them all ("Unknown subshell_id"), so the new page's view never got
its snapshot. So :func:`route` sends a hello or bye where its front end sent it, and a button to
the main shell: a button runs the ``%gpu_cluster`` magic, which a cell may be running, and
captures what it prints, which would take a running cell's output too. On the main shell it runs
as in a front end without subshells: after the running cell and the cells queued before it,
with the kernel busy meanwhile and Ctrl-C able to interrupt it.

Where a kernel hands a button to another thread without that routing (subshells, but no route
to choose), :func:`on_main_thread` moves it to the kernel's main event loop instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .. import compat

log = logging.getLogger(__name__)


def route(comm: Any) -> None:
    """Have the kernel hand ``comm``'s buttons to the main shell and its other messages to the
    shell they were sent to (a comm without ipykernel's routing is left as it is)."""
    compat.route_replies(comm, lambda data, sent_to: None if is_control(data) else sent_to)


def is_control(data: Any) -> bool:
    """Whether a comm message's data is a view's button (an anywidget custom message)."""
    content = data.get("content") if isinstance(data, dict) else None
    return isinstance(content, dict) and content.get("type") == "control"


def on_main_thread(run: Callable[..., None], *args: Any) -> None:
    """Call ``run(*args)`` now if this is the main thread, else on the kernel's main event loop,
    once the main thread is free; where there is no kernel loop, now."""
    if threading.current_thread() is threading.main_thread():
        run(*args)
        return
    from IPython import get_ipython

    loop = getattr(getattr(get_ipython(), "kernel", None), "io_loop", None)
    if loop is None:
        log.debug("no kernel event loop: %s runs on this thread", getattr(run, "__name__", run))
        run(*args)
        return
    loop.add_callback(run, *args)
