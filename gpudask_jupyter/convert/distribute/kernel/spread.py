"""One pandas or NumPy object spread over the cluster's workers as a persisted Dask collection.

The object is cut into row ranges of about equal bytes, dealt round-robin to the workers (so
every worker starts early), and each partition is built by the worker that will hold it:

- **shared memory** (workers of this machine): the kernel writes the partition's fixed-width
  bytes once into an owner-only segment, several partitions at a time; the worker reads them
  into its own memory, or copies them straight to its GPU. When shared memory is small, the
  bytes cross in rounds that fit (:mod:`..segment_plan`). String, categorical and nullable
  columns cross as the fixed-width buffers they are made of (:mod:`..coded_columns`); only what
  has none (Python objects, time zones ...) is scattered by Dask alongside.
- **CUDA IPC** (GPU workers of this machine whose GPU the kernel sees too, the usual case after
  ``%gpu_cluster start``): the worker allocates the partition's device memory and exports it;
  the kernel copies the fixed-width bytes straight into it through its own pinned pipeline
  (:mod:`..device_blocks`), one pass of the CPU over every byte, string buffers included. The
  rest is scattered alongside. A worker whose memory the kernel cannot open takes the
  shared-memory route instead.
- **scatter** (workers elsewhere, or no room): Dask's own transfer of the pandas/NumPy part to
  the worker, converted there.

Every task is pinned to its worker, and the collection is made from the tasks' futures, so the
scheduler knows where each partition lives, as for any persisted collection. Any failure
cancels every future made so far; the caller's segments are removed by its ``Segments``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from ...pinned import staging, thread_count
from ...report import nbytes_of
from .. import device_blocks, partition_layout, segment_plan, shared_memory
from ..worker import tasks as worker_tasks
from .cluster_view import WorkerView, completed, wait_for
from .task_placer import Placer

log = logging.getLogger(__name__)

PARTITION_BYTES = 512 * 2**20  # per partition, unless asked otherwise
SHARED = shared_memory.ROUTE
DIRECT = device_blocks.ROUTE


@dataclass
class Part:
    number: int
    owner: WorkerView
    rows: tuple[int, int]  # first and past-the-last row of the object
    data: Any  # the kernel's slice; once placed, the partition's future
    route: str = "scatter"
    shared: bool = False  # its fixed-width bytes cross shared memory
    device: int | None = None  # the kernel's number for its worker's GPU: copied there directly
    layout: partition_layout.Layout | None = None
    arrays: list[Any] = field(default_factory=list)
    rest: Any = None  # the rest's future once scattered
    _bytes: dict[int, Any] = field(default_factory=dict)

    def source(self, slot: int) -> Any:
        """The slot's bytes, made contiguous once (the kernel's own memory otherwise)."""
        if slot not in self._bytes:
            self._bytes[slot] = partition_layout.as_bytes(self.arrays[slot])
        return self._bytes[slot]


@dataclass
class Spread:
    collection: Any
    futures: list[Any]  # one per partition
    parts: list[tuple[str, str]]  # (worker, route) per partition
    rounds: int


def partition_count(nbytes: int, rows: int, workers: int, asked: int | None) -> int:
    count = asked or workers * max(1, math.ceil(nbytes / workers / PARTITION_BYTES))
    return max(1, min(count, rows))


def bounds(rows: int, count: int) -> list[tuple[int, int]]:
    """``count`` row ranges of ``rows`` rows whose sizes differ by at most one."""
    edges = [rows * i // count for i in range(count + 1)]
    return list(itertools.pairwise(edges))


def divisions(index: Any, parts: Sequence[Part]) -> tuple[Any, ...] | None:
    """Dask divisions when the index is sorted and no value spans two partitions."""
    ranges = [part.rows for part in parts]
    if len(index) == 0 or not index.is_monotonic_increasing:
        return None
    for start, _ in ranges[1:]:
        if not index[start - 1] < index[start]:
            return None
    return (*(index[start] for start, _ in ranges), index[-1])


def _cut(obj: Any, views: Sequence[WorkerView], npartitions: int | None) -> list[Part]:
    rows = len(obj)
    count = partition_count(nbytes_of(obj) or 0, rows, len(views), npartitions)
    ranges = bounds(rows, count)
    take = obj.iloc if hasattr(obj, "iloc") else obj
    return [Part(i, views[i % len(views)], (a, b), take[a:b]) for i, (a, b) in enumerate(ranges)]


def _choose_routes(
    parts: list[Part], segments: shared_memory.Segments | None, devices: dict[str, int]
) -> None:
    """Each part's route; ``devices``: the kernel's GPUs (:func:`..device_blocks.identity` →
    number) when the parts go to GPUs."""
    for part in parts:
        if not part.owner.local:
            part.route = "scatter: worker elsewhere" if part.owner.package else "scatter"
            continue
        direct = part.owner.gpu in devices
        if segments is None and not direct:
            part.route = "scatter: no shared memory here"
            continue
        part.layout, part.arrays, part.rest = partition_layout.split(part.data)
        if direct and device_blocks.usable(part.layout):
            part.device = devices[str(part.owner.gpu)]
            part.route = DIRECT if part.rest is None else f"{DIRECT} + scatter"
        elif part.layout.nbytes == 0 or segments is None:  # Dask moves it whole
            part.route = "scatter: " + (
                "no fixed-width columns" if segments else "no shared memory here"
            )
            part.layout, part.arrays, part.rest = None, [], None
        else:
            _to_shared(part)


def _to_shared(part: Part) -> None:
    part.device, part.shared = None, True
    part.route = SHARED if part.rest is None else f"{SHARED} + scatter"


#: the most one writing thread puts into a segment at a time
WRITE_CHUNK = 64 * 2**20


def write_order(
    deliveries: Sequence[segment_plan.Delivery], width: int
) -> Iterator[tuple[int, segment_plan.Piece, int]]:
    """(segment, piece, offset in the piece) of every :data:`WRITE_CHUNK` to write, taking the
    segments ``width`` at a time and, within those, one chunk of each in turn: ``width``
    threads write into ``width`` files at once, and the first segments are complete early."""
    chunks = [
        [(i, piece, lo) for piece in delivery.pieces for lo in range(0, piece.nbytes, WRITE_CHUNK)]
        for i, delivery in enumerate(deliveries)
    ]
    for first in range(0, len(chunks), max(1, width)):
        window = chunks[first : first + max(1, width)]
        for row in itertools.zip_longest(*window):
            yield from (chunk for chunk in row if chunk is not None)


class _Builder:
    """Places the parts of one object: submits, remembers every future, cancels on failure."""

    def __init__(self, placer: Placer, gpu: bool, segments: shared_memory.Segments | None):
        self.placer, self.gpu, self.segments = placer, gpu, segments

    @contextlib.contextmanager
    def _fill_all(
        self, deliveries: Sequence[segment_plan.Delivery], parts: Sequence[Part]
    ) -> Iterator[Iterator[tuple[segment_plan.Delivery, str]]]:
        """(delivery, segment path) as each segment is complete.

        Every segment is cut into pieces of at most :data:`WRITE_CHUNK` that all the writing
        threads share, taken in :func:`write_order`: writes into one tmpfs file are serialised
        by the file's lock, so the threads write into as many files at once as there are
        threads. A segment's descriptor is closed as soon as it is written, so that the worker
        that reads it holds the last reference and gives its pages back itself (freeing pages
        is slow, and the workers do it in parallel). On leaving, every writing thread has
        stopped (a failure or Ctrl-C cancels the rest).
        """
        assert self.segments is not None
        paths = [self.segments.create() for _ in deliveries]
        fds: dict[int, int] = {}
        threads = thread_count.copy_threads()
        pool = ThreadPoolExecutor(threads, thread_name_prefix="gpudask-shm")
        try:
            for i in range(len(deliveries)):
                fds[i] = shared_memory.open_fd(paths[i], writable=True)
            left = [0] * len(deliveries)
            jobs = {}
            for i, piece, lo in write_order(deliveries, threads):
                source = parts[deliveries[i].partition].source
                data = source(piece.slot)[piece.start + lo : piece.start + piece.nbytes]
                data = data[:WRITE_CHUNK]
                job = pool.submit(shared_memory.write_at, fds[i], data, piece.offset + lo)
                jobs[job] = i
                left[i] += 1

            def written(i: int) -> tuple[segment_plan.Delivery, str]:
                os.close(fds.pop(i))
                return deliveries[i], paths[i]

            def complete() -> Iterator[tuple[segment_plan.Delivery, str]]:
                yield from (written(i) for i in range(len(deliveries)) if not left[i])
                for job in as_completed(jobs):
                    job.result()
                    i = jobs[job]
                    left[i] -= 1
                    if not left[i]:
                        yield written(i)

            yield complete()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            for fd in fds.values():
                os.close(fd)

    def one_round(self, deliveries: Sequence[segment_plan.Delivery], parts: Sequence[Part]) -> None:
        """Every partition whole in its own segment, built as soon as its segment is written."""
        with self._fill_all(deliveries, parts) as written:
            for delivery, path in written:
                part = parts[delivery.partition]
                args = (part.layout, path, delivery.pieces, part.rest, self.gpu)
                part.data = self.placer.submit(worker_tasks.build, part.owner.address, *args)

    def rounds(
        self, plan: Sequence[Sequence[segment_plan.Delivery]], parts: Sequence[Part]
    ) -> None:
        """Partitions arriving over several rounds, each round's segments removed after it."""
        assert self.segments is not None
        received: dict[int, Any] = {}
        for deliveries in plan:
            with self._fill_all(deliveries, parts) as filling:
                written = list(filling)
            futures = []
            for delivery, path in written:
                part = parts[delivery.partition]
                start = received.get(part.number, part.layout)
                received[part.number] = self.placer.submit(
                    worker_tasks.receive, part.owner.address, start, path, delivery.pieces
                )
                futures.append(received[part.number])
            wait_for(self.placer.client, futures, self.placer.where)
            for _, path in written:
                self.segments.remove(path)
        for part in parts:
            if part.shared:
                start = received.get(part.number, part.layout)
                part.data = self.placer.submit(
                    worker_tasks.finish, part.owner.address, start, part.rest, self.gpu
                )

    def direct(self, parts: Sequence[Part], shared: bool) -> None:
        """The parts copied by the kernel into device memory their workers allocated, each as
        soon as its worker has exported its block, and built by its worker right after. A
        worker whose memory cannot be opened here (another container, a driver without IPC)
        has its parts go through shared memory instead (``shared``) or Dask's scatter."""
        placer = self.placer
        blocks, handles = {}, {}
        for part in parts:
            assert part.layout is not None
            size = device_blocks.offsets(part.layout)[1]
            block = placer.submit(device_blocks.allocate, part.owner.address, size)
            handles[part.number] = placer.submit(device_blocks.exported, part.owner.address, block)
            blocks[part.number] = block
        by_key = {handles[p.number].key: p for p in parts}
        refused: set[str] = set()
        spent: dict[str, float] = {}
        for future in completed(placer.client, list(handles.values()), placer.where):
            part, handle = by_key[future.key], future.result()
            if isinstance(handle, str):  # the worker could not allocate or export its block
                log.info(
                    "partition %d goes to %s another way: %s",
                    part.number,
                    part.owner.address,
                    handle,
                )
            elif part.owner.address not in refused:
                try:
                    self._fill_block(part, handle, spent)
                except device_blocks.NotOpened:  # said by opened()
                    refused.add(part.owner.address)
                else:
                    args = (blocks[part.number], part.layout, part.rest)
                    part.data = placer.submit(
                        device_blocks.build_on_block, part.owner.address, *args
                    )
                    continue
            placer.drop([blocks.pop(part.number), future])
            if shared:
                _to_shared(part)
            else:
                part.route, part.device = "scatter: no CUDA IPC", None
                _whole(part, placer)
        log.debug("into GPU memory: %s", ", ".join(f"{k} {v:.3f} s" for k, v in spent.items()))

    @staticmethod
    def _fill_block(part: Part, handle: bytes, spent: dict[str, float]) -> None:
        """Copy the part's slots into its block (``spent``: seconds per step, for the log)."""
        assert part.layout is not None and part.device is not None
        sources = [part.source(slot) for slot in range(len(part.layout.slots))]
        started = time.perf_counter()
        with device_blocks.opened(handle, part.device, part.owner.address) as pointer:
            opened = time.perf_counter()
            copies = device_blocks.segments(part.layout, pointer, sources)
            staging.copy(copies, True, part.device)
            copied = time.perf_counter()
        closed = time.perf_counter()
        steps = {"open": opened - started, "copy": copied - opened, "close": closed - copied}
        for step, seconds in steps.items():
            key = f"{step} GPU {part.device}"
            spent[key] = spent.get(key, 0.0) + seconds

    def scattered(self, parts: Sequence[Part], device: Any) -> None:
        """Dask's own transfer to each part's worker, then ``device`` there (GPU) if given."""
        for part in parts:
            (future,) = self.placer.scatter([part.data], part.owner.address)
            if device is not None:
                convert = worker_tasks.to_device if part.owner.package else device
                future = self.placer.submit(convert, part.owner.address, future)
            part.data = future


def _shared_plan(parts: Sequence[Part]) -> list[list[segment_plan.Delivery]] | None:
    """The rounds for the shared-memory parts, or None when the budget is too small."""
    shared = [p for p in parts if p.shared]
    if not shared:
        return []
    sizes = {p.number: [s.nbytes for s in p.layout.slots] for p in shared if p.layout}
    owner = {p.number: p.owner.address for p in shared}
    try:
        return segment_plan.plan(sizes, owner, shared_memory.budget())
    except segment_plan.TooSmall:
        log.debug("shared memory too small for a round", exc_info=True)
        return None


def _whole(part: Part, placer: Placer) -> None:
    """The part goes whole through Dask's scatter: its split and any rest already sent dropped."""
    if placer.is_future(part.rest):
        placer.drop([part.rest])
    part.layout, part.arrays, part.rest = None, [], None


def _scatter_rests(parts: Sequence[Part], placer: Placer, which: Callable[[Part], bool]) -> None:
    """Dask's own transfer of the columns that are not fixed-width, to their part's worker."""
    for part in parts:
        if which(part) and part.rest is not None and not placer.is_future(part.rest):
            (part.rest,) = placer.scatter([part.rest], part.owner.address)


def place(
    obj: Any,
    placer: Placer,
    views: Sequence[WorkerView],
    gpu: bool,
    segments: shared_memory.Segments | None,
    npartitions: int | None = None,
) -> tuple[list[Part], int]:
    """Build ``obj``'s partitions on the workers; (the parts, their data now futures; rounds)."""
    parts = _cut(obj, views, npartitions)
    _choose_routes(parts, segments, device_blocks.kernel_devices() if gpu else {})
    builder = _Builder(placer, gpu, segments)
    _scatter_rests(parts, placer, lambda p: p.device is not None)
    builder.direct([p for p in parts if p.device is not None], segments is not None)
    plan = _shared_plan(parts)
    if plan is None:
        for part in parts:
            if part.shared:
                part.route, part.shared = "scatter: shared memory too small", False
                _whole(part, placer)
        plan = []
    _scatter_rests(parts, placer, lambda p: p.shared)
    if len(plan) == 1:
        builder.one_round(plan[0], parts)
    elif plan:
        builder.rounds(plan, parts)
    log.debug(
        "%d partitions, %d through GPU memory, %d through shared memory in %d rounds",
        len(parts), sum(p.device is not None for p in parts), sum(p.shared for p in parts),
        len(plan),
    )  # fmt: skip
    whole = [p for p in parts if not p.shared and p.device is None]
    builder.scattered(whole, _library(obj, gpu))
    wait_for(placer.client, [p.data for p in parts], placer.where)
    return parts, len(plan)


def _library(obj: Any, gpu: bool) -> Any:
    """The library's own host→GPU function, for workers that cannot run this package."""
    if not gpu:
        return None
    import numpy as np

    if isinstance(obj, np.ndarray):
        import cupy

        return cupy.asarray
    import cudf

    return cudf.from_pandas
