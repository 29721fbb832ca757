"""What a conversion that left the data on the host tells the user: once per reason and process,
as a warning from Python and a line under a magic's cell."""

from __future__ import annotations

import threading
import warnings


class GpuUnavailableWarning(UserWarning):
    """Data stayed on the host because no GPU (or GPU library) is usable."""


_told: set[str] = set()
# per process: what was told once is told once per process, as Python's warnings are
_told_lock = threading.Lock()


def notice_once(reason: str) -> str | None:
    """The sentence to show for ``reason`` the first time it occurs in this session, else None."""
    with _told_lock:
        if reason in _told:
            return None
        _told.add(reason)
    return f"gpudask: no GPU for the conversion ({reason}); the data stays on the host."


def forget_notices() -> None:
    with _told_lock:
        _told.clear()


def warn_unavailable(unavailable: list[str], stacklevel: int) -> None:
    """Tell once per reason why data stayed on the host (``stacklevel``: the caller's)."""
    for why in unavailable:
        message = notice_once(why)
        if message:
            warnings.warn(message, GpuUnavailableWarning, stacklevel=stacklevel + 1)
