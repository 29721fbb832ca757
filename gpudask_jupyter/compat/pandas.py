"""The private parts of pandas this package reads: a masked array's data and mask."""

from __future__ import annotations

from typing import Any

#: the library (its name on PyPI) and the releases these calls were checked on, lowest and
#: newest (:class:`.releases.Checked`)
CHECKED = ("pandas", "2.2", "3.1")


def masked_parts(values: Any) -> tuple[Any, Any] | None:
    """(data, missing) NumPy arrays of a pandas masked array (Int64, Float64, boolean ...).

    ``pandas.core.arrays.masked.BaseMaskedArray`` is not public, nor are its ``_data`` (the
    values, arbitrary where missing) and ``_mask`` (True where missing); pandas 2.2 – 3.1. The
    public ``to_numpy`` would copy and fill the missing values.
    """
    from pandas.core.arrays.masked import BaseMaskedArray

    if isinstance(values, BaseMaskedArray):
        return values._data, values._mask
    return None
