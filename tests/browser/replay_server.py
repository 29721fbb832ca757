"""A test-only Jupyter server extension: the sidebar's frame route answers from a recording.

Enabled for the test server only (conftest.py's ``replay_lab``, with this directory on
PYTHONPATH). It swaps the server's monitor for a Replayer: every kernel gets the recording
(replay.py picks it: $GPUDASK_REPLAY, else the GPU recording when there is one), as a snapshot
first, then keepalive deltas. The route, its authentication and its cursor handling stay the
package's own.
"""

from __future__ import annotations

from typing import Any

from replay import Replayer


class ReplayMonitor:
    """What the frame handler asks of the server's monitor, answered from a recording."""

    def __init__(self) -> None:
        self._replayer = Replayer()
        self._count = 0

    def request(self, consumer: str, interval: float, kernel: str = "") -> None:
        pass

    def frame(self, key: str, since: Any = None, history: float | None = None) -> tuple[Any, Any]:
        from gpudask_jupyter.monitor import Cursor

        self._count += 1
        return self._replayer.frame(since is None), Cursor(self._count, self._count, 1)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "replay_server"}]


def _load_jupyter_server_extension(app: Any) -> None:
    from gpudask_jupyter.server import handlers

    monitor = ReplayMonitor()
    module: Any = handlers  # the frame handler looks server_monitor up here on each request
    module.server_monitor = lambda: monitor
    app.log.info("gpudask replay: the frame route answers from a recording")
