"""The private parts of dask this package calls: a collection's meta and how it is rebuilt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the library (its name on PyPI) and the releases these calls were checked on, lowest and
#: newest (:class:`.releases.Checked`)
CHECKED = ("dask", "2024.8", "2026.8")


def dask_meta(collection: Any) -> Any:
    """The empty object of the partition type a Dask collection holds (None if it has none).

    ``_meta`` (private, on ``dask.dataframe`` and ``dask.array`` collections; dask 2024.8 –
    2026.8) is what tells a cuDF- or CuPy-backed collection from a pandas- or NumPy-backed one
    without computing anything.
    """
    return getattr(collection, "_meta", None)


def persisted_frame(template: Any, graph: Mapping[Any, Any], meta: Any) -> Any:
    """``template`` (a ``dd.from_delayed`` collection) rebuilt over ``graph`` (its partitions'
    futures), its meta exactly ``meta``.

    ``__dask_postpersist__`` is the collection protocol's way to rebuild a persisted collection;
    the arguments it returns are ``(meta, divisions, name)`` (private order; dask 2024.12 –
    2026.8). The meta is replaced because dask's ``make_meta`` rebuilds Arrow-backed columns by
    label (dask 2026.8): with a repeated label every such column took the first one's dtype, and
    the collection's dtypes then disagreed with its partitions.
    """
    rebuild, args = template.__dask_postpersist__()
    return rebuild(graph, meta, *args[1:])
