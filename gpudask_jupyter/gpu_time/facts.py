"""The facts of GPU time that more than one module (and the configuration) read, defined once:
the sources a user may ask for, the topic of the events the worker plugin sends the scheduler,
and the fields of a usage row. Imports nothing."""

from __future__ import annotations

#: what the ``gpu-time`` option may ask for
CHOICES = ("auto", "cupti", "nvml", "off")
TOPIC = "gpudask-gpu-time"
#: a usage event's row: span, prefix, tasks, wall seconds, GPU seconds, bytes to the device,
#: bytes from it, RMM peak (None: not measured), whether some task overlapped another
ROW_FIELDS = ("span", "prefix", "tasks", "wall", "gpu", "htod", "dtoh", "peak", "shared")
