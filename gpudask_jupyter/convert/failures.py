"""Turn a library's exception into a cause and a next step the user can take.

Converters raise :class:`ColumnFailure` to say which column of a frame failed; the rest is
recognised by type and message, without importing the libraries.
"""

from __future__ import annotations

import logging
import re
import sys
import traceback
from typing import Any

from ..errors import is_out_of_memory
from ..text.units import format_bytes
from . import room_hooks
from .report import nbytes_of

log = logging.getLogger(__name__)


class Unsupported(Exception):
    """A converter recognised input it cannot move; ``cause`` and ``hint`` are for the user."""

    def __init__(self, cause: str, hint: str = "") -> None:
        super().__init__(cause)
        self.cause = cause
        self.hint = hint


class ColumnFailure(Exception):
    """A frame's column (or its index) could not be converted."""

    def __init__(self, column: Any, error: BaseException, dtype: Any = None) -> None:
        super().__init__(f"column {column!r}: {error}")
        self.column = column
        self.error = error
        self.dtype = dtype


#: where libcudf's C++ raised, which says nothing to the user: "CUDF failure at: FILE:LINE: "
_WHERE_RAISED = re.compile(r"(?:CUDF|RMM) failure at:\s*\S+?:\d+:\s*")
#: what a library raises to say it cannot take something; anything else is a bug, said as such
_LIBRARY_REFUSALS = (NotImplementedError, TypeError, ValueError, RuntimeError, OverflowError)


def library_text(err: BaseException) -> str:
    """What ``err`` says, for a sentence: its first line, without where in C++ it was raised."""
    lines = str(err).strip().splitlines()
    return _WHERE_RAISED.sub("", lines[0] if lines else "").strip() or type(err).__name__


def _free_device_memory() -> str:
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return ""
    try:
        device = cupy.cuda.runtime.getDevice()
        free, total = cupy.cuda.runtime.memGetInfo()
    except Exception:  # the message is complete without it
        log.debug("could not read the device's free memory", exc_info=True)
        return ""
    return f"; GPU {device} has {format_bytes(free)} free of {format_bytes(total)}"


def describe(
    err: BaseException, name: str, obj: Any, exclude: str | None = None
) -> tuple[str, str]:
    """(cause, hint) for the failure of converting variable ``name`` holding ``obj``.

    ``exclude`` is how the user leaves the object on the host (the magic's ``--exclude``).
    """
    exclude = exclude or f"use --exclude {name} to leave it on the host"
    if isinstance(err, Unsupported):
        return err.cause, f"{err.hint} or {exclude}" if err.hint else exclude
    if isinstance(err, PartitionError):  # a worker's sentence already
        return str(err), exclude
    column = None
    dtype = None
    if isinstance(err, ColumnFailure):
        column, dtype, err = err.column, err.dtype, err.error
    if is_out_of_memory(err):
        size = nbytes_of(obj)
        need = f"it needs about {format_bytes(size)}" if size else "it does not fit"
        shared = room_hooks.out_of_memory(need)
        if shared is not None:
            cause, hint = shared
            return f"out of GPU memory ({cause})", f"{hint}, or {exclude}"
        return (
            f"out of GPU memory ({need}{_free_device_memory()})",
            f"free GPU memory (del GPU objects you no longer need, or %gpu_cluster restart) "
            f"or {exclude}",
        )
    kind = type(err).__name__
    text = library_text(err)
    if column is not None:
        where = "its index" if column == "<index>" else f"column {column!r}"
        if kind == "MixedTypeError" or "mixed" in text.lower():
            fix = (
                f"convert it (e.g. {name}[{column!r}] = {name}[{column!r}].astype(str))"
                if column != "<index>"
                else "convert the index"
            )
            return f"{where} holds mixed Python objects", f"{fix} or {exclude}"
        if isinstance(err, NotImplementedError | TypeError | ValueError):
            shown = f" {dtype}" if dtype is not None else ""
            return (
                f"{where} has dtype{shown}, which cuDF cannot hold ({text})",
                f"cast it to a supported dtype or {exclude}",
            )
        if isinstance(err, _LIBRARY_REFUSALS):
            shown = f" (dtype {dtype})" if dtype is not None else ""
            return f"{where}{shown} could not be converted: the library says {text!r}", exclude
        return f"{where}: {kind}: {text}", exclude
    if isinstance(err, _LIBRARY_REFUSALS):
        return f"it could not be converted: the library says {text!r}", exclude
    return f"{kind}: {text}", exclude


# -- on a worker -----------------------------------------------------------------------------------


class PartitionError(Exception):
    """A partition could not be made on this worker; the message is the cause, for the user.

    The library's own exceptions (and this package's column failures) do not all survive the
    trip back to the kernel in a pickle; a sentence does.
    """


def failure(err: BaseException, obj: Any) -> PartitionError:
    """The sentence a partition's failure on this worker becomes (``obj``: what it was making,
    for its size)."""
    log.debug("a partition could not be made on this worker", exc_info=err)
    cause, _ = describe(err, "", obj)
    # the failed conversion's frames hold its half-built device arrays
    traceback.clear_frames(err.__traceback__)
    return PartitionError(cause)
