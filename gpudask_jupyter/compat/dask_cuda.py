"""The private parts of dask-cuda this package calls: its worker's nannies and device buffer."""

from __future__ import annotations

from typing import Any

#: the library (its name on PyPI) and the releases these calls were checked on, lowest and
#: newest (:class:`.releases.Checked`)
CHECKED = ("dask-cuda", "25.10", "26.10")

#: what ``LocalCUDACluster.__init__`` sets in the kernel's environment as it is made, before its
#: nannies spawn, so that RAPIDS does not initialise CUDA before a worker's GPU is named: copied
#: from dask-cuda 25.10 – 26.10, since the fork server its workers are forked from must be
#: launched with it (a GPU test checks the workers are forked)
CLUSTER_ENVIRON = {"RAPIDS_NO_INITIALIZE": "True"}


def cuda_worker_nannies(cuda_worker: Any) -> list[Any]:
    """The nannies a ``dask_cuda.CUDAWorker`` made, one per GPU, not started yet:
    ``CUDAWorker.nannies`` (dask-cuda 25.10 – 26.10), which ``dask cuda worker`` awaits itself."""
    return list(cuda_worker.nannies)


def set_device_spill_limit(worker: Any, limit: int) -> bool:
    """Have a dask-cuda worker spill device data to host memory above ``limit`` bytes from now
    on; False where it keeps no such buffer (JIT-unspill, or no device limit).

    dask-cuda's ``DeviceHostFile`` (``worker.data``) keeps device data in ``device_buffer``, a
    ``zict.Buffer`` whose ``n`` is the limit (private attribute; dask-cuda 25.10 – 26.10, zict 3).
    """
    buffer = getattr(getattr(worker, "data", None), "device_buffer", None)
    if buffer is None or not hasattr(buffer, "n"):
        return False
    buffer.n = limit
    return True
