"""What runs inside a Dask worker for ``--distribute`` and ``--gather``.

Each function here is a task the kernel submits to one chosen worker; the worker imports this
module by name, which the workers of a local cluster can (they run in the kernel's environment).
A worker elsewhere that cannot import it is given library functions only (see
:mod:`..kernel.cluster_view`).

Towards the workers, a worker reads its partitions' bytes from the kernel's shared-memory
segments into memory it owns, or, on a GPU worker whose segment holds the partition whole, maps
the segment and copies it to its GPU through its own pinned pipeline; nothing keeps pointing
into it afterwards. A worker removes each segment once it has read it: giving a tmpfs file's
pages back takes time, better spent on every worker at once than one after another in the
kernel, which removes whatever is left when the transfer ends. Back from the workers, a worker
writes its partitions' bytes into segments the kernel created for it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ....machine import availability
from ...arrays import cupy_to_numpy, numpy_to_cupy
from ...converter import Context
from ...dataframes import cudf_to_pandas, pandas_to_cudf
from ...failures import failure
from .. import partition_layout, shared_memory
from ..device_blocks import worker_gpu
from ..partition_layout import Layout
from ..segment_plan import Piece

log = logging.getLogger(__name__)


def probe(path: str, token: str) -> dict[str, Any]:
    """Whether this worker shares the kernel's machine (it can read the kernel's owner-only
    token file), why it could not hold GPU partitions (None: it can), and which GPU it has
    (:func:`..device_blocks.identity`)."""
    try:
        with open(path, "rb") as file:
            local = file.read() == token.encode()
    except OSError:
        local = False
    return {
        "local": local,
        "frames": availability.reason("cudf", "dask_cudf"),
        "arrays": availability.reason(),
        "gpu": worker_gpu() if local else None,
    }


def to_device(obj: Any) -> Any:
    """pandas → cuDF, NumPy → CuPy on this worker's GPU, through its pinned pipeline."""
    import numpy as np

    try:
        if isinstance(obj, np.ndarray):
            return numpy_to_cupy(obj, Context())

        return pandas_to_cudf(obj, Context())
    except Exception as err:
        error = failure(err, obj)
    raise error  # outside the except block: the library's error is not kept as its context


@dataclass
class Assembly:
    """A partition whose slots are arriving over several rounds, in memory this worker owns."""

    layout: Layout
    arrays: list[Any]


def receive(start: Layout | Assembly, path: str, pieces: Sequence[Piece]) -> Assembly:
    """Copy ``pieces`` of segment ``path`` into the partition's own arrays (made on the first
    round from its layout)."""
    assembly = (
        start
        if isinstance(start, Assembly)
        else Assembly(start, partition_layout.empty_slots(start))
    )
    with shared_memory.opened(path, writable=False) as fd:
        for piece in pieces:
            into = partition_layout.as_bytes(assembly.arrays[piece.slot])
            shared_memory.read_at(fd, into[piece.start : piece.start + piece.nbytes], piece.offset)
    shared_memory.unlink(path)
    return assembly


def finish(start: Layout | Assembly, rest: Any, gpu: bool) -> Any:
    """The partition, from its received slots and its rest; on the GPU if ``gpu``."""
    if isinstance(start, Layout):  # nothing crossed shared memory
        start = Assembly(start, partition_layout.empty_slots(start))
    obj = partition_layout.rebuild(start.layout, start.arrays, rest)
    return to_device(obj) if gpu else obj


def _mapped_to_device(layout: Layout, path: str, pieces: Sequence[Piece], rest: Any) -> Any:
    import numpy as np

    size = max(p.offset + p.nbytes for p in pieces)
    with shared_memory.mapped(path, size) as mapping:
        arrays: list[Any] = [np.empty(slot.shape, dtype=slot.dtype) for slot in layout.slots]
        for piece in pieces:  # every slot that has bytes is one piece here
            slot = layout.slots[piece.slot]
            flat = np.frombuffer(mapping, np.uint8, piece.nbytes, piece.offset)
            arrays[piece.slot] = flat.view(slot.dtype).reshape(slot.shape)
            del flat
        try:
            return to_device(partition_layout.rebuild(layout, arrays, rest))
        finally:
            arrays.clear()  # no view may outlive the mapping
            shared_memory.unlink(path)


def build(layout: Layout, path: str | None, pieces: Sequence[Piece], rest: Any, gpu: bool) -> Any:
    """The partition from one segment that holds its slots whole (or from its rest alone)."""
    if path is None:
        return finish(layout, rest, gpu)
    if gpu:
        return _mapped_to_device(layout, path, pieces, rest)
    return finish(receive(layout, path, pieces), rest, gpu)


# -- back to the kernel ----------------------------------------------------------------------


def to_host(part: Any) -> Any:
    """The partition as pandas / NumPy (through this worker's pinned pipeline if on a GPU)."""
    module = type(part).__module__.split(".")[0]
    if module not in {"cudf", "cupy"}:
        return part

    if module == "cupy":
        return cupy_to_numpy(part, Context())

    return cudf_to_pandas(part, Context())


def layout_of(host: Any) -> tuple[Layout, Any]:
    """The layout of a host partition and its rest (what does not cross shared memory)."""
    layout, _, rest = partition_layout.split(host)
    return layout, rest


def write_segment(host: Any, path: str, pieces: Sequence[Piece]) -> int:
    """Write ``pieces`` of the host partition's slots into segment ``path``; bytes written."""
    _, arrays, _ = partition_layout.split(host)
    written = 0
    with shared_memory.opened(path, writable=True) as fd:
        for piece in pieces:
            data = partition_layout.as_bytes(arrays[piece.slot])[
                piece.start : piece.start + piece.nbytes
            ]
            shared_memory.write_at(fd, data, piece.offset)
            written += piece.nbytes
    return written
