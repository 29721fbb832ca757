"""Authenticated, authorized REST handlers for the sidebar. No route takes a URL or address
from the client: clusters are only those of the registry, addressed by kernel id."""

from __future__ import annotations

import re
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado.ioloop import IOLoop
from tornado.web import HTTPError, authenticated

from ..frame import clamp_interval
from ..monitor import BadCursor, Cursor
from .registry_monitor import registry_sources, server_monitor

_KERNEL_ID = re.compile(r"^[A-Za-z0-9_-]{0,128}$")


class _Handler(APIHandler):  # type: ignore[misc]
    auth_resource = "gpudask"

    def _argument(self, name: str, pattern: re.Pattern[str], default: str = "") -> str:
        value = str(self.get_argument(name, default))
        if not pattern.match(value):
            raise HTTPError(400, f"bad {name}")
        return value


class FrameHandler(_Handler):
    """GET a frame for one kernel's cluster since a cursor (empty cursor: a snapshot)."""

    @authenticated
    @authorized
    async def get(self) -> None:
        kernel = self._argument("kernel", _KERNEL_ID)
        try:
            since = Cursor.decode(self.get_argument("cursor", ""))
        except BadCursor:
            raise HTTPError(400, "bad cursor") from None
        try:
            interval = clamp_interval(float(self.get_argument("interval", "1")))
        except ValueError:
            raise HTTPError(400, "bad interval") from None
        monitor = server_monitor()
        consumer = f"{self.current_user.username if self.current_user else ''}:{kernel}"
        monitor.request(consumer, interval)

        frame, next_cursor = await IOLoop.current().run_in_executor(
            None, monitor.frame, kernel, since
        )
        self.finish({"frame": frame, "cursor": next_cursor.encode()})


class KernelsHandler(_Handler):
    """GET the kernels that have a cluster, and whether this machine's GPUs are visible."""

    @authenticated
    @authorized
    async def get(self) -> None:
        from .. import nvml

        entries = await IOLoop.current().run_in_executor(None, registry_sources().entries)
        state = nvml.status()
        self.finish(
            {
                "kernels": [
                    {
                        "kernel_id": e.kernel_id,
                        "mode": e.mode,
                        "scheduler_address": e.scheduler_address,
                        "dashboard_link": e.dashboard_link,
                    }
                    for e in entries.values()
                ],
                "nvml": {"available": state.available, "reason": state.reason},
            }
        )


ROUTES = [("gpudask/api/frame", FrameHandler), ("gpudask/api/kernels", KernelsHandler)]


def setup_handlers(web_app: Any) -> None:
    base = web_app.settings["base_url"]
    web_app.add_handlers(
        ".*$", [(url_path_join(base, route), handler) for route, handler in ROUTES]
    )
