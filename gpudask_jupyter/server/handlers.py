"""Authenticated, authorized REST handlers for the sidebar. No route takes a URL or address
from the client: clusters are only those of the registry, addressed by kernel id."""

from __future__ import annotations

import logging
import math
import re
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado.ioloop import IOLoop
from tornado.web import HTTPError, authenticated

from ..machine import nvml
from ..monitor import BadCursor, Cursor
from ..schema.frame import clamp_interval
from ..schema.protocol import FRAME_ROUTE, KERNELS_ROUTE
from .registry_monitor import registry_sources, server_monitor

log = logging.getLogger(__name__)

_KERNEL_ID = re.compile(r"^[A-Za-z0-9_-]{0,128}$")


class _Handler(APIHandler):  # type: ignore[misc]
    auth_resource = "gpudask"

    def _argument(self, name: str, pattern: re.Pattern[str], default: str = "") -> str:
        value = str(self.get_argument(name, default))
        if not pattern.match(value):
            raise HTTPError(400, f"bad {name}")
        return value

    def _interval(self) -> float:
        """The ``interval`` argument, clamped to its range; not a finite number is a 400."""
        try:
            value = float(self.get_argument("interval", "1"))
        except ValueError:
            raise HTTPError(400, "bad interval") from None
        if not math.isfinite(value):
            raise HTTPError(400, "bad interval: not a finite number")
        return clamp_interval(value)


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
        interval = self._interval()
        monitor = server_monitor()
        consumer = f"{self.current_user.username if self.current_user else ''}:{kernel}"
        monitor.request(consumer, interval, kernel)

        frame, next_cursor = await IOLoop.current().run_in_executor(
            None, monitor.frame, kernel, since
        )
        self.finish({"frame": frame, "cursor": next_cursor.encode()})


class KernelsHandler(_Handler):
    """GET the kernels that have a cluster, and whether this machine's GPUs are visible."""

    @authenticated
    @authorized
    async def get(self) -> None:
        entries = await IOLoop.current().run_in_executor(None, registry_sources().entries)
        state = nvml.status()
        self.finish(
            {
                "kernels": [k for k in map(_described, entries.values()) if k is not None],
                "nvml": {"available": state.available, "reason": state.reason},
            }
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _described(entry: Any) -> dict[str, str | None] | None:
    """An entry as the sidebar lists it; None for one that is not a description of a kernel's
    cluster (the reader validates entries; this keeps a route from failing on one it missed)."""
    kernel_id = _text(getattr(entry, "kernel_id", None))
    address = _text(getattr(entry, "scheduler_address", None))
    if not kernel_id or not address:
        log.debug("leaving out a malformed registry entry: %r", entry)
        return None
    return {
        "kernel_id": kernel_id,
        "mode": _text(getattr(entry, "mode", None)),
        "scheduler_address": address,
        "dashboard_link": _text(getattr(entry, "dashboard_link", None)),
    }


ROUTES = [(FRAME_ROUTE, FrameHandler), (KERNELS_ROUTE, KernelsHandler)]


def setup_handlers(web_app: Any) -> None:
    base = web_app.settings["base_url"]
    web_app.add_handlers(
        ".*$", [(url_path_join(base, route), handler) for route, handler in ROUTES]
    )
