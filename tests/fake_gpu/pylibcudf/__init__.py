"""A stand-in for pylibcudf on machines without a GPU: what the fast paths of
``gpudask_jupyter.compat.cudf`` call, with host arrays as the spans. As in the real one (a
Cython module), ``Column``'s parameters are not for ``inspect.signature`` to read, only its
docstring's first line; the rest are plain Python."""

from __future__ import annotations

from typing import Any

from . import concatenate


class TypeId:
    """``pylibcudf.TypeId``'s members the fast paths use (a plain class here, so that a test
    can take one away)."""

    INT32 = 3
    INT64 = 4
    STRING = 23


class DataType:
    def __init__(self, id: int, scale: int = 0) -> None:
        self._id = id

    def id(self) -> int:
        return self._id


class gpumemoryview:
    def __init__(self, obj: Any) -> None:
        self.obj = obj

    @property
    def ptr(self) -> int:
        return int(self.obj.ctypes.data)

    @property
    def size(self) -> int:
        return int(self.obj.nbytes)


class Column:
    """Column(DataType data_type, size_type size, data: Span | None, mask: Span | None, size_type null_count, size_type offset, children: Iterable[Column], bool validate=True)

    A column over spans, as the real one's constructor takes them.
    """  # noqa: E501 (Cython's line, as it writes it)

    def __init__(self, *args: Any) -> None:  # as inspect sees a Cython class: no signature
        data_type, size, data, mask, null_count, offset, children = args[:7]
        self._type, self._size, self._data, self._mask = data_type, size, data, mask
        self._null_count, self._offset, self._children = null_count, offset, list(children)

    def offset(self) -> int:
        return int(self._offset)

    def num_children(self) -> int:
        return len(self._children)

    def child(self, index: int) -> Column:
        return self._children[index]

    def size(self) -> int:
        return int(self._size)

    def data(self) -> Any:
        return self._data

    def null_mask(self) -> Any:
        return self._mask

    def null_count(self) -> int:
        return int(self._null_count)

    def type(self) -> DataType:
        return self._type


__all__ = ["Column", "DataType", "TypeId", "concatenate", "gpumemoryview"]
