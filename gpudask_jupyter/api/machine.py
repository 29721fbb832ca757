"""What a notebook asks of the machine before it chooses its sizes: this machine's GPUs, and why
GPU work cannot run here (None where it can). Both ask NVML and the module path only, never
CUDA: on a shared machine the room places a kernel on its GPU before CUDA starts in it, so a
notebook may ask first thing without taking a GPU.
"""

from __future__ import annotations

import importlib.util

from ..machine import nvml
from ..machine.availability import INSTALL

#: one GPU (or MIG instance) as NVML shows it: index, UUID, name, memory in bytes
Gpu = nvml.Device


def gpus() -> list[Gpu]:
    """This machine's GPUs (MIG instances count as GPUs), as NVML shows them; none where NVML
    cannot be used (:func:`why_no_gpu` says why).

    >>> [gpu.label for gpu in gpus()]  # doctest: +SKIP
    ['0', '1']
    """
    return nvml.devices()


def why_no_gpu(*libraries: str) -> str | None:
    """None where this machine has a GPU and ``libraries`` (module names: ``"cupy"``,
    ``"cudf"``, ``"dask_cuda"``) are installed; else why not, in words a notebook can print.

    >>> why_no_gpu("no_such_library") is not None
    True
    """
    state = nvml.status()
    if not state.available:
        return state.reason or "NVML cannot be used here"
    if not nvml.devices():
        return "this machine has no NVIDIA GPU"
    missing = [name for name in libraries if importlib.util.find_spec(name) is None]
    if missing:
        return (
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed ({INSTALL})"
        )
    return None
