"""What the JupyterLab sidebar's buttons run in the focused kernel: the sidebar executes
``run_json(action, n)`` of this module (:data:`~..schema.protocol.CONTROL_MODULE`) as code and
reads the one line :data:`~..schema.protocol.RESULT_PREFIX` + JSON it prints. The button runs
on the kernel's own cluster, as the panel's do (:meth:`.shared_monitor.KernelView.control`)."""

from __future__ import annotations

import json
import logging
import time

from ..schema.protocol import RESULT_PREFIX, ActionResult
from .shared_monitor import this_kernel_view

log = logging.getLogger(__name__)


def run_json(action: str, n: int | None = None) -> None:
    """Run the button ``action`` (``n``: a number of workers) in this kernel and print its
    result as one line ``GPUDASK_CONTROL_RESULT <json>``."""
    try:
        view = this_kernel_view()
    except Exception as err:  # the sidebar waits for an answer, which must always come
        log.debug("loading the extension for a button failed", exc_info=True)
        result = ActionResult(
            ok=False,
            action=str(action),
            text=f"gpudask_jupyter could not be loaded: {err}",
            cluster=None,
            time=time.time(),
        )
    else:
        result = view.control(action, n)
    print(RESULT_PREFIX + json.dumps(result), flush=True)
