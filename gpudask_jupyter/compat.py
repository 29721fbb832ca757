"""Every call this package makes into a private part of distributed, dask, dask-cuda, pandas, cuDF.

Private names change without notice between releases. Keeping each such call here, with the
versions it was checked on, means an upgrade breaks one function whose docstring says what it
relies on, not a line somewhere in the converters or the monitor. The GPU tests exercise the cuDF
and pandas functions; the CPU tests the distributed ones. ``pyproject.toml`` bounds the versions
from above at the newest release checked.

Nothing here is imported at package import time by anything that does not need it, and this
module imports none of the libraries at its own import.

Checked on: distributed 2024.8 – 2026.8; dask 2024.8 – 2026.8; dask-cuda 25.10 – 26.10; pandas
2.2 – 3.1; cuDF 26.10; dask-gateway 2026.3.
"""

# size: one concern, the private calls into the libraries, a section per library; whoever moves
# to a new release of one reads its section top to bottom

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

log = logging.getLogger(__name__)

# -- distributed -----------------------------------------------------------------------------------


def run_on_scheduler(client: Any, function: Any, timeout: float, **kwargs: Any) -> Any:
    """Run ``function(dask_scheduler=..., **kwargs)`` in the scheduler, bounded by ``timeout``.

    ``Client.run_on_scheduler`` is public but takes no timeout in the call; its coroutine
    ``Client._run_on_scheduler`` (private; distributed 2024.8 – 2026.8) is driven through
    ``Client.sync`` with ``callback_timeout``, which bounds the whole round trip.
    """
    return client.sync(client._run_on_scheduler, function, callback_timeout=timeout, **kwargs)


def submit_on_scheduler(client: Any, function: Any, timeout: float, **kwargs: Any) -> Any:
    """Start ``function(dask_scheduler=..., **kwargs)`` in the scheduler without waiting: a
    ``concurrent.futures.Future`` of its result, failed with ``TimeoutError`` after ``timeout``.

    The coroutine ``Client._run_on_scheduler`` (private; distributed 2024.8 – 2026.8) is run on
    the client's own event loop (``Client.loop.asyncio_loop``), so the caller's thread is never
    blocked by a scheduler that does not answer.
    """
    import asyncio

    loop = client.loop.asyncio_loop  # before the coroutine: a closed client has no loop

    async def bounded() -> Any:
        return await asyncio.wait_for(client._run_on_scheduler(function, **kwargs), timeout)

    return asyncio.run_coroutine_threadsafe(bounded(), loop)


async def open_comm(address: str, timeout: float, connection_args: dict[str, Any]) -> Any:
    """A comm to the Dask server at ``address``, the handshake included, within ``timeout``.

    ``distributed.comm.connect`` bounds the connection but not the handshake that follows (it
    waits for the peer's first message without a limit): a port that accepts and stays silent,
    or a paused scheduler, would hold it for ever, and cancelling it leaves the socket to the
    garbage collector. So this does what it does in bounded steps and aborts the comm on any
    failure: the backend's ``Connector.connect`` (the public backend interface) and the
    handshake of ``Comm.handshake_info`` / ``Comm.handshake_configuration`` and the
    ``remote_info`` / ``local_info`` / ``handshake_options`` attributes (distributed 2024.8 –
    2026.8).
    """
    import asyncio
    import time

    from distributed.comm import parse_address, registry

    deadline = time.monotonic() + timeout
    scheme, location = parse_address(address)
    connector = registry.get_backend(scheme).get_connector()
    comm = await asyncio.wait_for(
        connector.connect(location, deserialize=True, **connection_args), timeout
    )
    try:
        local = comm.handshake_info()
        await asyncio.wait_for(comm.write(local), max(0.0, deadline - time.monotonic()))
        remote = await asyncio.wait_for(comm.read(), max(0.0, deadline - time.monotonic()))
        if not isinstance(remote, dict):
            raise OSError(f"{address} does not speak Dask's protocol")
        comm.remote_info = {**remote, "address": comm.peer_address}
        comm.local_info = {**local, "address": comm.local_address}
        comm.handshake_options = comm.handshake_configuration(comm.local_info, comm.remote_info)
    except BaseException:
        comm.abort()
        raise
    return comm


async def run_on_comm(comm: Any, function: Any, **kwargs: Any) -> Any:
    """``function(dask_scheduler=..., **kwargs)`` run in the scheduler at the other end of
    ``comm``, through the scheduler's ``run_function`` handler, as ``Client.run_on_scheduler``
    sends it (a message of the private handler's arguments, the function and its keyword
    arguments pickled with ``distributed.protocol.pickle``; distributed 2024.8 – 2026.8). The
    caller bounds it in time and aborts the comm when it fails."""
    from distributed.core import clean_exception
    from distributed.protocol.pickle import dumps

    message = {
        "op": "run_function",
        "function": dumps(function),
        "args": dumps(()),
        "kwargs": dumps(kwargs),
        "wait": True,
        "reply": True,
    }
    await comm.write(message)
    response = await comm.read()
    if not isinstance(response, dict):
        raise OSError("the scheduler's answer is not a message")
    if response.get("status") == "OK":
        return response.get("result")
    _, exc, tb = clean_exception(**response)
    raise exc.with_traceback(tb)


def retire_workers(client: Any, workers: list[str], timeout: float) -> dict[str, Any]:
    """Retire ``workers`` gracefully (the scheduler copies the data only they hold to its other
    workers, then closes them), bounded by ``timeout``: the workers retired, by address.

    ``Client.retire_workers`` is public but takes no timeout of its own; it passes its extra
    keywords to ``Client.sync``, whose ``callback_timeout`` bounds the whole round trip
    (distributed 2024.8 – 2026.8), as for :func:`run_on_scheduler`. The scheduler carries on
    after a timeout; what it has not moved by then is lost with the workers.
    """
    retired = client.retire_workers(workers=workers, close_workers=True, callback_timeout=timeout)
    return dict(retired or {})


def run_on_workers(client: Any, function: Any, timeout: float, *args: Any) -> dict[str, Any]:
    """``function(*args)`` on every worker, bounded by ``timeout``: address → result, or the
    exception that worker raised.

    ``Client.run`` takes no timeout; its coroutine ``Client._run`` (private; distributed 2024.8 –
    2026.8) is driven through ``Client.sync`` with ``callback_timeout``, as for
    :func:`run_on_scheduler`.
    """
    result: dict[str, Any] = client.sync(
        client._run, function, *args, on_error="return", callback_timeout=timeout
    )
    return result


# -- distributed, inside the scheduler ---------------------------------------------------------
#
# These run inside a Dask scheduler: :mod:`.monitor.scheduler_probe` calls them there, and both
# modules travel by value (``scheduler_probe.ship_by_value``), so a scheduler elsewhere needs only
# dask and distributed. They read the scheduler's state objects, which distributed documents for
# its developers but does not promise to keep (distributed 2024.8 – 2026.8).


def task_stream_plugin(scheduler: Any) -> Any:
    """The scheduler's task-stream plugin, installed on first use.

    ``Scheduler._task_stream_plugin`` is private: it returns the ``TaskStreamPlugin`` whose
    ``buffer`` (a deque of task records, each with its ``startstops``) and ``index`` (records
    seen since start) the dashboard's own task stream reads.
    """
    return scheduler._task_stream_plugin()


def task_group_states(scheduler: Any) -> Iterator[tuple[str, Mapping[str, int]]]:
    """(prefix name, tasks by state) of every task group: ``Scheduler.task_groups`` (name →
    ``TaskGroup``), ``TaskGroup.states`` and ``TaskGroup.prefix.name``."""
    for group in list(scheduler.task_groups.values()):
        yield group.prefix.name, group.states


def prefix_order(scheduler: Any) -> dict[str, int]:
    """Each task prefix's place in the order the scheduler first saw them: the keys of
    ``Scheduler.task_prefixes`` (name → ``TaskPrefix``), which only grows."""
    return {name: i for i, name in enumerate(list(scheduler.task_prefixes))}


def executing_prefixes(scheduler: Any) -> Iterator[str]:
    """The prefix name of each task a worker said it was running at its last heartbeat:
    ``WorkerState.executing`` (``TaskState`` → seconds) and ``TaskState.prefix.name``."""
    for ws in list(scheduler.workers.values()):
        for ts in list(ws.executing):
            yield ts.prefix.name


def worker_identities(scheduler: Any) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """(address, identity as ``scheduler_info()`` gives it, process id) of every worker:
    ``Scheduler.workers`` (address → ``WorkerState``), ``WorkerState.identity()`` and ``.pid``."""
    for address, ws in list(scheduler.workers.items()):
        yield address, ws.identity(), getattr(ws, "pid", None)


def offered_resources(scheduler: Any) -> Iterator[Mapping[str, Any]]:
    """The resources each worker offers: ``WorkerState.resources``."""
    for ws in list(scheduler.workers.values()):
        yield ws.resources or {}


def idle_since(scheduler: Any) -> float | None:
    """When the scheduler last ran out of work (None: it has work now): ``Scheduler.idle_since``,
    which its own periodic ``check_idle`` keeps (distributed 2024.8 – 2026.8)."""
    value = getattr(scheduler, "idle_since", 0.0)
    return None if value is None else float(value)


def worker_count(scheduler: Any) -> int:
    """``len(Scheduler.workers)``."""
    return len(scheduler.workers)


def unrunnable_restrictions(scheduler: Any) -> Iterator[Mapping[str, Any]]:
    """The resources each task in the "no-worker" state asks for: ``Scheduler.unrunnable`` (its
    ``TaskState`` objects) and ``TaskState.resource_restrictions``."""
    for ts in list(scheduler.unrunnable):
        yield ts.resource_restrictions or {}


def fail_unrunnable(dask_scheduler: Any, keys: list[Any], message: str) -> list[Any]:
    """Fail those of ``keys`` that can no longer run (restricted to a worker that left: the
    "no-worker" state, or waiting for a dependency in that state), with
    ``RuntimeError(message)``; the keys failed.

    What ``Scheduler._check_unrunnable_task_timeouts`` does to a task whose restrictions stay
    unmet (the ``no-workers-timeout`` option), for these keys and what they wait for, at once:
    ``Scheduler.transition(key, "erred", exception=..., cause=key, ...)``, then
    ``Scheduler.transitions`` on what that recommends; ``TaskState.state`` and
    ``.dependencies`` (distributed 2024.8 – 2026.8). The dependents fail with the same exception,
    now and whenever they are submitted again.
    """
    import pickle
    import time

    stimulus_id = f"gpudask-lost-partition-{time.time()}"
    unrunnable = ("no-worker", "released", "queued")
    stack = [dask_scheduler.tasks.get(key) for key in keys]
    seen: set[Any] = set()
    targets = []
    while stack:
        ts = stack.pop()
        if ts is None or ts.key in seen:
            continue
        seen.add(ts.key)
        if ts.state in unrunnable:
            targets.append(ts.key)
        elif ts.state == "waiting":  # for a dependency that lived on the same worker
            stack.extend(ts.dependencies)
    recommendations: dict[Any, Any] = {}
    for key in targets:
        if dask_scheduler.tasks[key].state not in unrunnable:
            continue  # already failed, with a dependency failed above
        recommendations.update(
            dask_scheduler.transition(
                key,
                "erred",
                exception=pickle.dumps(RuntimeError(message)),
                exception_text=message,
                cause=key,
                stimulus_id=stimulus_id,
            )
        )
    dask_scheduler.transitions(recommendations, stimulus_id=stimulus_id)
    failed = []
    for key in keys:
        ts = dask_scheduler.tasks.get(key)
        if ts is not None and ts.state == "erred":
            failed.append(key)
    return failed


# -- dask-cuda ------------------------------------------------------------------------------------


def cuda_worker_nannies(cuda_worker: Any) -> list[Any]:
    """The nannies a ``dask_cuda.CUDAWorker`` made, one per GPU, not started yet:
    ``CUDAWorker.nannies`` (dask-cuda 25.10 – 26.10), which ``dask cuda worker`` awaits itself."""
    return list(cuda_worker.nannies)


def name_nanny(nanny: Any, name: str) -> None:
    """Give a nanny that has not started its worker yet that worker's name: ``Nanny.name``, which
    the nanny passes to its worker when it starts it (distributed 2024.8 – 2026.8)."""
    nanny.name = name


# -- dask ------------------------------------------------------------------------------------------


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


def set_device_spill_limit(worker: Any, limit: int) -> bool:
    """Have a dask-cuda worker spill device data to host memory above ``limit`` bytes from now
    on; False where it keeps no such buffer (JIT-unspill, or no device limit).

    dask-cuda's ``DeviceHostFile`` (``worker.data``) keeps device data in ``device_buffer``, a
    ``zict.Buffer`` whose ``n`` is the limit (private attribute; dask-cuda 25.10 – 26.10, zict 3).
    """
    buffer = getattr(getattr(worker, "data", None), "device_buffer", None)
    if buffer is None or not hasattr(buffer, "n"):
        return False
    buffer.n = limit
    return True


# -- pandas ----------------------------------------------------------------------------------------


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


# -- cuDF ------------------------------------------------------------------------------------------
#
# A cuDF column (``cudf.core.column.ColumnBase``) is internal to cuDF: building one, reading one
# and assembling frames from them all go through here. Checked on cuDF 26.10.


def as_column(data: Any, nan_as_null: bool | None) -> Any:
    """``cudf.core.column.as_column``: a column from a CuPy array or a pandas Series, as
    ``cudf.from_pandas`` builds each column."""
    from cudf.core.column import as_column as build

    return build(data, nan_as_null=nan_as_null)


def column_from_device(array: Any) -> Any:
    """A column over device memory that implements ``__cuda_array_interface__``, without a copy
    (``ColumnBase.from_cuda_array_interface``)."""
    from cudf.core.column import ColumnBase

    return ColumnBase.from_cuda_array_interface(array)


def with_validity(column: Any, valid: Any) -> Any:
    """``column`` with the nulls where the CuPy bool array ``valid`` is False (packed on device).

    ``ColumnBase.as_mask`` packs booleans into cuDF's bitmask and returns (mask, null count);
    ``ColumnBase.set_mask`` returns the column with that mask.
    """
    mask, null_count = column_from_device(valid).as_mask()
    return column.set_mask(mask, null_count)


def nans_to_nulls(column: Any) -> Any:
    """``ColumnBase.nans_to_nulls``: NaN becomes null, as ``from_pandas`` does by default."""
    return column.nans_to_nulls()


def column_astype(column: Any, dtype: Any) -> Any:
    """``ColumnBase.astype``."""
    return column.astype(dtype)


def column_has_nulls(column: Any) -> bool:
    """``ColumnBase.has_nulls()`` (a method; NaN is not counted as null)."""
    return bool(column.has_nulls())


def column_isnull(column: Any) -> Any:
    """``ColumnBase.isnull()``: a boolean cuDF column, True where null."""
    return column.isnull()


def column_values(column: Any) -> Any:
    """``ColumnBase.values``: a CuPy array of the column, NaN where null (a new array if any)."""
    return column.values


def column_to_pandas(column: Any) -> Any:
    """``ColumnBase.to_pandas()``: the column on the host, as a pandas Index."""
    return column.to_pandas()


def column_of(obj: Any) -> Any:
    """The one column of a ``cudf.Series`` or a plain ``cudf.Index`` (``_column``)."""
    return obj._column


def frame_columns(frame: Any) -> Any:
    """(label, column) pairs of a ``cudf.DataFrame``: its ``_data`` (a ``ColumnAccessor``)."""
    return frame._data.items()


def frame_labels(frame: Any) -> Any:
    """A ``cudf.DataFrame``'s column labels as pandas builds them (MultiIndex included), from
    ``_data.to_pandas_index``."""
    return frame._data.to_pandas_index


def allows_duplicate_labels(obj: Any) -> bool:
    """A cuDF frame's ``allows_duplicate_labels`` flag, from ``_flags`` (a ``pandas.Flags``)."""
    return bool(obj._flags.allows_duplicate_labels)


def index_from_column(column: Any, name: Any) -> Any:
    """A ``cudf.Index`` over ``column`` without a copy (``Index._from_column``)."""
    import cudf

    return cudf.Index._from_column(column, name=name)


def series_from_column(column: Any, name: Any, index: Any) -> Any:
    """A ``cudf.Series`` over ``column`` without a copy (``Series._from_column``)."""
    import cudf

    return cudf.Series._from_column(column, name=name, index=index)


def frame_from_columns(
    columns: dict[Any, Any], index: Any, attrs: Any, allows_duplicates: bool
) -> Any:
    """A ``cudf.DataFrame`` over ``columns`` without a copy (``DataFrame._from_data``); the
    caller sets the real column labels afterwards."""
    import cudf

    return cudf.DataFrame._from_data(
        columns, index, attrs=attrs, allows_duplicate_labels=allows_duplicates
    )


# -- cuDF columns as the buffers they are made of (pylibcudf; checked on cuDF 26.10) -------------
#
# cuDF 26 keeps each column as a ``pylibcudf.Column`` (``ColumnBase.plc_column``) and builds its
# columns with ``ColumnBase.create(plc_column, dtype)``; ``ColumnBase.to_pylibcudf()`` gives the
# same column with plain device spans. A string column is a STRING column of ``size`` rows whose
# data are the characters and whose one child is the INT32 or INT64 offsets (``size + 1``).


def builds_from_plc() -> bool:
    """Whether this cuDF is one whose column internals were checked (26.10, the release
    ``pyproject.toml`` asks for) and spills nothing: elsewhere strings and categoricals take
    cuDF's own path, which the log says once. (A spilled buffer's span has no device memory
    behind it, which :func:`string_parts` reads directly.)"""
    import cudf

    release = tuple(int(p) for p in cudf.__version__.split(".")[:2] if p.isdigit())
    if release != (26, 10):
        if not _said_release:
            _said_release.append(release)
            log.warning(
                "cuDF %s is not the release gpudask_jupyter checked (26.10): string and "
                "categorical columns take cuDF's own, slower path",
                cudf.__version__,
            )
        return False
    return not cudf.get_option("spill")


_said_release: list[tuple[int, ...]] = []


def plc_of(column: Any) -> Any:
    """``ColumnBase.to_pylibcudf()``: the column as a ``pylibcudf.Column`` (a view, no copy)."""
    return column.to_pylibcudf()


def column_from_plc(plc_column: Any, dtype: Any) -> Any:
    """``ColumnBase.create``: the cuDF column of ``dtype`` over a ``pylibcudf.Column``."""
    from cudf.core.column import ColumnBase

    return ColumnBase.create(plc_column, dtype)


def string_plc_column(size: int, chars: Any, offsets: Any, mask: Any, null_count: int) -> Any:
    """A ``pylibcudf.Column`` of strings over CuPy arrays (no copy): ``chars`` (uint8 or None
    when every string is empty), ``offsets`` (int32 or int64, ``size + 1`` of them, starting at
    0), ``mask`` (cuDF's padded bitmask, uint8, or None)."""
    import pylibcudf as plc

    width = plc.TypeId.INT64 if offsets.dtype.itemsize == 8 else plc.TypeId.INT32
    offsets_column = plc.Column(
        plc.DataType(width), size + 1, plc.gpumemoryview(offsets), None, 0, 0, []
    )
    return plc.Column(
        plc.DataType(plc.TypeId.STRING),
        size,
        plc.gpumemoryview(chars) if chars is not None else None,
        plc.gpumemoryview(mask) if mask is not None else None,
        null_count,
        0,
        [offsets_column],
    )


def concatenate_plc(columns: list[Any]) -> Any:
    """``pylibcudf.concatenate.concatenate`` of several columns (the one itself if only one)."""
    if len(columns) == 1:
        return columns[0]
    import pylibcudf as plc

    return plc.concatenate.concatenate(columns)


def _device_view(span: Any, dtype: Any, count: int) -> Any:
    """A CuPy array of ``count`` ``dtype`` items over a pylibcudf span (``ptr``, ``size``),
    holding the span so that the memory lives as long as the array."""
    import cupy

    if span is None or not span.ptr or not count:  # nothing there (every string empty)
        return cupy.empty(0, dtype)
    memory = cupy.cuda.UnownedMemory(int(span.ptr), int(span.size), span)
    return cupy.ndarray((count,), dtype, cupy.cuda.MemoryPointer(memory, 0))


def string_parts(column: Any) -> tuple[int, int, Any, Any, Any] | None:
    """(rows, null count, offsets, characters, mask) of a cuDF string column as CuPy arrays over
    its own device memory (mask None when it has none); None for a slice (a non-zero offset)."""
    import numpy as np
    import pylibcudf as plc

    view = plc_of(column)
    if view.offset() != 0 or view.num_children() != 1:
        return None
    size = view.size()
    offsets_column = view.child(0)
    if offsets_column.offset() != 0 or offsets_column.data() is None:
        return None
    wide = offsets_column.type().id() == plc.TypeId.INT64
    offsets = _device_view(offsets_column.data(), np.int64 if wide else np.int32, size + 1)
    data, mask, null_count = view.data(), view.null_mask(), view.null_count()
    if null_count and mask is None:
        return None
    chars = _device_view(data, np.uint8, int(data.size) if data is not None else 0)
    bits = _device_view(mask, np.uint8, int(mask.size)) if null_count else None
    return size, null_count, offsets, chars, bits


def categorical_codes_dtype(dtype: Any) -> Any:
    return dtype._codes_dtype  # the unsigned width cuDF keeps a categorical's codes in


def categorical_parts(column: Any) -> tuple[Any, str, int] | None:
    """(the codes as a cuDF column, null where missing; the categories' dtype kind; how many
    categories) of a cuDF categorical column (``CategoricalColumn.codes``), else None."""
    import cudf

    if not isinstance(column.dtype, cudf.CategoricalDtype):
        return None
    categories = column.dtype.categories
    return column.codes, str(categories.dtype.kind), len(categories)


def column_slice(column: Any, start: int, stop: int) -> Any:
    return column.slice(start, stop)  # ColumnBase.slice


def column_fillna(column: Any, value: Any) -> Any:
    return column.fillna(value)  # ColumnBase.fillna: a copy with nulls replaced by value


# -- dask-gateway ----------------------------------------------------------------------------------


def close_gateway(gateway: Any) -> None:
    """Close dask-gateway's client once: its ``close`` stops its event loop, and the
    ``__del__`` that closes it again then raises (an "Exception ignored" on every client made).
    Marking it asynchronous (``Gateway._asynchronous``, private; dask-gateway 2024.1 – 2026.3)
    makes that ``__del__`` skip the second close."""
    try:
        gateway.close()
    finally:
        gateway._asynchronous = True


def close_gateway_cluster(cluster: Any, shutdown: bool) -> None:
    """Shut a dask-gateway cluster down (``shutdown``) or only close this client's hold on it,
    then let its own client (``GatewayCluster.gateway``, public) go as :func:`close_gateway`
    does: closing the cluster closes that client, and its ``__del__`` would close it again."""
    try:
        if shutdown:
            cluster.shutdown()
        else:
            cluster.close()
    finally:
        inner = getattr(cluster, "gateway", None)
        if inner is not None:
            inner._asynchronous = True
