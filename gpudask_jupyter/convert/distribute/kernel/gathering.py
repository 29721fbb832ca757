"""A Dask collection brought back into the kernel as one pandas or NumPy object.

- **CUDA IPC** (GPU partitions on workers of this machine whose GPU the kernel sees too): the
  worker copies the partition's fixed-width columns into one block of its GPU memory and
  exports it; the kernel copies them from there into the final arrays through its own pinned
  pipeline (:mod:`..device_blocks`). The CPU touches each byte once, in the kernel.

Otherwise each partition is first made a host object by the worker that holds it (through that
worker's pinned pipeline when it is on a GPU). Then:

- **shared memory** (workers of this machine): the kernel creates an owner-only segment for each
  partition, the worker writes the partition's fixed-width bytes into it, and the kernel reads
  them straight into the final arrays, several at a time; in rounds when shared memory is small.
  What has no fixed-width buffers (:mod:`..coded_columns`) comes back through Dask.
- **client** (workers elsewhere): Dask's own transfer of the host partition, then a copy into
  the final arrays.

The final object is allocated once; no ``concat`` copies it again. Partitions whose layouts
differ (a column that is float in one partition and int in another) are concatenated by pandas
instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .... import compat
from ...dask_collections import on_gpu
from ...pinned import host_memory, ring, staging, thread_count
from .. import (
    coded_columns,
    device_blocks,
    device_packing,
    partition_layout,
    segment_plan,
    shared_memory,
)
from ..partition_layout import Layout
from ..worker import tasks as worker_tasks
from . import persisted
from .cluster_view import WorkerView, completed, wait_for
from .task_placer import Placer

log = logging.getLogger(__name__)

SHARED = shared_memory.ROUTE
DIRECT = device_blocks.ROUTE


@dataclass
class Back:
    """One partition on its way back."""

    number: int
    position: tuple[int, ...]
    holder: str
    host: Any  # future of the host partition on its worker (or the host object, once here)
    shared: bool  # its fixed-width bytes cross shared memory
    partition: Any = None  # the partition's own future
    device: int | None = None  # the kernel's number for its GPU: copied from a packed block
    handle: bytes = b""
    layout: Layout | None = None
    rest: Any = None
    into: list[Any] = dataclasses.field(default_factory=list)  # where its slots' bytes go
    own: dict[int, Any] = dataclasses.field(default_factory=dict)  # its strings' own buffers

    @property
    def route(self) -> str:
        if self.device is not None:
            return DIRECT if self.rest is None else f"{DIRECT} + client"
        if not self.shared:
            return "client"
        return SHARED if self.rest is None else f"{SHARED} + client"


def _start(
    collection: Any, placer: Placer, views: Sequence[WorkerView], shm: bool, direct: bool = True
) -> list[Back]:
    """Compute the partitions where they live and start each on its way: packed into a block
    of its GPU (CUDA IPC, if ``direct``), or made a host object on its worker."""
    client = placer.client
    futures, positions = persisted.partitions(client, collection)
    placer.adopt(futures, collection)
    wait_for(client, futures, {})
    holders = client.who_has(futures)
    by_address = {view.address: view for view in views}
    devices = device_blocks.kernel_devices() if direct and on_gpu(collection) else {}
    backs = []
    for i, (future, position) in enumerate(zip(futures, positions, strict=True)):
        holder = holders[future.key][0]
        view = by_address.get(holder)
        package = view is not None and view.package
        shared = package and shm and view is not None and view.local
        back = Back(i, position, holder, future, shared, future)
        if view is not None and view.local and view.gpu in devices:
            back.device, back.shared = devices[str(view.gpu)], False
            back.host = placer.submit(device_packing.pack, holder, future)
        elif package:
            back.host = placer.submit(worker_tasks.to_host, holder, future)
        backs.append(back)
    return backs


def _describe(backs: Sequence[Back], placer: Placer) -> None:
    direct = [b for b in backs if b.device is not None]
    told = [placer.submit(device_packing.unpacked, b.holder, b.host) for b in direct]
    wait_for(placer.client, told, placer.where)
    answers = placer.client.gather(told)
    placer.drop(told)
    for back, answer in zip(direct, answers, strict=True):
        if isinstance(answer, str):
            log.info(
                "partition %d of %s comes back the usual way: %s", back.number, back.holder, answer
            )
            _unpacked_on_host([back], placer)
        else:
            back.layout, back.rest, back.handle = answer
    shared = [b for b in backs if b.shared]
    described = [placer.submit(worker_tasks.layout_of, b.holder, b.host) for b in shared]
    wait_for(placer.client, described, placer.where)
    for back, (layout, rest) in zip(shared, placer.client.gather(described), strict=True):
        back.layout, back.rest = layout, rest
    others = [b for b in backs if not b.shared and b.device is None]
    wait_for(placer.client, [b.host for b in others], placer.where)
    for back, host in zip(others, placer.client.gather([b.host for b in others]), strict=True):
        back.host = worker_tasks.to_host(host)  # a worker that could not run this package's tasks
        back.layout, _, back.rest = partition_layout.split(back.host)


def _through_devices(backs: Sequence[Back], placer: Placer) -> list[Back]:
    """The packed partitions' bytes from their blocks into their place, one GPU after the
    other; the blocks are released as soon as they are copied. Returns the partitions of
    workers whose blocks the kernel could not open."""
    refused: set[str] = set()
    failed: list[Back] = []
    for device in sorted({b.device for b in backs if b.device is not None}):
        copies: list[ring.Segment] = []
        with contextlib.ExitStack() as stack:
            for back in (b for b in backs if b.device == device):
                assert back.layout is not None
                if back.holder in refused:
                    failed.append(back)
                    continue
                try:
                    opened = device_blocks.opened(back.handle, device, back.holder)
                    pointer = stack.enter_context(opened)
                except device_blocks.NotOpened:  # said by opened()
                    refused.add(back.holder)
                    failed.append(back)
                    continue
                copies += device_blocks.segments(back.layout, pointer, back.into)
            staging.copy(copies, False, device)
    placer.drop([b.host for b in backs if b.device is not None and b not in failed])
    return failed


def _rerouted(failed: Sequence[Back], placer: Placer) -> bool:
    """Partitions whose blocks could not be opened, made host objects by their workers and put
    in their place by :func:`_copy_local`; False when they do not fit the layout after all."""
    _unpacked_on_host(failed, placer)
    _through_client(failed, placer)
    for back in failed:
        assert back.layout is not None
        layout, _, rest = partition_layout.split(back.host)
        if not (layout.same_shape(back.layout) and layout.rows == back.layout.rows):
            return False
        if any(layout.slots[i] != back.layout.slots[i] for i in layout.own_slots()):
            return False  # string buffers of other sizes than those made ready for them
        back.rest = rest
    return True


def _unpacked_on_host(backs: Sequence[Back], placer: Placer) -> None:
    """Packed partitions that will not be copied from their blocks: made host objects by their
    workers instead (their blocks released)."""
    for back in backs:
        if back.device is not None:
            placer.drop([back.host])
            back.device = None
            back.host = placer.submit(worker_tasks.to_host, back.holder, back.partition)


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
    slots = tuple(partition_layout.Slot(s.dtype, (rows, *s.shape[1:])) for s in first.slots)
    return dataclasses.replace(first, rows=rows, slots=slots)


def _allocate(final: Layout, backs: Sequence[Back]) -> list[Any]:
    """The final slots' arrays; each partition's ``into`` becomes views of its rows there, or
    for a string column's buffers, arrays of its own (``own``: the column is its chunks)."""
    own = final.own_slots()
    arrays = [
        None if i in own else host_memory.empty(slot.shape, slot.dtype)
        for i, slot in enumerate(final.slots)
    ]
    row = 0
    for back in backs:
        assert back.layout is not None
        end = row + back.layout.rows
        back.own = {
            i: host_memory.empty(back.layout.slots[i].shape, back.layout.slots[i].dtype)
            for i in own
        }
        back.into = [
            partition_layout.as_bytes(back.own[i] if a is None else a[row:end])
            for i, a in enumerate(arrays)
        ]
        row = end
    return arrays


def _joined(final: Layout, backs: Sequence[Back]) -> dict[int, Any]:
    """The string columns, by position: each partition's buffers made its pandas array, joined
    as Arrow chunks (no copy)."""
    made = {}
    for position, column in enumerate(final.columns):
        if isinstance(column, coded_columns.Coded) and not column.stacks:
            pieces = []
            for back in backs:
                assert back.layout is not None
                mine = back.layout.columns[position]
                assert isinstance(mine, coded_columns.Coded)
                pieces.append(coded_columns.rebuild_column(mine, back.layout.rows, back.own))
            made[position] = coded_columns.joined_strings(pieces, column.dtype)
    for back in backs:
        back.own = {}
    return made


def _read(
    delivery: segment_plan.Delivery, path: str, into: list[Any], segments: shared_memory.Segments
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
        plan = segment_plan.plan(sizes, {n: b.holder for n, b in shared.items()}, budget)
    except segment_plan.TooSmall:
        log.debug("shared memory too small for a round: through the client", exc_info=True)
        _through_client(list(shared.values()), placer)
        return 0
    threads = thread_count.copy_threads()
    with ThreadPoolExecutor(threads, thread_name_prefix="gpudask-shm") as pool:
        for deliveries in plan:
            writes: dict[str, tuple[segment_plan.Delivery, str, Back]] = {}
            futures = []
            for delivery in deliveries:
                back, path = shared[delivery.partition], segments.create()
                futures.append(
                    placer.submit(
                        worker_tasks.write_segment, back.holder, back.host, path, delivery.pieces
                    )
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
        if back.shared or back.device is not None:
            continue
        _, arrays, _ = partition_layout.split(back.host)
        for into, array in zip(back.into, arrays, strict=True):
            into[:] = partition_layout.as_bytes(array)
        back.host = None


def _index(final: Layout, backs: Sequence[Back], arrays: list[Any]) -> Layout:
    """A RangeIndex stays one if the partitions' ranges follow each other; else it becomes an
    int64 slot of their values."""
    if final.index[0] != "range":
        return final
    import numpy as np

    step = final.index[2]
    expected, consecutive = final.index[1], True
    ranges = []
    for back in backs:
        assert back.layout is not None
        _, first, its_step, _ = back.layout.index
        ranges.append((first, its_step, back.layout.rows))
        consecutive = consecutive and first == expected and its_step == step
        expected = first + its_step * back.layout.rows
    if consecutive:  # (the values are made only when needed: a GiB for a billion rows)
        return final
    parts = [np.arange(first, first + s * rows, s) for first, s, rows in ranges]
    arrays.append(np.concatenate(parts) if parts else np.empty(0, np.int64))
    slot = partition_layout.Slot(arrays[-1].dtype, arrays[-1].shape)
    index = ("slot", len(arrays) - 1, final.index[3])
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


def _concatenated(
    backs: Sequence[Back], placer: Placer, collection: Any
) -> tuple[Any, list[tuple[str, str]], int]:
    """Partitions that cannot be stacked slot by slot: through the client (packed ones made
    host objects first), joined by pandas / NumPy. What :func:`gather` returns."""
    _unpacked_on_host(backs, placer)
    _through_client([b for b in backs if placer.is_future(b.host)], placer)
    hosts = [worker_tasks.to_host(b.host) for b in backs]
    routes = [(b.holder, "client") for b in backs]
    if persisted.is_dataframe(collection):
        import pandas as pd

        return pd.concat(hosts), routes, 0
    import numpy as np

    out = np.empty(collection.shape, dtype=hosts[0].dtype)
    for back, host in zip(backs, hosts, strict=True):
        out[persisted.block_slices(collection.chunks, back.position)] = host
    return out, routes, 0


def byte_order_of_meta(host: Any, collection: Any) -> Any:
    """``host`` with the byte order the collection's meta gives its columns (or its values):
    a big-endian column crosses as the native numbers (Dask's own compute returns it so too) and
    comes back as the user's dtype, not silently as another one."""
    import numpy as np

    meta = compat.dask_meta(collection)
    if meta is None:
        return host

    def wanted(dtype: Any, have: Any) -> bool:
        return (
            isinstance(dtype, np.dtype)
            and not dtype.isnative
            and isinstance(have, np.dtype)
            and have == dtype.newbyteorder("=")
        )

    if getattr(meta, "ndim", 0) == 2 and hasattr(meta, "dtypes"):  # a DataFrame
        # by position: labels may repeat, and host[label] is then a frame
        if not meta.columns.equals(host.columns):
            return host
        changed = [
            (i, t)
            for i, (t, have) in enumerate(zip(meta.dtypes, host.dtypes, strict=True))
            if wanted(t, have)
        ]
        if not changed:
            return host
        host = host.copy(deep=False)
        for i, dtype in changed:
            host.isetitem(i, host.iloc[:, i].astype(dtype))
        return host
    dtype = getattr(meta, "dtype", None)
    return host.astype(dtype) if wanted(dtype, getattr(host, "dtype", None)) else host


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
        backs = _start(collection, placer, views, shm=False, direct=False)
        return _concatenated(backs, placer, collection)
    started = time.perf_counter()
    backs = _start(collection, placer, views, shm=segments is not None)
    _describe(backs, placer)
    final = _final_layout(backs)
    if final is None:
        log.debug("partitions of different layouts: joined by pandas / NumPy")
        return _concatenated(backs, placer, collection)
    described = time.perf_counter()
    arrays = _allocate(final, backs)
    failed = _through_devices(backs, placer)
    if failed and not _rerouted(failed, placer):
        log.debug("partitions rerouted do not stack with the others: joined by pandas / NumPy")
        return _concatenated(backs, placer, collection)
    routes = [(b.holder, b.route) for b in backs]
    copied = time.perf_counter()
    rounds = 0
    if segments is not None and any(b.shared for b in backs):
        rounds = _through_segments(backs, placer, segments, shared_memory.budget())
    _copy_local(backs)
    final = _index(final, backs, arrays)
    made = _joined(final, backs)
    host = partition_layout.rebuild(final, arrays, _rest(final, backs), made)
    log.debug(
        "gathered in %.3f s: partitions described %.3f s, through GPU memory %.3f s, the rest "
        "and the object %.3f s", time.perf_counter() - started, described - started,
        copied - described, time.perf_counter() - copied,
    )  # fmt: skip
    return host, routes, rounds
