"""Whether a kernel is gone, as the Jupyter server's own kernel manager sees it.

A registry entry outlives its kernel for a moment (a kernel that shuts down or restarts is ended
by SIGTERM a few seconds after the request, and its process may never remove its entry), but the
server that manages the kernel knows at once: it marks the kernel as shutting down (also for a
restart) and forgets it once it is shut down. Asking it costs a dictionary lookup, so the
sidebar can say "stopped" within the couple of seconds between two checks. A kernel this server
does not manage (started by another server or a console) is judged by its registry entry alone.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)


class KernelLiveness:
    def __init__(self, kernel_manager: Any) -> None:
        self._km = kernel_manager
        self._seen: set[str] = set()
        self._process: dict[str, int] = {}  # kernel id -> the process its entry was written by
        self._lock = threading.Lock()

    def gone(self, kernel_id: str, entry_pid: int | None = None) -> str:
        """Why the kernel ``kernel_id`` is gone, in words; "" while it lives (or is unknown).
        ``entry_pid``: the process that wrote its registry entry; once seen to be the kernel's
        process, another process in its place means the kernel restarted."""
        try:
            if kernel_id in self._km:
                return self._managed(kernel_id, self._km.get_kernel(kernel_id), entry_pid)
        except Exception:
            log.debug("cannot ask the kernel manager about %s", kernel_id, exc_info=True)
            return ""
        with self._lock:
            if kernel_id in self._seen:
                return "the notebook's kernel was shut down"
        return ""

    def _managed(self, kernel_id: str, kernel: Any, entry_pid: int | None) -> str:
        if getattr(kernel, "shutting_down", False) is True:
            return "the notebook's kernel is shutting down or restarting"
        if getattr(kernel, "execution_state", "") == "dead":
            return "the notebook's kernel died"
        pid = getattr(getattr(kernel, "provisioner", None), "pid", None)
        with self._lock:
            self._seen.add(kernel_id)
            if isinstance(pid, int) and pid == entry_pid:
                self._process[kernel_id] = pid
            elif entry_pid is not None and self._process.get(kernel_id) == entry_pid:
                return "the notebook's kernel restarted"
        return ""
