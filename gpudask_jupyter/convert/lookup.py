"""Converters keyed by type: the built-in ones and those registered at run time.

Matching never imports a library (see :func:`.converter.module_class`). Tests and users may
register their own converters (``register``), which is how the transaction is exercised on
machines without a GPU library. The built-in list (:mod:`.builtin`) is read here; it knows
nothing of this module.
"""

from __future__ import annotations

import logging
import threading

from . import builtin
from .converter import Converter, Direction

log = logging.getLogger(__name__)

# per process: the converters registered, as Python imports their modules: once per process
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
    """Append the built-in converters on first use: after every converter registered before."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    for converter in builtin.CONVERTERS:
        register(converter, first=False)


def find(obj: object, direction: Direction) -> Converter | None:
    """The first converter for ``obj``; a converter whose test raises (on an object whose
    ``__class__`` raises, say) counts as not matching, logged at debug."""
    _load_builtins()
    with _lock:
        candidates = list(_converters)
    for converter in candidates:
        if converter.direction != direction:
            continue
        try:
            if converter.matches(obj):
                return converter
        except Exception:
            log.debug("the %s converter's test raised", converter.label, exc_info=True)
    return None
