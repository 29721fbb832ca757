"""A stand-in for cuDF on machines without a GPU: the column internals the fast paths of
``gpudask_jupyter.compat.cudf`` call, over host arrays where cuDF has device memory, at a release
this package was never checked on. Only tests/cpu/test_cudf_capabilities.py puts it on ``sys.path``
(each test alone, and takes it off again); the GPU tier runs the real one."""

from typing import Any

from . import core
from .core.dtypes import CategoricalDtype

__version__ = "27.02.00"

_options: dict[str, Any] = {"spill": False}


def get_option(name: str) -> Any:
    return _options[name]


def set_option(name: str, value: Any) -> None:
    _options[name] = value


__all__ = ["CategoricalDtype", "core", "get_option", "set_option"]
