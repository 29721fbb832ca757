"""Checking a registry entry's fields one by one, whatever the file holds.

A registry file is private to its user, but not necessarily written by this version of the
package, nor intact: any JSON value may be there. Each field is checked on its own, for its type
and its range; a field that the server needs to connect safely (kernel id, pid and start time,
mode, address, TLS files, version) makes the entry invalid when it is wrong, while the dashboard
link, the creation time and the list of the kernel's own workers, which only decorate it, are
dropped or defaulted. Nothing here raises
anything but :class:`InvalidEntry`.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: as the server's routes accept kernel ids
KERNEL_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
ADDRESS = re.compile(r"(tcp|tls|ucx|ucxx|ws|wss|inproc|gateway)://[^\s]{1,1000}")
LINK = re.compile(r"https?://[^\s]{1,2000}")
MODES = frozenset({"gpu", "cpu", "attached", "joined", "gateway"})
TLS_KEYS = frozenset({"ca_file", "cert_file", "key_file"})
#: the largest pid Linux hands out (pid_max can be raised to 2**22)
PID_MAX = 2**22
MAX_PATH = 4096
#: the kernel's own workers in one entry: one per GPU of one machine, or a few CPU workers
MAX_WORKERS = 1024


class InvalidEntry(ValueError):
    """The entry's first wrong field, in words."""


def _number(value: Any) -> float | None:
    """A finite float from an int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _pid(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= PID_MAX:
        raise InvalidEntry(f"pid {value!r:.40} is not a process id")
    return value


def _string(name: str, value: Any, pattern: re.Pattern[str]) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise InvalidEntry(f"{name} {value!r:.80} is not valid")
    return value


def _tls(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != TLS_KEYS:
        raise InvalidEntry(f"tls {value!r:.80} is not the three TLS file paths")
    for key, path in value.items():
        if not isinstance(path, str) or not path.startswith("/") or len(path) > MAX_PATH:
            raise InvalidEntry(f"tls {key} {path!r:.80} is not an absolute path")
        if "\0" in path:
            raise InvalidEntry(f"tls {key} holds a NUL character")
    return dict(value)


def _workers(value: Any) -> list[str] | None:
    """The kernel's own worker addresses; None (nothing marked) when the list is not one."""
    if not isinstance(value, list) or len(value) > MAX_WORKERS:
        return None
    if not all(isinstance(item, str) and ADDRESS.fullmatch(item) for item in value):
        return None
    return list(value)


def check_fields(raw: object, version: int) -> dict[str, Any]:
    """The keyword arguments of an ``Entry`` from ``raw``; :class:`InvalidEntry` when a field
    the server relies on is missing or wrong."""
    if not isinstance(raw, dict):
        raise InvalidEntry(f"the file holds {type(raw).__name__}, not an object")
    found = raw.get("version")
    if isinstance(found, bool) or found != version:
        raise InvalidEntry(f"version {found!r:.40} is not {version}")
    started = raw.get("started")
    if isinstance(started, bool) or not isinstance(started, int) or started < 0:
        raise InvalidEntry(f"started {started!r:.40} is not a process's start")
    mode = raw.get("mode")
    if not isinstance(mode, str) or mode not in MODES:
        raise InvalidEntry(f"mode {mode!r:.40} is not one of {', '.join(sorted(MODES))}")
    link = raw.get("dashboard_link")
    created = _number(raw.get("created"))
    return {
        "kernel_id": _string("kernel_id", raw.get("kernel_id"), KERNEL_ID),
        "pid": _pid(raw.get("pid")),
        "mode": mode,
        "scheduler_address": _string("scheduler_address", raw.get("scheduler_address"), ADDRESS),
        "dashboard_link": link if isinstance(link, str) and LINK.fullmatch(link) else None,
        "tls": _tls(raw.get("tls")),
        "created": created if created is not None else 0.0,
        "version": version,
        "started": started,
        "workers": _workers(raw.get("workers")),
    }
