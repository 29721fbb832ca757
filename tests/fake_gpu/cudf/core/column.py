"""``cudf.core.column``: a column over a ``pylibcudf.Column``, built as cuDF 26 builds them
(``ColumnBase.create``), and ``as_column``, cuDF's own path, which keeps what it was given."""

from __future__ import annotations

from typing import Any


class ColumnBase:
    def __init__(self, plc_column: Any, dtype: Any, source: Any = None) -> None:
        self.plc_column = plc_column
        self.dtype = dtype
        self.source = source  # what as_column was given: cuDF's own path

    @staticmethod
    def create(col: Any, dtype: Any, validate: bool = True) -> ColumnBase:
        return ColumnBase(col, dtype)

    def to_pylibcudf(self) -> Any:
        return self.plc_column


class CategoricalColumn(ColumnBase):
    @property
    def codes(self) -> Any:
        return self.plc_column


def as_column(arbitrary: Any, nan_as_null: Any = None, dtype: Any = None) -> ColumnBase:
    return ColumnBase(None, getattr(arbitrary, "dtype", dtype), source=arbitrary)
