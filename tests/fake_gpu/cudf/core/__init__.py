"""``cudf.core``: its columns and dtypes."""

from . import column, dtypes

__all__ = ["column", "dtypes"]
