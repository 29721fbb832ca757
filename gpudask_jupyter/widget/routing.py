"""Where a view's messages to its panel are handled: on which of the kernel's shells, and which
thread runs a button.

JupyterLab 4.6 sends a widget's messages by a kernel subshell (one per comm target), whose
thread handles them even while a cell runs. ipykernel 7.4 then routes each message to a comm to
the subshell of the last message the comm published under: once a hello came by a page's
subshell, every later message goes there, a reloaded page's too, and when that page's subshell
is deleted the kernel drops them all ("Unknown subshell_id"), so the new page's view never gets
its snapshot. A panel's messages are never replies a cell waits for, so :func:`route_to_sender`
sends each where its front end sent it, as kernels without that routing do.

A button runs the ``%gpu_cluster`` magic, which a cell may be running at the same time, and
captures what the magic prints, which would take the running cell's output as well:
:func:`on_main_thread` runs it on the kernel's main thread, after the cell, as comm messages
run where the front end uses no subshell.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def route_to_sender(comm: Any) -> None:
    """Have the kernel hand ``comm``'s incoming messages to the shell they were sent to (a comm
    without ipykernel's reply routing is left as it is)."""
    if comm is not None and callable(getattr(comm, "_reply_subshell_for", None)):
        comm._reply_subshell_for = _as_sent


def _as_sent(data: Any, sent_to: str | None) -> str | None:
    return sent_to


def on_main_thread(run: Callable[..., None], *args: Any) -> None:
    """Call ``run(*args)`` now if this is the main thread, else on the kernel's main event loop,
    once the cell running there ends; where there is no kernel loop, now."""
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
