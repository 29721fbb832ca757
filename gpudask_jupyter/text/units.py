"""Parsing and formatting of sizes and durations for messages and options.

Parsing is dask's own (``dask.utils.parse_bytes`` and ``parse_timedelta``): one syntax to learn,
the one of Dask's configuration. Formatting is ours: three significant figures in binary units,
what nvidia-smi users read, where dask's keeps two decimals; and formatting a summary never
imports dask.
"""

from __future__ import annotations

import math
import re


def parse_bytes(text: str | int | float) -> int:
    """Bytes from "16GB", "1.5 GiB", "4096" or a number, as ``dask.utils.parse_bytes`` reads
    them (imported here, not at the top: formatting never needs dask); ``ValueError`` names the
    bad text, and a negative or endless size is refused, which dask lets through."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int | float):
        if text < 0 or not math.isfinite(text):
            raise ValueError(f"not a size: {text!r}")
        return int(text)
    from dask.utils import parse_bytes as dask_parse_bytes

    try:
        if not any(c.isdigit() for c in text):  # dask reads "" and "kB" as one of the unit
            raise ValueError(text)
        value = dask_parse_bytes(text)
    except (ValueError, KeyError, OverflowError) as err:
        raise ValueError(f"not a size: {text!r} (examples: 16GB, 512MiB, 1e9)") from err
    if value < 0:
        raise ValueError(f"not a size: {text!r}")
    return int(value)


def format_bytes(n: float | None) -> str:
    """Binary units, three significant figures: what nvidia-smi users read."""
    if n is None:
        return "–"
    n = float(n)
    for unit, size in (
        ("PiB", 2**50),
        ("TiB", 2**40),
        ("GiB", 2**30),
        ("MiB", 2**20),
        ("KiB", 2**10),
    ):
        if abs(n) >= size * 0.95:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


def format_seconds(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    if s < 120:
        return f"{s:.3g} s"
    return f"{s / 60:.3g} min"


#: the spellings README and help texts have always shown, which dask does not read
_DURATION_ALIASES = re.compile(r"(?<=[0-9\s])(min|mins|sec|secs)\s*$", re.IGNORECASE)


def parse_seconds(text: str | float | int) -> float:
    """Seconds from "10s", "500ms", "2min" or a number, as ``dask.utils.parse_timedelta`` reads
    them (plus "min" and "sec"); ``ValueError`` names the bad text."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        from dask.utils import parse_timedelta

        spelled = _DURATION_ALIASES.sub(lambda m: m.group(1)[0].lower(), text.strip())
        try:
            value = float(parse_timedelta(spelled, default="seconds"))
        except (ValueError, KeyError, TypeError, OverflowError) as err:
            raise ValueError(f"not a duration: {text!r} (examples: 10s, 500ms, 2min)") from err
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a duration: {text!r}")
    return value
