"""``cudf.CategoricalDtype``, as far as the fast paths read it."""

from __future__ import annotations

from functools import cached_property
from typing import Any


class CategoricalDtype:
    def __init__(self, categories: Any = None, ordered: bool = False) -> None:
        self._categories = categories
        self.ordered = ordered

    @property
    def categories(self) -> Any:
        return self._categories

    @cached_property
    def _codes_dtype(self) -> Any:
        import numpy as np

        return np.dtype(np.uint8)  # cuDF's smallest unsigned width that holds the categories
