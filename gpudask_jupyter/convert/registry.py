"""Converters keyed by type, found without importing any library.

A value can only be a pandas object if pandas is already imported, so matching looks the classes
up in ``sys.modules`` instead of importing: converting nothing costs nothing. Tests and users may
register their own converters (``register``), which is how the transaction is exercised on
machines without a GPU library.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Direction = Literal["gpu", "cpu"]


@dataclass
class Context:
    """What one conversion may use: the target device and the staging copy options."""

    device: int | None = None
    path: str = "library"  # set by a converter to say how the bytes moved ("pinned", "lazy")
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Converter:
    """Moves one kind of object in one direction.

    ``unavailable`` returns why the converter cannot run here (no GPU, library missing) or None;
    ``lazy`` converters only rewrite a task graph, so no bytes or speed are reported for them.
    """

    source: str
    target: str
    direction: Direction
    matches: Callable[[object], bool]
    convert: Callable[[Any, Context], Any]
    unavailable: Callable[[], str | None] = lambda: None
    lazy: bool = False
    skip: str | None = None  # recognised, but deliberately left alone, for this reason

    @property
    def label(self) -> str:
        return f"{self.source} → {self.target}"


_lock = threading.Lock()
_converters: list[Converter] = []
_builtins_loaded = False


def register(converter: Converter, *, first: bool = True) -> Converter:
    """Add a converter; by default it takes precedence over those registered before."""
    with _lock:
        if first:
            _converters.insert(0, converter)
        else:
            _converters.append(converter)
    return converter


def unregister(converter: Converter) -> None:
    with _lock:
        if converter in _converters:
            _converters.remove(converter)


def _load_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    from . import builtin

    for converter in builtin.CONVERTERS:
        register(converter, first=False)


def find(obj: object, direction: Direction) -> Converter | None:
    _load_builtins()
    with _lock:
        candidates = list(_converters)
    for converter in candidates:
        if converter.direction == direction and converter.matches(obj):
            return converter
    return None


def module_class(module: str, *names: str) -> Callable[[object], bool]:
    """A predicate for instances of ``module.name`` that never imports ``module``."""

    def matches(obj: object) -> bool:
        mod = sys.modules.get(module)
        if mod is None:
            return False
        for name in names:
            target: Any = mod
            for part in name.split("."):
                target = getattr(target, part, None)
                if target is None:
                    break
            if isinstance(target, type) and isinstance(obj, target):
                return True
        return False

    return matches
