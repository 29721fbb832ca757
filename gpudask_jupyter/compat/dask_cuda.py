"""The private parts of dask-cuda this package calls: its worker's nannies and device buffer."""

from __future__ import annotations

from typing import Any

from .probes import probe
from .probing import NeedTuple, sets, source_holds

DISTRIBUTION = "dask-cuda"
ENVIRON = "LocalCUDACluster setting RAPIDS_NO_INITIALIZE"
NANNIES = "CUDAWorker.nannies"
SPILL = "DeviceHostFile.device_buffer (a zict.Buffer with its limit n)"


def needs() -> list[NeedTuple]:
    from dask_cuda import CUDAWorker, LocalCUDACluster
    from dask_cuda.device_host_file import DeviceHostFile

    return [
        (
            ENVIRON,
            lambda: source_holds(LocalCUDACluster, "RAPIDS_NO_INITIALIZE"),
            "the workers' fork server may start without a variable dask-cuda now sets",
        ),
        (NANNIES, lambda: sets(CUDAWorker, "nannies"), "%gpu_cluster join cannot start"),
        (
            SPILL,
            lambda: sets(DeviceHostFile, "device_buffer"),
            "a worker's spill limit follows the room's share only as it starts",
        ),
    ]


#: what ``LocalCUDACluster.__init__`` sets in the kernel's environment as it is made, before its
#: nannies spawn, so that RAPIDS does not initialise CUDA before a worker's GPU is named: copied
#: from dask-cuda (probed), since the fork server its workers are forked from must be
#: launched with it (a GPU test checks the workers are forked)
CLUSTER_ENVIRON = {"RAPIDS_NO_INITIALIZE": "True"}


def cuda_worker_nannies(cuda_worker: Any) -> list[Any]:
    """The nannies a ``dask_cuda.CUDAWorker`` made, one per GPU, not started yet:
    ``CUDAWorker.nannies`` (probed), which ``dask cuda worker`` awaits itself."""
    if not probe(DISTRIBUTION).has(NANNIES):
        raise RuntimeError(f"{probe(DISTRIBUTION).distribution} lacks {NANNIES}")
    return list(cuda_worker.nannies)


def set_device_spill_limit(worker: Any, limit: int) -> bool:
    """Have a dask-cuda worker spill device data to host memory above ``limit`` bytes from now
    on; False where it keeps no such buffer (JIT-unspill, or no device limit).

    dask-cuda's ``DeviceHostFile`` (``worker.data``) keeps device data in ``device_buffer``, a
    ``zict.Buffer`` whose ``n`` is the limit (private attribute; probed as it is used).
    """
    buffer = getattr(getattr(worker, "data", None), "device_buffer", None)
    if buffer is None or not hasattr(buffer, "n"):
        return False
    buffer.n = limit
    return True
