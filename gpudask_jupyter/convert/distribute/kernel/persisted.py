"""Persisted Dask collections made from partition futures, and a collection's partitions back.

A collection whose graph holds only futures is what ``persist()`` returns: the scheduler knows
where each partition lives, ``distributed.futures_of`` finds them, and every computation starts
from there. A Dask array is built from such a graph directly (``da.Array``); a Dask DataFrame
through the collection protocol's ``__dask_postpersist__``, the way ``Client.persist`` rebuilds
one (a ``dd.from_delayed`` collection only refers to the futures and would look lazy).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import Any

from .... import compat
from ...dask_collections import is_dask_dataframe
from ..worker import tasks as worker_tasks


def meta_of(obj: Any, gpu: bool) -> Any:
    """An empty object of the partitions' type (cuDF / CuPy on GPU workers)."""
    import numpy as np

    if isinstance(obj, np.ndarray):
        empty = np.empty((0,) * obj.ndim, dtype=obj.dtype)
        if gpu:
            import cupy

            return cupy.empty(empty.shape, dtype=empty.dtype)
        return empty
    empty = obj.iloc[:0]
    if gpu:
        import dask_cudf  # noqa: F401  registers the "cudf" backend of dask.dataframe

        return worker_tasks.to_device(empty)
    return _fresh(empty)


def _fresh(empty: Any) -> Any:
    """An empty pandas object like ``empty`` that holds no part of the user's buffers (an empty
    slice of a column still refers to all of them): dask's ``make_meta``, which takes every
    column anew. It rebuilds columns by label, so repeated labels are set aside meanwhile."""
    import pandas as pd
    from dask.dataframe.dispatch import make_meta

    if isinstance(empty, pd.Series) or empty.columns.is_unique:
        return make_meta(empty)
    meta = make_meta(empty.set_axis(pd.RangeIndex(empty.shape[1]), axis=1))
    meta.columns = empty.columns
    return meta


def frame(futures: Sequence[Any], meta: Any, divisions: tuple[Any, ...] | None) -> Any:
    """A persisted Dask DataFrame / Series whose partition ``i`` is ``futures[i]``."""
    import dask.dataframe as dd

    template = dd.from_delayed(list(futures), meta=meta, divisions=divisions, verify_meta=False)
    name = f"gpudask-{uuid.uuid4().hex}"
    # partitions in the order of the graph's sorted keys: (name, 0), (name, 1), ...
    graph = {(name, i): future for i, future in enumerate(futures)}
    return compat.persisted_frame(template, graph, meta)


def array(futures: Sequence[Any], meta: Any, rows: Sequence[int], shape: tuple[int, ...]) -> Any:
    """A Dask array of row blocks ``futures`` (each with ``rows[i]`` rows)."""
    import dask.array as da

    name = f"gpudask-{uuid.uuid4().hex}"
    tail = (0,) * (len(shape) - 1)
    graph = {(name, i, *tail): future for i, future in enumerate(futures)}
    chunks = (tuple(rows), *((n,) for n in shape[1:]))
    return da.Array(graph, name, chunks, meta=meta)


def is_dataframe(obj: Any) -> bool:
    return is_dask_dataframe(obj)


def is_index(obj: Any) -> bool:
    """A Dask Index collection (``ddf.index``)."""
    import sys

    dd = sys.modules.get("dask.dataframe")
    return dd is not None and isinstance(obj, dd.Index)


def partitions(client: Any, collection: Any) -> tuple[list[Any], list[tuple[int, ...]]]:
    """The collection's partitions as futures (computed where its data lives), with each
    block's position in the block grid (arrays; ``(i,)`` for frames)."""
    import numpy as np

    blocks = collection.to_delayed(optimize_graph=True)
    positions: list[tuple[int, ...]]
    if is_dataframe(collection):
        positions = [(i,) for i in range(len(blocks))]
        flat = list(blocks)
    else:
        grid = np.asarray(blocks, dtype=object)
        positions = [tuple(int(i) for i in p) for p in np.ndindex(grid.shape)]
        flat = [grid[p] for p in positions]
    futures: list[Any] = client.compute(flat)
    return futures, positions


def block_slices(chunks: Sequence[Sequence[int]], position: tuple[int, ...]) -> tuple[slice, ...]:
    """Where block ``position`` of a chunked array lies in the whole array."""
    out = []
    for sizes, i in zip(chunks, position, strict=True):
        start = sum(sizes[:i])
        out.append(slice(start, start + sizes[i]))
    return tuple(out)


def row_blocks(chunks: Sequence[Sequence[int]]) -> bool:
    """Whether an array's blocks are whole rows (one block across every other axis)."""
    return all(len(sizes) == 1 for sizes in chunks[1:]) and math.prod(
        len(s) for s in chunks
    ) == len(chunks[0])
