"""Moving objects between host and GPU, what %%to_gpu and %%to_cpu (and :mod:`..api`) run:
converters keyed by type, the transaction, failures in words, the report; the pinned copy
(:mod:`.pinned`) and objects spread over the workers (:mod:`.distribute`).
"""

from __future__ import annotations

from ..errors import ConversionError
from .arguments import check_to_cpu, check_to_gpu
from .converter import Context, Converter, Direction, module_class
from .lookup import find, register, unregister
from .notices import GpuUnavailableWarning, forget_notices, notice_once
from .transaction import convert_names

__all__ = [
    "Context",
    "ConversionError",
    "Converter",
    "Direction",
    "GpuUnavailableWarning",
    "check_to_cpu",
    "check_to_gpu",
    "convert_names",
    "find",
    "forget_notices",
    "module_class",
    "notice_once",
    "register",
    "unregister",
]
