"""A Dask collection brought back into the kernel as one pandas or NumPy object.

Each partition is first made a host object by the worker that holds it (through that worker's
pinned pipeline when it is on a GPU). Then:

- **shared memory** (workers of this machine): the kernel creates an owner-only segment for each
  partition, the worker writes the partition's fixed-width bytes into it, and the kernel reads
  them straight into the final arrays, several at a time; in rounds when shared memory is small.
  What is not fixed-width comes back through Dask.
- **client** (workers elsewhere): Dask's own transfer of the host partition, then a copy into
  the final arrays.

The final object is allocated once; no ``concat`` copies it again. Partitions whose layouts
differ (a column that is float in one partition and int in another) are concatenated by pandas
instead.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .. import host_load
from . import layout as layouts
from . import persisted, pieces, shared_memory, worker
from .cluster_view import WorkerView, completed, wait_for
from .layout import Layout
from .placing import Placer

log = logging.getLogger(__name__)

SHARED = "shared memory"


@dataclass
class Back:
    """One partition on its way back."""

    number: int
    position: tuple[int, ...]
    holder: str
    host: Any  # future of the host partition on its worker (or the host object, once here)
    shared: bool
    layout: Layout | None = None
    rest: Any = None
    into: list[Any] = dataclasses.field(default_factory=list)  # where its slots' bytes go

    @property
    def route(self) -> str:
        if not self.shared:
            return "client"
        return SHARED if self.rest is None else f"{SHARED} + client"


def _start(collection: Any, placer: Placer, views: Sequence[WorkerView], shm: bool) -> list[Back]:
    """Compute the partitions where they live and make each a host object on its worker."""
    client = placer.client
    futures, positions = persisted.partitions(client, collection)
    placer.adopt(futures)
    wait_for(client, futures, {})
    holders = client.who_has(futures)
    by_address = {view.address: view for view in views}
    backs = []
    for i, (future, position) in enumerate(zip(futures, positions, strict=True)):
        holder = holders[future.key][0]
        view = by_address.get(holder)
        package = view is not None and view.package
        host = placer.submit(worker.to_host, holder, future) if package else future
        shared = package and shm and view is not None and view.local
        backs.append(Back(i, position, holder, host, shared))
    return backs


def _describe(backs: Sequence[Back], placer: Placer) -> None:
    shared = [b for b in backs if b.shared]
    described = [placer.submit(worker.describe, b.holder, b.host) for b in shared]
    wait_for(placer.client, described, placer.where)
    for back, (layout, rest) in zip(shared, placer.client.gather(described), strict=True):
        back.layout, back.rest = layout, rest
    others = [b for b in backs if not b.shared]
    wait_for(placer.client, [b.host for b in others], placer.where)
    for back, host in zip(others, placer.client.gather([b.host for b in others]), strict=True):
        back.host = worker.to_host(host)  # a worker that could not run this package's tasks
        back.layout, _, back.rest = layouts.split(back.host)


def _final_layout(backs: Sequence[Back]) -> Layout | None:
    """The whole object's layout, or None when the partitions cannot be stacked slot by slot."""
    first = backs[0].layout
    assert first is not None
    if first.kind == "array" and not first.slots:
        return None
    for back in backs[1:]:
        if back.layout is None or not first.same_shape(back.layout):
            return None
    rows = sum(b.layout.rows for b in backs if b.layout)
    slots = tuple(layouts.Slot(s.dtype, (rows, *s.shape[1:])) for s in first.slots)
    return dataclasses.replace(first, rows=rows, slots=slots)


def _allocate(final: Layout, backs: Sequence[Back]) -> list[Any]:
    """The final slots' arrays; each partition's ``into`` becomes views of its rows there."""
    arrays = layouts.empty_slots(final)
    row = 0
    for back in backs:
        assert back.layout is not None
        end = row + back.layout.rows
        back.into = [layouts.as_bytes(a[row:end]) for a in arrays]
        row = end
    return arrays


def _read(
    delivery: pieces.Delivery, path: str, into: list[Any], segments: shared_memory.Segments
) -> None:
    """Copy a segment's pieces into their place, then remove it (in this thread: giving its
    pages back takes time too)."""
    with shared_memory.opened(path, writable=False) as fd:
        for piece in delivery.pieces:
            view = into[piece.slot][piece.start : piece.start + piece.nbytes]
            shared_memory.read_at(fd, view, piece.offset)
    segments.remove(path)


def _through_segments(
    backs: Sequence[Back], placer: Placer, segments: shared_memory.Segments, budget: int
) -> int:
    """Bring the shared parts' slots into their ``into`` arrays; the number of rounds."""
    shared = {b.number: b for b in backs if b.shared}
    sizes = {n: [s.nbytes for s in b.layout.slots] for n, b in shared.items() if b.layout}
    try:
        plan = pieces.plan(sizes, {n: b.holder for n, b in shared.items()}, budget)
    except pieces.TooSmall:
        log.debug("shared memory too small for a round: through the client", exc_info=True)
        _through_client(list(shared.values()), placer)
        return 0
    threads = host_load.copy_threads()
    with ThreadPoolExecutor(threads, thread_name_prefix="gpudask-shm") as pool:
        for deliveries in plan:
            writes: dict[str, tuple[pieces.Delivery, str, Back]] = {}
            futures = []
            for delivery in deliveries:
                back, path = shared[delivery.partition], segments.create()
                futures.append(
                    placer.submit(worker.write, back.holder, back.host, path, delivery.pieces)
                )
                writes[futures[-1].key] = (delivery, path, back)
            reads = []
            for future in completed(placer.client, futures, placer.where):
                delivery, path, back = writes[future.key]  # read as soon as it is written
                reads.append(pool.submit(_read, delivery, path, back.into, segments))
            for read in reads:
                read.result()
    return len(plan)


def _through_client(backs: Sequence[Back], placer: Placer) -> None:
    wait_for(placer.client, [b.host for b in backs], placer.where)
    for back, host in zip(backs, placer.client.gather([b.host for b in backs]), strict=True):
        back.host, back.shared = host, False


def _copy_local(backs: Sequence[Back]) -> None:
    """The slots of partitions that came through the client, into their place."""
    for back in backs:
        if back.shared:
            continue
        _, arrays, _ = layouts.split(back.host)
        for into, array in zip(back.into, arrays, strict=True):
            into[:] = layouts.as_bytes(array)
        back.host = None


def _index(final: Layout, backs: Sequence[Back], arrays: list[Any]) -> Layout:
    """A RangeIndex stays one if the partitions' ranges follow each other; else it becomes an
    int64 slot of their values."""
    if final.index[0] != "range":
        return final
    import numpy as np

    step = final.index[2]
    expected, consecutive = final.index[1], True
    parts = []
    for back in backs:
        assert back.layout is not None
        _, first, its_step = back.layout.index
        parts.append(np.arange(first, first + its_step * back.layout.rows, its_step))
        consecutive = consecutive and first == expected and its_step == step
        expected = first + its_step * back.layout.rows
    if consecutive:
        return final
    arrays.append(np.concatenate(parts) if parts else np.empty(0, np.int64))
    slot = layouts.Slot(arrays[-1].dtype, arrays[-1].shape)
    index = ("slot", len(arrays) - 1, None)
    return dataclasses.replace(final, slots=(*final.slots, slot), index=index)


def _rest(final: Layout, backs: Sequence[Back]) -> Any:
    rests = [b.rest for b in backs]
    if all(r is None for r in rests):
        return None
    import pandas as pd

    rest = pd.concat(rests)
    if final.index[0] != "rest":
        rest.index = pd.RangeIndex(len(rest))
    return rest


def _concatenated(backs: Sequence[Back], placer: Placer, collection: Any) -> Any:
    """Partitions that cannot be stacked slot by slot: through the client, joined by pandas."""
    _through_client([b for b in backs if placer.is_future(b.host)], placer)
    hosts = [worker.to_host(b.host) for b in backs]
    if persisted.is_dataframe(collection):
        import pandas as pd

        return pd.concat(hosts)
    import numpy as np

    out = np.empty(collection.shape, dtype=hosts[0].dtype)
    for back, host in zip(backs, hosts, strict=True):
        out[persisted.block_slices(collection.chunks, back.position)] = host
    return out


def gather(
    collection: Any,
    placer: Placer,
    views: Sequence[WorkerView],
    segments: shared_memory.Segments | None,
) -> tuple[Any, list[tuple[str, str]], int]:
    """(the host object, (worker, route) per partition, rounds through shared memory)."""
    is_array = not persisted.is_dataframe(collection)
    if is_array and not persisted.row_blocks(collection.chunks):
        log.debug("blocks across columns: through the client")
        backs = _start(collection, placer, views, shm=False)
        return _concatenated(backs, placer, collection), [(b.holder, "client") for b in backs], 0
    backs = _start(collection, placer, views, shm=segments is not None)
    _describe(backs, placer)
    final = _final_layout(backs)
    routes = [(b.holder, b.route) for b in backs]
    if final is None:
        log.debug("partitions of different layouts: joined by pandas / NumPy")
        return _concatenated(backs, placer, collection), [(b.holder, "client") for b in backs], 0
    arrays = _allocate(final, backs)
    rounds = 0
    if segments is not None and any(b.shared for b in backs):
        rounds = _through_segments(backs, placer, segments, shared_memory.budget())
    _copy_local(backs)
    final = _index(final, backs, arrays)
    return layouts.join(final, arrays, _rest(final, backs)), routes, rounds
