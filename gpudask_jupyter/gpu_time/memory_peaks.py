"""The peak of a process's RMM allocations above where they stood when a task (or a cell)
began, from RMM's statistics.

RMM counts allocations in a ``StatisticsResourceAdaptor``; its counters form a stack, and the
counters pushed at a task's start hold, when popped at its end, the highest the allocations rose
above their level at the push. The stack is the process's, not a thread's: on a worker of one
thread (dask-cuda's default) each task has its own window; where tasks overlap, one window spans
the overlapping tasks and each of them is given its peak (the views say "shared" then).

The adaptor must be the current resource's top to see every allocation. Something else may be
made current over it later (the room's cap is remade as shares move, a user sets a pool); the
next window then puts a new adaptor on top, and the window before it is reported unknown rather
than low. Where RMM is not imported in the process, nothing is measured: this module never
imports RMM into a process that did not use it.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

log = logging.getLogger(__name__)


class Peaks:
    """Windows of RMM statistics. ``rmm`` is the ``rmm`` module (or a stand-in with its
    ``mr.get_current_device_resource``, ``mr.set_current_device_resource`` and
    ``mr.StatisticsResourceAdaptor``); None: RMM is taken where the process has imported it."""

    def __init__(self, rmm: Any = None) -> None:
        self._rmm = rmm
        self._adaptor: Any = None
        self._open = 0
        self._lost = False

    def _module(self) -> Any:
        if self._rmm is None:
            self._rmm = sys.modules.get("rmm")
        return self._rmm

    def _on_top(self) -> Any:
        rmm = self._module()
        if rmm is None:
            return None
        current = rmm.mr.get_current_device_resource()
        if current is self._adaptor:
            return current
        if isinstance(current, rmm.mr.StatisticsResourceAdaptor):
            self._adaptor = current
            return current
        self._adaptor = rmm.mr.StatisticsResourceAdaptor(current)
        rmm.mr.set_current_device_resource(self._adaptor)
        log.debug("RMM statistics over %s", type(current).__name__)
        return self._adaptor

    def begin(self) -> None:
        """A task (or cell) begins. The first of overlapping ones opens the window."""
        self._open += 1
        if self._open > 1:
            return
        try:
            adaptor = self._on_top()
            if adaptor is not None:
                adaptor.push_counters()
                self._lost = False
        except Exception:
            log.warning("RMM statistics cannot be read here", exc_info=True)
            self._adaptor = None

    def end(self) -> int | None:
        """A task ends: the window's peak in bytes above its start (None: not measured, or the
        adaptor was replaced during the window). The last of overlapping tasks closes it."""
        self._open = max(0, self._open - 1)
        adaptor = self._adaptor
        if adaptor is None or self._module() is None:
            return None
        try:
            if self._module().mr.get_current_device_resource() is not adaptor:
                self._lost = True
            if self._open:
                return None if self._lost else int(adaptor.allocation_counts.peak_bytes)
            popped = adaptor.pop_counters()
        except Exception:
            log.warning("RMM statistics cannot be read here", exc_info=True)
            return None
        return None if self._lost else max(0, int(popped.peak_bytes))
