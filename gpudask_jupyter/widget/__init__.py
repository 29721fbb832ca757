"""The panel widget, per-GPU utilisation and memory with the Dask task stream, live
(:mod:`.panel`); the kernel's shared Monitor behind every panel (:mod:`.shared_monitor`), where
a view's messages are handled (:mod:`.routing`), and the panel as text (:mod:`.snapshot`).
"""

from __future__ import annotations

from .panel import (
    IDLE_GRACE,
    REPR_WAIT,
    STATIC,
    UNANNOUNCED,
    UNANNOUNCED_FOR,
    Panel,
    close_all,
    show_panel,
    widget_front_end,
)
from .routing import on_main_thread, route
from .shared_monitor import KEY, kernel_monitor, stop_kernel_monitor
from .snapshot import snapshot_text

__all__ = [
    "IDLE_GRACE",
    "KEY",
    "REPR_WAIT",
    "STATIC",
    "UNANNOUNCED",
    "UNANNOUNCED_FOR",
    "Panel",
    "close_all",
    "kernel_monitor",
    "on_main_thread",
    "route",
    "show_panel",
    "snapshot_text",
    "stop_kernel_monitor",
    "widget_front_end",
]
