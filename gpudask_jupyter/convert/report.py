"""The summary a %%to_gpu / %%to_cpu cell prints: what moved, its size and speed, what stayed."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..text.table import Table
from ..text.units import format_bytes, format_seconds

log = logging.getLogger(__name__)


def shape_of(obj: Any) -> tuple[int, ...] | None:
    shape = getattr(obj, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return shape
    return None


def nbytes_of(obj: Any) -> int | None:
    """The object's size in bytes if it says (``nbytes``, or a frame's ``memory_usage``)."""
    nbytes = getattr(obj, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    usage = getattr(obj, "memory_usage", None)
    if callable(usage):
        try:
            total = usage(index=True, deep=False)
            return int(total.sum() if hasattr(total, "sum") else total)
        except Exception:  # a size is only shown, never needed: report it as unknown
            log.debug("memory_usage of a %s failed", type(obj).__name__, exc_info=True)
            return None
    return None


def kind_of(obj: Any) -> str:
    kind = type(obj)
    if kind.__module__ == "builtins":
        return kind.__name__
    return f"{kind.__module__.split('.')[0]}.{kind.__name__}"


@dataclass
class Moved:
    name: str
    label: str
    shape: tuple[int, ...] | None
    nbytes: int | None
    seconds: float | None
    path: str

    @property
    def gbps(self) -> float | None:
        if not self.nbytes or not self.seconds:
            return None
        return self.nbytes / self.seconds / 1e9


@dataclass
class Report:
    direction: str
    moved: list[Moved] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. where each partition went, and how
    flag: str = ""  # the magic's flag that made this report ("--distribute", "--gather")

    def table(self) -> Table:
        title = "%%to_gpu" if self.direction == "gpu" else "%%to_cpu"
        if self.flag:
            title += f" {self.flag}"
        if not self.moved:
            title += ": nothing moved"
        table = Table(title, ["name", "from → to", "shape", "bytes", "seconds", "GB/s", "via"])
        for m in self.moved:
            shape = "×".join(str(n) for n in m.shape) if m.shape is not None else "–"
            if m.path == "lazy":
                size = seconds = speed = "lazy"
            else:
                size, seconds = format_bytes(m.nbytes), format_seconds(m.seconds)
                speed = f"{m.gbps:.1f}" if m.gbps is not None else "–"
            table.add(m.name, m.label, shape or "()", size, seconds, speed, m.path)
        table.notes.extend(self.notes)
        if self.skipped:
            table.notes.append(
                "skipped: " + ", ".join(f"{name} ({why})" for name, why in self.skipped)
            )
        return table
