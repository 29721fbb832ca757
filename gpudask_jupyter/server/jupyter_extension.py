"""The server extension's loading: the sidebar's authenticated routes, the kernel manager asked
whether kernels are gone, and the tidy-up of what killed kernels left, started with the server.
Jupyter finds these functions on the package, which takes them from here.
"""

from __future__ import annotations

from typing import Any

from . import tidy
from .handlers import setup_handlers
from .registry_monitor import use_kernel_manager


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "gpudask_jupyter.server"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    setup_handlers(server_app.web_app)
    use_kernel_manager(getattr(server_app, "kernel_manager", None))
    server_app.web_app.settings["gpudask_tidy"] = tidy.start()  # stopped with the process
    server_app.log.info("gpudask_jupyter: GPU Dask sidebar API at /gpudask/api")


load_jupyter_server_extension = _load_jupyter_server_extension
