"""The panel widget, per-GPU utilisation and memory with the Dask task stream, live
(:mod:`.panel`); what a kernel's panels share, its Monitor among them (:mod:`.shared_monitor`),
where a view's messages are handled (:mod:`.routing`), the panel as text (:mod:`.snapshot`),
and what the sidebar's buttons run in the kernel (:mod:`.sidebar_actions`).
"""

from __future__ import annotations

from .panel import (
    IDLE_GRACE,
    REPR_WAIT,
    STATIC,
    UNANNOUNCED,
    UNANNOUNCED_FOR,
    Panel,
    show_panel,
    widget_front_end,
)
from .routing import on_main_thread, route
from .shared_monitor import KEY, SHELL_SLOT, KernelView, this_kernel_view
from .snapshot import snapshot_text

__all__ = [
    "IDLE_GRACE",
    "KEY",
    "REPR_WAIT",
    "SHELL_SLOT",
    "STATIC",
    "UNANNOUNCED",
    "UNANNOUNCED_FOR",
    "KernelView",
    "Panel",
    "on_main_thread",
    "route",
    "show_panel",
    "snapshot_text",
    "this_kernel_view",
    "widget_front_end",
]
