"""What a converter is: the types every other module of ``convert/`` builds on.

This module imports nothing of the package, so that the built-in converters, the lookup and the
transaction can all depend on it without depending on each other.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

log = logging.getLogger(__name__)

Direction = Literal["gpu", "cpu"]


@dataclass
class Context:
    """What one conversion may use (the target device), and what it tells back (the path)."""

    device: int | None = None
    path: str = "library"  # set by a converter to say how the bytes moved ("pinned", "lazy")
    notes: list[str] = field(default_factory=list)  # what the report says of this object


@dataclass(frozen=True)
class Converter:
    """Moves one kind of object in one direction.

    ``unavailable`` returns why the converter cannot run here (no GPU, library missing) or None;
    ``refuse`` why the target cannot hold this object at all (an exception with the cause and
    the hint, :class:`.failures.Unsupported`) or None, asked of every name before anything moves;
    ``lazy`` converters only rewrite a task graph, so no bytes or speed are reported for them.
    """

    source: str
    target: str
    direction: Direction
    matches: Callable[[object], bool]
    convert: Callable[[Any, Context], Any]
    unavailable: Callable[[], str | None] = lambda: None
    refuse: Callable[[Any], Exception | None] = lambda obj: None
    lazy: bool = False
    skip: str | None = None  # recognised, but deliberately left alone, for this reason

    @property
    def label(self) -> str:
        return f"{self.source} → {self.target}"


def _is_instance(obj: object, cls: type) -> bool:
    """``isinstance``, False for an object whose ``__class__`` raises (a proxy, a broken
    object): such an object has no converter, it is not an error of the user's cell."""
    try:
        return isinstance(obj, cls)
    except Exception:
        log.debug("isinstance(%s, %s) raised", type(obj).__name__, cls.__name__, exc_info=True)
        return False


def module_class(module: str, *names: str) -> Callable[[object], bool]:
    """A predicate for instances of ``module.name`` that never imports ``module``.

    A value can only be a pandas object if pandas is already imported, so the classes are looked
    up in ``sys.modules``: converting nothing costs nothing.
    """

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
            if isinstance(target, type) and _is_instance(obj, target):
                return True
        return False

    return matches
