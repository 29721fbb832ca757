"""The panel's and the sidebar's buttons: start, stop, restart, scale, detach, run in the kernel.

Each control runs the ``%gpu_cluster`` line magic a user would type, in the kernel's own IPython,
so a button does exactly what the magic does (same checks, same errors, same registry entry).
What the magic prints is captured and turned into a short result for a view to show: whether it
worked, a few lines of plain words (no table borders, each warning once) and the cluster as it
is afterwards.

The panel calls :func:`run` when its view sends a ``control`` message; the sidebar executes
``run_json(...)`` of this module (:data:`~..schema.protocol.CONTROL_MODULE`) as code in the
focused kernel and reads the one line :data:`~..schema.protocol.RESULT_PREFIX` + JSON it prints.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

from .. import compat
from ..errors import GpuDaskError
from ..monitor import scheduler_probe
from ..schema.protocol import CONTROL_ACTIONS, RESULT_PREFIX, ActionResult, ResultCluster
from . import session as cluster_session

log = logging.getLogger(__name__)

MAX_LINES = 5
COUNT_TIMEOUT = 2.0
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PROGRESS = ("Starting the Dask cluster",)  # what the magic prints while it works


def run(action: str, n: int | None = None) -> ActionResult:
    """Run ``%gpu_cluster <action>`` in this kernel's IPython and say how it went. ``n``: the
    number of workers (``scale``, required; ``start``, optional). Never raises: a view waits
    for the answer, which must always come."""
    try:
        return _run(action, n)
    except Exception as err:
        log.warning("the control %r failed", action, exc_info=True)
        return _result(False, str(action), f"{type(err).__name__}: {err}")


def _run(action: str, n: int | None) -> ActionResult:
    refusal = _refusal(action, n)
    if refusal:
        return _result(False, action, refusal)
    already = _already(action)
    if already:
        return _result(True, action, already)
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return _result(False, action, "There is no IPython here to run %gpu_cluster in.")
    try:
        _load_extension(shell)
    except Exception as err:
        log.debug("loading the extension for a control failed", exc_info=True)
        return _result(False, action, f"gpudask_jupyter could not be loaded: {err}")
    return _run_magic(shell, action, _line(action, n))


def run_json(action: str, n: int | None = None) -> None:
    """:func:`run`, printed as one line ``GPUDASK_CONTROL_RESULT <json>`` for the sidebar."""
    print(RESULT_PREFIX + json.dumps(run(action, n)), flush=True)


def _refusal(action: str, n: int | None) -> str:
    """Why ``action`` cannot run as asked ("" when it can), before running anything."""
    if action not in CONTROL_ACTIONS:
        return f"Unknown control {action!r}; one of {', '.join(CONTROL_ACTIONS)}."
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        return f"{action}: the number of workers must be a whole number, 0 or more (got {n!r})."
    if action == "scale" and n is None:
        return "scale: say how many workers."
    session = cluster_session.current()
    if action == "detach":
        if session is None:
            return "No cluster to detach from."
        if session.mode != "attached":
            return (
                "This kernel started its cluster, so there is nothing to detach from; "
                "stop shuts it down."
            )
    return ""


def _already(action: str) -> str:
    """What a Start finds when this kernel's cluster runs already: a second click of Start (or
    a view whose frames lag one second behind) asks for what is there, which is no failure."""
    session = cluster_session.current()
    if action == "start" and session is not None and session.alive:
        return (
            f"A cluster is already running in this kernel ({session.mode}, scheduler "
            f"{session.address}): nothing to start."
        )
    return ""


def _line(action: str, n: int | None) -> str:
    if action == "scale":
        return f"scale {n}"
    if action == "start" and n is not None:
        return f"start --n-workers {n}"
    return "stop" if action == "detach" else action


def _load_extension(shell: Any) -> None:
    if "gpu_cluster" not in shell.magics_manager.magics["line"]:
        shell.run_line_magic("load_ext", "gpudask_jupyter")


def _run_magic(shell: Any, action: str, line: str) -> ActionResult:
    from IPython.core.error import UsageError
    from IPython.utils.capture import capture_output

    error = ""
    with capture_output(display=True) as captured:
        try:
            shell.run_line_magic("gpu_cluster", line)
        except (UsageError, GpuDaskError) as err:
            error = str(err)
        except KeyboardInterrupt as err:  # Ctrl-C: there is no cell to fail, the view is told
            error = str(err) or f"%gpu_cluster {action} interrupted."
        except Exception as err:
            log.warning("%%gpu_cluster %s failed", line, exc_info=True)
            error = f"{type(err).__name__}: {err}"
    said = _lines(captured.stdout) + _lines(captured.stderr)
    if error:
        return _result(False, action, "\n".join(_unique([*_lines(error), *said])[:MAX_LINES]))
    return _result(True, action, _success_text(action, said))


def _lines(text: str) -> list[str]:
    """Plain lines: no colour codes, no blanks, no progress messages, no "gpudask:" label (the
    view says where the text comes from)."""
    out = []
    for line in _ANSI.sub("", text).splitlines():
        line = line.strip().removeprefix("gpudask: ")
        if line and not line.startswith(_PROGRESS):
            out.append(line)
    return out


def _unique(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(lines))


def _success_text(action: str, said: list[str]) -> str:
    state = _cluster_state()
    if action == "start" and state is not None:
        kind = {"gpu": "GPU", "cpu": "CPU"}.get(state["mode"], state["mode"])
        workers = state["workers"]
        said = [
            f"Started a {kind} cluster: {workers} worker{'s' * (workers != 1)}, "
            f"scheduler {state['address']}.",
            *said,
        ]
    return "\n".join(_unique(said)[:MAX_LINES]) or f"{action}: done."


def _cluster_state() -> ResultCluster | None:
    session = cluster_session.current()
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


def _result(ok: bool, action: str, text: str) -> ActionResult:
    return ActionResult(ok=ok, action=action, text=text, cluster=_cluster_state(), time=time.time())
