"""Stand-in GPUs for the room on a machine without any: the ``room-reader`` option names
``room_gpus:reader`` (:func:`environment` gives a process's environment all it needs: the
option, this folder on the module path, and the two variables below). Its GPUs and their
memory come from two variables of the test's:

- ``GPUDASK_ROOM_TEST_GPUS``, ``N:SIZE``: N GPUs of SIZE each (unset: NVML's, as the product's
  own reader gives them, so a GPU machine's tests see its real GPUs);
- ``GPUDASK_ROOM_TEST_MEMORY``, a JSON file ``{uuid: {"used": bytes, "processes": {pid:
  bytes}}}`` read at each look ("used" defaults to their sum; unset: NVML's).

Each process reads them when the room reads the machine, so a test can change what the GPUs
hold while kernels run.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from gpudask_jupyter.cluster.room.holding import GpuMemory
from gpudask_jupyter.cluster.room.measure import NvmlReader
from gpudask_jupyter.machine import nvml
from gpudask_jupyter.text.units import parse_bytes

GPUS = "GPUDASK_ROOM_TEST_GPUS"
MEMORY = "GPUDASK_ROOM_TEST_MEMORY"
#: this folder, and the reader below as the room-reader option names it
FOLDER = Path(__file__).resolve().parent
READER = "room_gpus:reader"
log = logging.getLogger(__name__)


def environment(
    gpus: str, memory: Path | str | None = None, path: str | None = None
) -> dict[str, str]:
    """What a process's environment needs for the room to read ``gpus`` (``N:SIZE``) stand-in
    GPUs, their memory from the JSON file ``memory`` (None: NVML's, which shows nothing without
    a GPU): the room-reader option, the variables, and this folder before ``path`` (by default
    this process's ``PYTHONPATH``) on the module path."""
    path = os.environ.get("PYTHONPATH") if path is None else path
    env = {
        "DASK_GPUDASK__ROOM_READER": READER,
        GPUS: gpus,
        "PYTHONPATH": os.pathsep.join(p for p in (str(FOLDER), path) if p),
    }
    if memory is not None:
        env[MEMORY] = str(memory)
    return env


class StandInGpus:
    def devices(self) -> list[nvml.Device]:
        seam = os.environ.get(GPUS)
        if not seam:
            return NvmlReader().devices()
        count, _, size = seam.partition(":")
        return [
            nvml.Device(
                i, f"GPU-00000000-0000-0000-0000-{i:012d}", "room test GPU", parse_bytes(size)
            )
            for i in range(int(count))
        ]

    def memory(self, devices: Sequence[nvml.Device]) -> dict[str, GpuMemory]:
        path = os.environ.get(MEMORY)
        if not path:
            return NvmlReader().memory(devices)
        try:
            with open(path, encoding="utf-8") as handle:
                raw = json.load(handle)
        except (OSError, ValueError):
            log.debug("the stand-in's memory file %s cannot be read", path, exc_info=True)
            raw = {}
        out = {}
        for device in devices:
            mine = raw.get(device.uuid, {}) if isinstance(raw, dict) else {}
            held = {int(pid): int(size) for pid, size in mine.get("processes", {}).items()}
            used = mine.get("used", sum(held.values()))
            out[device.uuid] = GpuMemory(device.uuid, device.memory_total, int(used), held)
        return out


reader = StandInGpus()
