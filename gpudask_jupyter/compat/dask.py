"""The private parts of dask this package calls: a collection's meta and how it is rebuilt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .probes import probe
from .probing import NeedTuple

DISTRIBUTION = "dask"
META = "a collection's _meta"
POSTPERSIST = "__dask_postpersist__()'s arguments (meta, divisions, ...)"


def needs() -> list[NeedTuple]:
    def meta() -> None:
        import dask.array as da

        if getattr(da.zeros(1), "_meta", None) is None:
            raise AttributeError("dask.array.Array has no _meta")

    def postpersist() -> None:
        import dask.dataframe as dd
        import pandas as pd

        frame = dd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1)
        _, args = frame.__dask_postpersist__()
        if not isinstance(args[0], pd.DataFrame) or tuple(args[1]) != tuple(frame.divisions):
            raise TypeError(f"__dask_postpersist__ gives {args!r}")

    return [
        (
            META,
            meta,
            "a Dask collection's partition type is not known before it computes: %%to_gpu "
            "and %%to_cpu leave Dask collections as they are",
        ),
        (POSTPERSIST, postpersist, "--distribute cannot hand back a Dask DataFrame"),
    ]


def dask_meta(collection: Any) -> Any:
    """The empty object of the partition type a Dask collection holds (None if it has none).

    ``_meta`` (private, on ``dask.dataframe`` and ``dask.array`` collections; probed) is what
    tells a cuDF- or CuPy-backed collection from a pandas- or NumPy-backed one
    without computing anything.
    """
    return getattr(collection, "_meta", None)


def persisted_frame(template: Any, graph: Mapping[Any, Any], meta: Any) -> Any:
    """``template`` (a ``dd.from_delayed`` collection) rebuilt over ``graph`` (its partitions'
    futures), its meta exactly ``meta``.

    ``__dask_postpersist__`` is the collection protocol's way to rebuild a persisted collection;
    the arguments it returns are ``(meta, divisions, name)`` (private order; probed). The meta is
    replaced because dask's ``make_meta`` rebuilds Arrow-backed columns by label (dask 2026.8):
    with a repeated label every such column took the first one's dtype, and the collection's
    dtypes then disagreed with its partitions.
    """
    if not probe(DISTRIBUTION).has(POSTPERSIST):
        [lack] = [lack for lack in probe(DISTRIBUTION).lacks() if lack.name == POSTPERSIST]
        raise RuntimeError(lack.sentence())
    rebuild, args = template.__dask_postpersist__()
    return rebuild(graph, meta, *args[1:])
