"""Which names a cell created or re-bound.

The snapshot keeps each object's id and, where the type allows it, a weak reference: an id alone
can be reused by a new object after the old one is freed (``del x; x = ...``), a dead weak
reference says the name now holds something else. No strong reference is kept, so a cell that
replaces a large frame does not hold the old one in memory.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

IGNORED = frozenset({"In", "Out", "exit", "quit", "get_ipython"})


def _ref(value: Any) -> weakref.ref[Any] | None:
    try:
        return weakref.ref(value)
    except TypeError:
        return None


class Snapshot:
    def __init__(self, namespace: Mapping[str, Any]) -> None:
        self._seen = {
            name: (id(value), type(value), _ref(value))
            for name, value in namespace.items()
            if not name.startswith("_") and name not in IGNORED
        }

    def changed(self, namespace: Mapping[str, Any]) -> list[str]:
        """Names bound by the cell (new, or now holding a different object), in binding order."""
        out = []
        for name, value in namespace.items():
            if name.startswith("_") or name in IGNORED:
                continue
            seen = self._seen.get(name)
            if seen is None:
                out.append(name)
                continue
            ident, kind, ref = seen
            rebound = id(value) != ident or type(value) is not kind
            if rebound or (ref is not None and ref() is not value):
                out.append(name)
        return out
