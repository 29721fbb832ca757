"""Errors a notebook user can act on.

Every error raised on purpose by this package is a :class:`GpuDaskError` whose message says what
happened, to which name or address, and what to do next. The magics turn them into IPython's
one-line ``UsageError`` so that a user sees the sentence, not a traceback from inside a library.
"""

from __future__ import annotations


class GpuDaskError(Exception):
    """Base class: the message is meant for the user, complete and actionable."""


class ClusterError(GpuDaskError):
    """Starting, attaching to or managing a Dask cluster failed."""


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
