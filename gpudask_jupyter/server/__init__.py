"""The jupyter_server extension behind the JupyterLab sidebar.

One Monitor in the server process samples this machine's GPUs and, for every kernel that
started or attached a cluster (the per-kernel registry entries), that cluster's workers, task
stream and progress. Every browser tab shares it; it samples only while some tab polls. The
server also removes what its user's killed kernels left (:mod:`.tidy`).
"""

from __future__ import annotations

from typing import Any

from .handlers import setup_handlers


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "gpudask_jupyter.server"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    from . import tidy
    from .registry_monitor import use_kernel_manager

    setup_handlers(server_app.web_app)
    use_kernel_manager(getattr(server_app, "kernel_manager", None))
    server_app.web_app.settings["gpudask_tidy"] = tidy.start()  # stopped with the process
    server_app.log.info("gpudask_jupyter: GPU Dask sidebar API at /gpudask/api")


load_jupyter_server_extension = _load_jupyter_server_extension
