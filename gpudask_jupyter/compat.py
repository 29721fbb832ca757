"""Every call this package makes into a private part of distributed, pandas or cuDF, in one place.

Private names change without notice between releases. Keeping each such call here, with the
versions it was checked on, means an upgrade breaks one function whose docstring says what it
relies on, not a line somewhere in the converters or the monitor. The GPU tests exercise the cuDF
and pandas functions; the CPU tests the distributed ones. ``pyproject.toml`` bounds the versions
from above at the newest release checked.

Nothing here is imported at package import time by anything that does not need it, and this
module imports none of the libraries at its own import.

Checked on: distributed 2024.8 – 2026.8; pandas 2.2 – 3.0; cuDF 26.10.
"""

from __future__ import annotations

from typing import Any

# -- distributed -----------------------------------------------------------------------------------


def run_on_scheduler(client: Any, function: Any, timeout: float, **kwargs: Any) -> Any:
    """Run ``function(dask_scheduler=..., **kwargs)`` in the scheduler, bounded by ``timeout``.

    ``Client.run_on_scheduler`` is public but takes no timeout in the call; its coroutine
    ``Client._run_on_scheduler`` (private; distributed 2024.8 – 2026.8) is driven through
    ``Client.sync`` with ``callback_timeout``, which bounds the whole round trip.
    """
    return client.sync(client._run_on_scheduler, function, callback_timeout=timeout, **kwargs)


def task_stream_plugin(scheduler: Any) -> Any:
    """The scheduler's task-stream plugin, installed on first use.

    ``Scheduler._task_stream_plugin`` is private (distributed 2024.8 – 2026.8): it returns the
    ``TaskStreamPlugin`` whose ``buffer`` (a deque of task records) and ``index`` (records seen
    since start) the dashboard's own task stream reads. Runs inside the scheduler.
    """
    return scheduler._task_stream_plugin()
