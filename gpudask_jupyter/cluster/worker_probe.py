"""Code that runs inside Dask workers to say which GPU each one is bound to.

It is shipped by value (cloudpickle), so workers on other machines need only the standard
library and, for GPU details, nvidia-ml-py; gpudask_jupyter need not be installed there.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

log = logging.getLogger(__name__)


def bound_gpu() -> dict[str, Any]:
    """The worker's first visible GPU as NVML names it (the one dask-cuda binds it to)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    info: dict[str, Any] = {
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "cuda_visible_devices": visible,
        "gpu": None,
    }
    if not visible:
        return info
    first = visible.split(",")[0].strip()
    try:
        import pynvml

        pynvml.nvmlInit()
        if first.isdigit():
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(first))
        else:
            handle = pynvml.nvmlDeviceGetHandleByUUID(first)
        uuid = pynvml.nvmlDeviceGetUUID(handle)
        name = pynvml.nvmlDeviceGetName(handle)
        info["gpu"] = {
            "uuid": uuid.decode() if isinstance(uuid, bytes) else uuid,
            "name": name.decode() if isinstance(name, bytes) else name,
            "memory_total": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total),
        }
    except Exception as err:  # any NVML failure only loses the details
        log.debug("no NVML details of the worker's GPU %s", first, exc_info=True)
        info["error"] = f"{type(err).__name__}: {err}"
    return info
