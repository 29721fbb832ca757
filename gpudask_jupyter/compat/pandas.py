"""The private parts of pandas this package reads: a masked array's data and mask."""

from __future__ import annotations

from typing import Any

from .probes import usable
from .probing import NeedTuple, sets

DISTRIBUTION = "pandas"
MASKED = "pandas.core.arrays.masked.BaseMaskedArray's _data and _mask"


def needs() -> list[NeedTuple]:
    from pandas.core.arrays.masked import BaseMaskedArray

    def parts() -> None:
        sets(BaseMaskedArray, "_data")
        sets(BaseMaskedArray, "_mask")

    return [(MASKED, parts, "nullable integer, float and boolean columns take cuDF's own path")]


def masked_parts(values: Any) -> tuple[Any, Any] | None:
    """(data, missing) NumPy arrays of a pandas masked array (Int64, Float64, boolean ...).

    ``pandas.core.arrays.masked.BaseMaskedArray`` is not public, nor are its ``_data`` (the
    values, arbitrary where missing) and ``_mask`` (True where missing); probed, None where
    they are not there (the caller then takes cuDF's own path). The public ``to_numpy`` would
    copy and fill the missing values.
    """
    from pandas.core.arrays.masked import BaseMaskedArray

    if not usable(DISTRIBUTION, MASKED):
        return None

    if isinstance(values, BaseMaskedArray):
        return values._data, values._mask
    return None
