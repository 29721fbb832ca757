"""Which GPUs a cluster may use: the ``--gpus`` syntax and the kernel's own restriction.

Indices are NVML's (the numbers ``nvidia-smi`` prints), as dask-cuda reads them. When the kernel
itself runs with ``CUDA_VISIBLE_DEVICES`` set (a JupyterHub that gives each student a GPU, say),
only those GPUs may be chosen: a worker must never escape the restriction its kernel was given.

The kernel's ``CUDA_VISIBLE_DEVICES`` is read here only (:func:`kernel_restriction`), under the
lock that :func:`devices_for_construction` holds while dask-cuda's ``CUDAWorker``, which reads
its GPUs from that variable, makes a join's nannies: no reader of this package sees the
temporary value.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator, Sequence

from .nvml import Device

_VARIABLE = "CUDA_VISIBLE_DEVICES"
# per process: the GPUs this process may use, read once
_lock = threading.Lock()


def kernel_restriction() -> str | None:
    """The kernel's own ``CUDA_VISIBLE_DEVICES`` (None: not set)."""
    with _lock:
        return os.environ.get(_VARIABLE)


def restrict_kernel(identifiers: Sequence[str]) -> None:
    """Restrict the kernel itself to ``identifiers`` (the room's placement, before CUDA starts
    in it): its own GPU work and every later start stay on the GPUs it was given."""
    with _lock:
        os.environ[_VARIABLE] = ",".join(identifiers)


@contextlib.contextmanager
def devices_for_construction(devices: Sequence[Device]) -> Iterator[None]:
    """``CUDA_VISIBLE_DEVICES`` set to ``devices`` for what the block constructs, then put back;
    only one such block at a time, and :func:`kernel_restriction` waits for it."""
    with _lock:
        before = os.environ.get(_VARIABLE)
        os.environ[_VARIABLE] = ",".join(identifier(d) for d in devices)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(_VARIABLE, None)
            else:
                os.environ[_VARIABLE] = before


_UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F-]{8,}(/\d+/\d+)?$")


def parse_spec(text: str) -> list[int | str]:
    """``"0,1"`` or ``"GPU-…,MIG-…"`` → identifiers; ``ValueError`` names the bad entry."""
    tokens = [token.strip() for token in text.split(",")]
    out: list[int | str] = []
    for token in tokens:
        if not token:
            raise ValueError(f"--gpus {text!r}: empty entry (write e.g. --gpus 0,1)")
        if token.isdigit():
            value: int | str = int(token)
        elif _UUID.match(token):
            value = token
        else:
            raise ValueError(
                f"--gpus: {token!r} is neither a GPU index (0, 1, ...) nor a GPU-/MIG- UUID "
                "(as nvidia-smi -L prints them)"
            )
        if value in out:
            raise ValueError(f"--gpus: {token} is listed twice")
        out.append(value)
    return out


def _find(token: int | str, devices: Sequence[Device]) -> Device | None:
    for device in devices:
        if isinstance(token, int):
            if device.index == token and not device.is_mig:
                return device
        elif device.uuid == token:
            return device
    return None


def _describe(devices: Sequence[Device]) -> str:
    if not devices:
        return "none"
    return ", ".join(
        f"{d.label} ({d.uuid})" if d.is_mig else f"{d.index} ({d.name})" for d in devices
    )


def visible(devices: Sequence[Device], cuda_visible_devices: str | None) -> list[Device]:
    """The devices this kernel may hand to workers."""
    if cuda_visible_devices is None:
        return list(devices)
    allowed = []
    for token in cuda_visible_devices.split(","):
        token = token.strip()
        if not token:
            continue
        try:
            ident: int | str = int(token)
        except ValueError:
            ident = token
        device = _find(ident, devices)
        if device is not None:
            allowed.append(device)
    return allowed


def select(
    spec: Sequence[int | str] | None,
    devices: Sequence[Device],
    cuda_visible_devices: str | None,
) -> list[Device]:
    """The devices for one worker each; ``ValueError`` says which entry is wrong and what exists."""
    allowed = visible(devices, cuda_visible_devices)
    if spec is None:
        mig_parents = {d.index for d in allowed if d.is_mig}
        return [d for d in allowed if d.is_mig or d.index not in mig_parents]
    chosen = []
    for token in spec:
        device = _find(token, devices)
        if device is None:
            if isinstance(token, int) and any(d.index == token and d.is_mig for d in devices):
                raise ValueError(
                    f"--gpus: GPU {token} is split into MIG instances; name them by UUID "
                    f"({', '.join(d.uuid for d in devices if d.index == token)})"
                )
            raise ValueError(f"--gpus: no GPU {token} on this machine; it has {_describe(devices)}")
        if device not in allowed:
            raise ValueError(
                f"--gpus: GPU {token} is outside this kernel's "
                f"CUDA_VISIBLE_DEVICES={cuda_visible_devices}; allowed: {_describe(allowed)}"
            )
        chosen.append(device)
    return chosen


def identifier(device: Device) -> str:
    """What goes into a worker's ``CUDA_VISIBLE_DEVICES`` for this device."""
    return device.uuid if device.is_mig else str(device.index)
