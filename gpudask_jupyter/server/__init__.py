"""The jupyter_server extension behind the JupyterLab sidebar.

One Monitor in the server process samples this machine's GPUs and, for every kernel that
started or attached a cluster (the per-kernel registry entries), that cluster's workers, task
stream and progress. Every browser tab shares it; it samples only while some tab polls. The
server also removes what its user's killed kernels left (:mod:`.tidy`).
"""

from __future__ import annotations

from .jupyter_extension import (
    _jupyter_server_extension_points,
    _load_jupyter_server_extension,
    load_jupyter_server_extension,
)

__all__ = [
    "_jupyter_server_extension_points",
    "_load_jupyter_server_extension",
    "load_jupyter_server_extension",
]
