"""Parsing and formatting of sizes and durations for messages and options.

Kept free of dask so that formatting a summary never imports it; the accepted spellings follow
``dask.utils.parse_bytes`` ("16GB", "16 GiB", "512MiB", plain integers): one syntax to learn.
"""

from __future__ import annotations

import math
import re

_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "p": 10**15,
    "pb": 10**15,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "pib": 2**50,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_bytes(text: str | int | float) -> int:
    """Bytes from "16GB", "1.5 GiB", "4096" or a number; ``ValueError`` names the bad text."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int | float):
        if text < 0 or not math.isfinite(text):
            raise ValueError(f"not a size: {text!r}")
        return int(text)
    match = _SIZE.match(text)
    if not match or match.group(2).lower() not in _BYTE_UNITS:
        raise ValueError(f"not a size: {text!r} (examples: 16GB, 512MiB, 1e9)")
    return int(float(match.group(1)) * _BYTE_UNITS[match.group(2).lower()])


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


_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_seconds(text: str | float | int) -> float:
    """Seconds from "10s", "500ms", "2min" or a number; ``ValueError`` names the bad text."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = _DURATION.match(text)
        if not match or match.group(2).lower() not in _DURATION_UNITS:
            raise ValueError(f"not a duration: {text!r} (examples: 10s, 500ms, 2min)")
        value = float(match.group(1)) * _DURATION_UNITS[match.group(2).lower()]
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a duration: {text!r}")
    return value
