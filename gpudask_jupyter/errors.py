"""Errors a notebook user can act on, and the last one's traceback for whoever debugs it.

Every error raised on purpose by this package is a :class:`GpuDaskError` whose message says what
happened, to which name or address, and what to do next. The magics turn them into IPython's
one-line ``UsageError`` so that a user sees the sentence, not a traceback from inside a library;
:func:`remember` keeps the full traceback of that error (and of what caused it) so that
``%gpu_cluster status --verbose`` can show it to a developer or a bug report.
"""

from __future__ import annotations

import re
import sys
import threading
import time
import traceback
from dataclasses import dataclass

_OUT_OF_MEMORY = re.compile(r"out[ _]of[ _](?:device[ _]|gpu[ _]|host[ _])?memory", re.IGNORECASE)
#: how CUDA, RMM and CuPy say that device memory ran out (a host MemoryError says none of it)
_DEVICE_OUT_OF_MEMORY = re.compile(
    r"bad_alloc|out_of_memory|Exceeded memory limit|cudaErrorMemoryAllocation|"
    r"CUDA_ERROR_OUT_OF_MEMORY|out of (?:device|gpu) memory",
    re.IGNORECASE,
)


def is_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` says a host or device allocation failed: CuPy's ``OutOfMemoryError``,
    ``MemoryError`` (cuDF's ``std::bad_alloc`` too), or "out of (device) memory" in any
    spelling. The one rule, in the kernel and for what a worker sent back."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(err, cupy.cuda.memory.OutOfMemoryError):
        return True
    return isinstance(err, MemoryError) or bool(_OUT_OF_MEMORY.search(str(err)))


def is_device_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` says GPU memory ran out (RMM's ``bad_alloc``, CuPy's error, CUDA's),
    not host memory."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(err, cupy.cuda.memory.OutOfMemoryError):
        return True
    return is_out_of_memory(err) and bool(_DEVICE_OUT_OF_MEMORY.search(str(err)))


class GpuDaskError(Exception):
    """Base class: the message is meant for the user, complete and actionable."""


class ClusterError(GpuDaskError):
    """Starting, attaching to or managing a Dask cluster failed."""


class ArgumentError(GpuDaskError, ValueError):
    """Arguments that cannot be combined, or a value out of range; nothing was started."""


class Interrupted(KeyboardInterrupt):
    """A command the user interrupted (Ctrl-C), with a sentence on what happens next.

    Still a ``KeyboardInterrupt`` (Run All stops; code that catches one catches it), but IPython
    shows it as one line: it calls :meth:`_render_traceback_` instead of formatting the frames,
    which means parsing each frame's source file and building a highlighter, a second or more
    on a kernel busy importing, for frames that tell the user nothing."""

    def _render_traceback_(self) -> list[str]:
        return [f"KeyboardInterrupt: {self}"]


class NoGpuError(GpuDaskError):
    """A GPU was required (``--require-gpu`` or the ``require-gpu`` option) but none is usable."""


class ConversionError(GpuDaskError):
    """Moving one variable between host and device failed; nothing was rebound.

    ``name`` is the variable, ``cause`` the short reason and ``hint`` what the user can do.
    """

    def __init__(self, name: str, cause: str, hint: str = "") -> None:
        self.name = name
        self.cause = cause
        self.hint = hint
        self.details = ""  # the library's traceback, as text, for a bug report
        message = f"{name}: {cause}"
        if hint:
            message += f"; {hint}"
        super().__init__(message)


@dataclass(frozen=True)
class LastError:
    """The last error shown to the user: its sentence, when, and the full traceback text."""

    message: str
    time: float
    traceback: str


class ErrorLog:
    """The last error a kernel showed its user, kept whole (with its causes and any library
    traceback it carries) for ``%gpu_cluster status --verbose``: one per kernel, its cluster's
    (:class:`.cluster.session.KernelCluster`)."""

    def __init__(self) -> None:
        self._last: LastError | None = None
        self._lock = threading.Lock()

    def remember(self, err: BaseException) -> None:
        """Keep ``err``'s traceback (with its causes and any library traceback it carries)."""
        text = "".join(traceback.format_exception(err))
        details = getattr(err, "details", "")
        if isinstance(details, str) and details:
            text += "\nThe library's own traceback:\n" + details
        with self._lock:
            self._last = LastError(str(err), time.time(), text)

    def last(self) -> LastError | None:
        with self._lock:
            return self._last

    def forget(self) -> None:
        with self._lock:
            self._last = None

    def report(self) -> str:
        """What ``%gpu_cluster status --verbose`` prints: the last error with its full
        traceback, or that there was none."""
        error = self.last()
        if error is None:
            return "No gpudask error so far in this kernel."
        when = time.strftime("%H:%M:%S", time.localtime(error.time))
        return f"Last gpudask error, at {when}: {error.message}\n\n{error.traceback.rstrip()}"
