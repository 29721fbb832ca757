"""``%%to_gpu --distribute`` and ``%%to_cpu --gather``: variables spread over the cluster and back.

:func:`distribute_names` turns each pandas / NumPy variable into a Dask collection persisted on
the cluster's workers (cuDF / CuPy partitions on GPU workers, pandas / NumPy on CPU workers);
:func:`gather_names` brings Dask collections back as one pandas / NumPy object. Both are one
transaction, like ``%%to_gpu``: the names are rebound only when every variable has arrived; on a
failure, or Ctrl-C, every partition placed so far is released, every shared-memory segment is
removed, and the error names the variable and the cause. How the bytes travel is decided per
partition (see :mod:`.spread` and :mod:`.gathering`); the report says which way each one took.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import Any

from ....errors import ConversionError, NoGpuError
from ... import refusals
from ...converter import Context, module_class
from ...dask_collections import is_dask_array, is_dask_dataframe
from ...failures import describe
from ...lookup import find
from ...report import Moved, Report, kind_of, nbytes_of, shape_of
from ...transaction import convert_one, transact
from .. import partition_layout, shared_memory
from . import cluster_view, gathering, persisted, spread, watch
from .cluster_view import Failed, WorkerView
from .task_placer import Placer

log = logging.getLogger(__name__)

_is_pandas = module_class("pandas", "DataFrame", "Series")
_is_numpy = module_class("numpy", "ndarray")


@contextlib.contextmanager
def _segments() -> Iterator[shared_memory.Segments | None]:
    why = shared_memory.usable()
    if why is not None:
        log.debug("no shared memory for transfers: %s", why)
        yield None
        return
    with shared_memory.Segments() as segments:
        yield segments


def route_summary(parts: list[tuple[str, str]], rounds: int) -> str:
    """The report's "via": the route(s) the partitions took."""
    routes = sorted({route.split(":")[0] for _, route in parts})
    if len(routes) == 1:
        via = routes[0]
    else:
        via = ", ".join(f"{r} ×{sum(1 for _, x in parts if x.split(':')[0] == r)}" for r in routes)
    return f"{via}, {rounds} rounds" if rounds > 1 else via


def placement(name: str, parts: list[tuple[str, str]]) -> str:
    """The report's note on where the partitions of ``name`` went and how."""
    counts: dict[tuple[str, str], int] = {}
    for key in parts:
        counts[key] = counts.get(key, 0) + 1
    where = "; ".join(f"{n} on {w} ({r})" for (w, r), n in counts.items())
    return f"{name}: {len(parts)} partitions: {where}"


def _label(obj: Any, gpu: bool) -> str:
    if _is_numpy(obj):
        return "NumPy → Dask Array " + ("(CuPy)" if gpu else "(NumPy)")
    what = "Series" if obj.ndim == 1 else "DataFrame"
    return f"pandas → Dask {what} " + ("(cuDF)" if gpu else "(pandas)")


def _on_host(obj: Any) -> Any:
    """A cuDF / CuPy object of the kernel's GPU as pandas / NumPy, to be spread from there."""
    converter = find(obj, "cpu")
    if converter is None or converter.lazy or converter.skip is not None:
        return obj
    return converter.convert(obj, Context())


class _Transaction:
    """One call: the cluster surveyed once (when a variable first needs it), a placer per
    variable, all undone on failure."""

    def __init__(self, client: Any, segments: shared_memory.Segments | None, report: Report):
        self._client, self.segments, self.report = client, segments, report
        self._views: list[WorkerView] | None = None
        self.placers: list[Placer] = []
        self.unavailable: list[str] = []
        # what to watch once the names are rebound: (name, collection, key → worker)
        self.spread_out: list[tuple[str, Any, dict[str, str]]] = []

    @property
    def client(self) -> Any:
        if self._client is None:
            magic = "%%to_gpu" if self.report.direction == "gpu" else "%%to_cpu"
            self._client = cluster_view.default_client(f"{magic} {self.report.flag}")
        return self._client

    @property
    def views(self) -> list[WorkerView]:
        if self._views is None:
            self._views = cluster_view.survey(self.client, self.segments)
            log.debug("workers: %s", self._views)
        return self._views

    def placer(self) -> Placer:
        self.placers.append(Placer(self.client))
        return self.placers[-1]

    def gpu(self, name: str, kind: str, required_by: str | None) -> bool:
        why = cluster_view.why_not_gpu(self.views, kind)
        if why is None:
            # imported here, on this thread, before any answer of a worker holds a GPU object:
            # the client's thread would import them to read it, and two threads importing
            # cuDF at once deadlock (Python's import locks)
            for module in cluster_view.KERNEL_NEEDS[kind]:
                importlib.import_module(module)
            return True
        if required_by is not None:
            raise NoGpuError(f"{name} cannot go to the workers' GPUs: {why} ({required_by}).")
        if why not in self.unavailable:
            self.unavailable.append(why)
        return False

    def spread(self, name: str, obj: Any, gpu: bool, npartitions: int | None) -> Any:
        started = time.perf_counter()
        parts, rounds = spread.place(
            obj, self.placer(), self.views, gpu, self.segments, npartitions
        )
        futures = [p.data for p in parts]
        meta = persisted.meta_of(obj, gpu)
        if _is_numpy(obj):
            rows = [stop - start for start, stop in (p.rows for p in parts)]
            collection = persisted.array(futures, meta, rows, obj.shape)
        else:
            collection = persisted.frame(futures, meta, spread.divisions(obj.index, parts))
        routes = [(p.owner.address, p.route) for p in parts]
        self.spread_out.append((name, collection, {p.data.key: p.owner.address for p in parts}))
        seconds = time.perf_counter() - started
        moved = Moved(
            name,
            _label(obj, gpu),
            shape_of(obj),
            nbytes_of(obj),
            seconds,
            route_summary(routes, rounds),
        )
        self.report.moved.append(moved)
        self.report.notes.append(placement(name, routes))
        if any("+ scatter" in route for _, route in routes):
            rest = partition_layout.rest_note(name, obj, "Dask's scatter")
            if rest is not None:
                self.report.notes.append(rest)
        return collection

    def persist(self, name: str, obj: Any, gpu: bool) -> Any:
        """A lazy Dask collection computed and kept on the workers (on their GPUs if ``gpu``)."""
        from distributed import futures_of

        frame = is_dask_dataframe(obj)
        backend = ("cudf" if frame else "cupy") if gpu else ("pandas" if frame else "numpy")
        started = time.perf_counter()
        done = self.client.persist(obj.to_backend(backend))
        placer = self.placer()
        futures = futures_of(done)
        placer.adopt(futures, obj)
        cluster_view.wait_for(self.client, futures, {})
        label = f"Dask {type(obj).__name__} → persisted ({backend})"
        seconds = time.perf_counter() - started
        self.report.moved.append(Moved(name, label, None, None, seconds, "persist"))
        return done

    def gather(self, name: str, obj: Any) -> Any:
        started = time.perf_counter()
        routes: list[tuple[str, str]] = [("the cluster", "client")]
        rounds = 0
        if persisted.is_index(obj):  # an Index has no columns to lay out: Dask's own way
            host = _on_host(self.client.compute(obj).result())
        else:
            placer = self.placer()
            host, routes, rounds = gathering.gather(obj, placer, self.views, self.segments)
            host = gathering.byte_order_of_meta(host, obj)
            self.report.notes.append(placement(name, routes))
            if any("+ client" in route for _, route in routes):
                rest = partition_layout.rest_note(name, host, "Dask's own transfer")
                if rest is not None:
                    self.report.notes.append(rest)
        seconds = time.perf_counter() - started
        label = f"Dask {type(obj).__name__} → {'NumPy' if _is_numpy(host) else 'pandas'}"
        moved = Moved(
            name, label, shape_of(host), nbytes_of(host), seconds, route_summary(routes, rounds)
        )
        self.report.moved.append(moved)
        return host

    def cancel(self) -> None:
        for placer in self.placers:
            placer.cancel()

    def done(self) -> None:
        for placer in self.placers:
            placer.forget()


def _failed(name: str, obj: Any, err: Exception, leave_on_host: str | None) -> ConversionError:
    """The user's sentence for variable ``name`` whose transfer failed with ``err``."""
    leave = leave_on_host or f"use --exclude {name} to leave it on the host"
    if not isinstance(err, Failed):
        return ConversionError(name, *describe(err, name, obj, leave_on_host))
    if err.kind == "memory":
        hint = (
            "nothing stayed on the workers; free memory there (del collections you no longer "
            f"need, or %gpu_cluster restart), use more partitions, or {leave}"
        )
    elif err.kind == "left":
        hint = "nothing stayed on the workers; run the cell again once the cluster is whole"
    else:
        hint = f"nothing stayed on the workers; {leave}"
    return ConversionError(name, err.cause, hint)


def _transact(
    namespace: MutableMapping[str, Any],
    names: Iterable[str],
    report: Report,
    client: Any,
    move: Callable[[_Transaction, str, Any], Any | None],
    leave_on_host: str | None,
    check: Callable[[_Transaction, str, Any], None] = lambda transaction, name, obj: None,
) -> list[str]:
    """Run ``move`` on each name (None: leave it); rebind all, or none and undo everything
    placed on the workers (:func:`..transaction.transact`). ``check`` refuses a name before
    anything moves."""
    with _segments() as segments:
        transaction = _Transaction(client, segments, report)
        transact(
            namespace,
            names,
            lambda name, obj: move(transaction, name, obj),
            lambda name, obj, err: _failed(name, obj, err, leave_on_host),
            undo=transaction.cancel,
            check=lambda name, obj: check(transaction, name, obj),
        )
        transaction.done()
    for spread_out in transaction.spread_out:
        watch.track(*spread_out)
    return transaction.unavailable


def distribute_names(
    namespace: MutableMapping[str, Any],
    names: Iterable[str],
    *,
    client: Any = None,
    npartitions: int | None = None,
    require_gpu: bool = False,
    required_by: str = "--require-gpu",
    leave_on_host: str | None = None,
) -> tuple[Report, list[str]]:
    """Spread ``names`` over the cluster's workers as persisted Dask collections.

    Returns the report and why the partitions stayed in the workers' host memory (no GPU on a
    worker); raises :class:`ConversionError` (nothing rebound, nothing left on the workers) or
    :class:`NoGpuError` when ``require_gpu`` and a worker has no GPU.
    """
    report = Report("gpu", flag="--distribute")
    required = required_by if require_gpu else None

    def move(transaction: _Transaction, name: str, obj: Any) -> Any | None:
        if is_dask_dataframe(obj) or is_dask_array(obj):
            kind = "arrays" if is_dask_array(obj) else "frames"
            return transaction.persist(name, obj, transaction.gpu(name, kind, required))
        obj = _on_host(obj)
        if not (_is_pandas(obj) or (_is_numpy(obj) and obj.ndim >= 1)):
            report.skipped.append((name, kind_of(obj)))
            return None
        gpu = transaction.gpu(name, "arrays" if _is_numpy(obj) else "frames", required)
        if gpu and _is_numpy(obj) and not obj.dtype.isnative:
            obj = obj.astype(obj.dtype.newbyteorder("="))  # CuPy has no byte order: as %%to_gpu
        return transaction.spread(name, obj, gpu, npartitions)

    def check(transaction: _Transaction, name: str, obj: Any) -> None:
        """What the collection (and the workers' GPUs) could not hold, refused up front."""
        if _is_numpy(obj) and obj.ndim >= 1:
            gpu = transaction.gpu(name, "arrays", required)
            refused = refusals.for_cupy(obj) if gpu else None
        elif _is_pandas(obj):
            refused = refusals.for_dask(obj)
            if refused is None and transaction.gpu(name, "frames", required):
                refused = refusals.for_cudf(obj)
        else:
            return
        if refused is not None:
            raise ConversionError(name, *describe(refused, name, obj, leave_on_host))

    unavailable = _transact(namespace, names, report, client, move, leave_on_host, check)
    return report, unavailable


def gather_names(
    namespace: MutableMapping[str, Any],
    names: Iterable[str],
    *,
    client: Any = None,
    leave_on_host: str | None = None,
) -> tuple[Report, list[str]]:
    """Bring the Dask collections among ``names`` back as pandas / NumPy objects; other GPU
    objects (cuDF, CuPy) are moved to the host as by ``%%to_cpu``."""
    report = Report("cpu", flag="--gather")

    def move(transaction: _Transaction, name: str, obj: Any) -> Any | None:
        if is_dask_dataframe(obj) or is_dask_array(obj):
            return transaction.gather(name, obj)
        converter = find(obj, "cpu")
        if converter is None or converter.skip is not None:
            why = converter.skip if converter is not None and converter.skip else kind_of(obj)
            report.skipped.append((name, why))
            return None
        host, moved = convert_one(name, obj, converter, None)
        report.moved.append(moved)
        return host

    unavailable = _transact(namespace, names, report, client, move, leave_on_host)
    return report, unavailable
