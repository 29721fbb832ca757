"""The panel's and the sidebar's buttons: start, stop, restart, scale, detach.

Each button calls the Python the ``%gpu_cluster`` magic calls (:mod:`.commands`, through
:mod:`.operations`, so Ctrl-C cannot cut it in half), with what the magic's defaults give (the
options of :mod:`...config`), and gets back what the command did: the session, the retirement,
the results lost. The sentences are the magic's own (``commands.stopped_lines`` and the like),
the warnings are collected instead of printed, and a view gets a short result: whether it
worked, a few lines of plain words and the cluster as it is afterwards.

The panel calls :func:`run` when its view sends a ``control`` message (given the kernel's
cluster by whoever made the panel); the sidebar executes ``run_json(...)`` of the extension
(:data:`~..schema.protocol.CONTROL_MODULE`) as code in the focused kernel, which finds the
kernel's cluster and calls :func:`run`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from .. import compat
from ..errors import GpuDaskError
from ..monitor import scheduler_probe
from ..schema.protocol import CONTROL_ACTIONS, ActionResult, ResultCluster
from . import commands
from .options import StartOptions
from .session import KernelCluster

log = logging.getLogger(__name__)

MAX_LINES = 5
COUNT_TIMEOUT = 2.0


def run(kernel: KernelCluster, action: str, n: int | None = None) -> ActionResult:
    """Run ``%gpu_cluster <action>`` in this kernel's IPython and say how it went. ``n``: the
    number of workers (``scale``, required; ``start``, optional). Never raises: a view waits
    for the answer, which must always come."""
    try:
        return _run(kernel, action, n)
    except Exception as err:
        log.warning("the control %r failed", action, exc_info=True)
        return _result(kernel, False, str(action), f"{type(err).__name__}: {err}")


def _run(kernel: KernelCluster, action: str, n: int | None) -> ActionResult:
    refusal = _refusal(kernel, action, n)
    if refusal:
        return _result(kernel, False, action, refusal)
    already = _already(kernel, action)
    if already:
        return _result(kernel, True, action, already)
    warnings: list[str] = []
    try:
        kernel.imports.under_way()
        said = _command(kernel, action, n, warnings.append)
    except GpuDaskError as err:
        kernel.errors.remember(err)
        return _result(kernel, False, action, _text([*str(err).splitlines(), *warnings]))
    except KeyboardInterrupt:  # Ctrl-C: there is no cell to fail, the view is told
        return _result(kernel, False, action, f"%gpu_cluster {action} interrupted.")
    return _result(kernel, True, action, _text([*said, *warnings]) or f"{action}: done.")


def _command(
    kernel: KernelCluster, action: str, n: int | None, warn: Callable[[str], None]
) -> list[str]:
    """Run the command of ``action``, as the magic would; what it says once done."""
    if action == "start":
        session, _ = commands.start(kernel, StartOptions(n_workers=n), warn=warn)
        state = _cluster_state(kernel)
        return commands.started_lines(session, state["workers"] if state else 0)
    if action in {"stop", "detach"}:
        return commands.stopped_lines(*commands.stop(kernel))
    if action == "restart":
        commands.restart(kernel)
        return [commands.RESTARTED]
    assert action == "scale" and n is not None  # _refusal asked for both
    return commands.scaled_lines(n, commands.scale(kernel, n))


def _refusal(kernel: KernelCluster, action: str, n: int | None) -> str:
    """Why ``action`` cannot run as asked ("" when it can), before running anything."""
    if action not in CONTROL_ACTIONS:
        return f"Unknown control {action!r}; one of {', '.join(CONTROL_ACTIONS)}."
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        return f"{action}: the number of workers must be a whole number, 0 or more (got {n!r})."
    if action == "scale" and n is None:
        return "scale: say how many workers."
    session = kernel.current()
    if action == "detach":
        if session is None:
            return "No cluster to detach from."
        if session.mode != "attached":
            return (
                "This kernel started its cluster, so there is nothing to detach from; "
                "stop shuts it down."
            )
    return ""


def _already(kernel: KernelCluster, action: str) -> str:
    """What a Start finds when this kernel's cluster runs already: a second click of Start (or
    a view whose frames lag one second behind) asks for what is there, which is no failure."""
    session = kernel.current()
    if action == "start" and session is not None and session.alive:
        return (
            f"A cluster is already running in this kernel ({session.mode}, scheduler "
            f"{session.address}): nothing to start."
        )
    return ""


def _text(lines: list[str]) -> str:
    """At most :data:`MAX_LINES` lines, each once."""
    return "\n".join(list(dict.fromkeys(line for line in lines if line))[:MAX_LINES])


def _cluster_state(kernel: KernelCluster) -> ResultCluster | None:
    session = kernel.current()
    if session is None:
        return None
    try:
        alive = bool(session.alive)
        workers = _worker_count(session.client) if alive else 0
        return ResultCluster(
            state="running" if alive else "closed",
            mode=session.mode,
            address=session.address,
            workers=workers,
            dashboard=session.dashboard_link,
        )
    except Exception:
        log.debug("cannot describe the kernel's cluster", exc_info=True)
        return None


def _worker_count(client: Any) -> int:
    scheduler_probe.ship_by_value()
    try:
        return int(compat.run_on_scheduler(client, scheduler_probe.worker_count, COUNT_TIMEOUT))
    except Exception:  # a scheduler that does not answer: the count is unknown
        log.debug("cannot count the workers", exc_info=True)
        return 0


def _result(kernel: KernelCluster, ok: bool, action: str, text: str) -> ActionResult:
    return ActionResult(
        ok=ok, action=action, text=text, cluster=_cluster_state(kernel), time=time.time()
    )
