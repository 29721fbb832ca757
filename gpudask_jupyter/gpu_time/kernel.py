"""The kernel's side of GPU time: the worker plugin put on the kernel's cluster, the cells
watched, and ``%gpu_cluster profile``'s table and DataFrame.

The plugin goes on whatever cluster the kernel starts, joins, attaches to or gets from
dask-gateway, within a bound: a scheduler that refuses it (an attached cluster whose workers
cannot run it) costs a line in the log, never the start.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .. import config
from ..errors import GpuDaskError
from ..text.table import Table
from ..text.units import format_bytes, format_seconds
from . import readings
from .cells import CellLog

log = logging.getLogger(__name__)

#: seconds the plugin's registration may take before the start goes on without waiting
INSTALL_WITHIN = 10.0


def install(client: Any, timeout: float = INSTALL_WITHIN) -> bool:
    """Put the GPU-time plugin on every worker of ``client``'s cluster, now and to come.
    False (logged) where it is off, refused or slower than ``timeout``."""
    wanted = str(config.get("gpu-time"))
    if wanted == "off":
        return False
    # lazy: it imports distributed, which the kernel's own GPU time does not need
    from . import worker_plugin

    ship_by_value()
    done: list[bool] = []

    def register() -> None:
        try:
            client.register_plugin(worker_plugin.GpuTimePlugin(wanted), name=worker_plugin.NAME)
            done.append(True)
        except Exception:
            log.warning("the cluster's workers do not measure GPU time", exc_info=True)

    thread = threading.Thread(target=register, name="gpudask-gpu-time", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        log.warning("the GPU-time plugin was not in place within %.0f s; it may be later", timeout)
    return bool(done)


def ship_by_value() -> None:
    """Make what the kernel sends its workers and scheduler (the plugin, its ``flush``, the
    scheduler's :func:`.readings.events_since`) travel by value, with what they call, so that a
    worker or scheduler elsewhere need not have the package. distributed pickles an object with
    cloudpickle only where the module that defines it is registered by its exact name
    (``distributed.protocol.pickle.dumps``), and plain pickle sends the rest by reference:
    registering the package alone sent the plugin by reference, which a worker without the
    package cannot load. So each of those modules is registered, and the package for what they
    reference."""
    import sys

    import cloudpickle

    # lazy: it imports distributed, which the kernel's own GPU time does not need
    from . import worker_plugin

    for module in (sys.modules[__name__.rsplit(".", 1)[0]], worker_plugin, readings):
        cloudpickle.register_pickle_by_value(module)


# -- the cells ---------------------------------------------------------------------------------


class KernelCells:
    """The kernel's one :class:`.cells.CellLog`, registered on IPython's cell events while the
    extension is loaded (the extension holds it: :class:`..magics.extension.Extension`)."""

    def __init__(self) -> None:
        self.log: CellLog | None = None
        self._shell: Any = None

    def install(self, shell: Any, make_source: Any = None) -> None:
        """Watch ``shell``'s cells (``make_source``: a test's stand-in source)."""
        self.uninstall()
        self.log = CellLog(make_source=make_source)
        shell.events.register("pre_run_cell", self.log.pre_run_cell)
        shell.events.register("post_run_cell", self.log.post_run_cell)
        self._shell = shell

    def uninstall(self) -> None:
        if self._shell is not None and self.log is not None:
            for name, hook in (
                ("pre_run_cell", self.log.pre_run_cell),
                ("post_run_cell", self.log.post_run_cell),
            ):
                try:
                    self._shell.events.unregister(name, hook)
                except ValueError:
                    log.debug("%s was not registered", name)
            if self.log.source is not None:
                self.log.source.close()
        self.log, self._shell = None, None

    def note_moved(self, direction: str, nbytes: int | None) -> None:
        """What a ``%%to_gpu`` / ``%%to_cpu`` moved, for the running cell's figures."""
        if self.log is not None and nbytes:
            self.log.note_moved(direction, nbytes)


# -- %gpu_cluster profile ------------------------------------------------------------------------


@dataclass
class Profile:
    """What a stretch of time (a cell, or the last seconds) used of the GPUs."""

    title: str
    rows: list[readings.PrefixTime] = field(default_factory=list)
    kernel: readings.PrefixTime | None = None
    notes: list[str] = field(default_factory=list)

    COLUMNS = (
        "prefix",
        "tasks",
        "wall s",
        "GPU s",
        "GPU busy %",
        "peak MiB",
        "to GPU MiB",
        "from GPU MiB",
    )

    def _all(self) -> list[readings.PrefixTime]:
        return ([self.kernel] if self.kernel is not None else []) + self.rows

    def frame(self) -> Any:
        """The rows as a pandas DataFrame, one row per prefix (the kernel's own work first)."""
        import pandas as pd

        mib = 2**20
        data = [
            (
                p.prefix,
                p.tasks,
                round(p.wall, 3),
                round(p.gpu, 3),
                None if p.busy is None else round(100 * p.busy, 1),
                None if p.peak is None else round(p.peak / mib, 1),
                round(p.htod / mib, 1),
                round(p.dtoh / mib, 1),
            )
            for p in self._all()
        ]
        return pd.DataFrame(data, columns=list(self.COLUMNS))

    def table(self) -> Table:
        table = Table(
            self.title,
            ["prefix", "tasks", "wall", "GPU time", "GPU busy", "peak", "to GPU", "from GPU"],
        )
        for p in self._all():
            table.add(
                p.prefix + (" (shared)" if p.shared else ""),
                p.tasks,
                format_seconds(p.wall),
                format_seconds(p.gpu),
                "–" if p.busy is None else f"{100 * p.busy:.0f}%",
                "–" if p.peak is None else format_bytes(p.peak),
                format_bytes(p.htod),
                format_bytes(p.dtoh),
            )
        table.notes.extend(self.notes)
        return table


#: seconds ``profile`` waits for the workers' last figures to reach the scheduler
DELIVERY = 5.0


def _flushed_events(client: Any) -> list[tuple[float, dict[str, Any]]]:
    """The scheduler's GPU-time events once every measuring worker's figures up to now are
    there: each worker hands them over (:func:`.worker_plugin.flush`) and marks the end with a
    token, which is waited for (at most :data:`DELIVERY` seconds)."""
    import uuid

    # lazy: it imports distributed, which the kernel's own GPU time does not need
    from . import worker_plugin

    ship_by_value()
    token = uuid.uuid4().hex
    answered = client.run(worker_plugin.flush, token=token)
    measuring = sum(1 for said in answered.values() if said)
    deadline = time.monotonic() + DELIVERY
    while True:
        events: list[tuple[float, dict[str, Any]]] = client.run_on_scheduler(
            readings.events_since, since=0.0
        )
        if readings.flushed(events, token) >= measuring or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


def profile(
    client: Any, kernel: KernelCells, cell: int | None = None, seconds: float | None = None
) -> Profile:
    """GPU time per prefix of the cluster, and of ``kernel``'s own work, in cell ``cell`` (its
    number; default the last finished cell) or the last ``seconds``."""
    cells = kernel.log
    if seconds is not None:
        stop = time.time()
        start, title, found = stop - seconds, f"GPU time in the last {seconds:g} s", None
    else:
        found = None if cells is None else (cells.find(cell) if cell else cells.last())
        if found is None:
            raise GpuDaskError(
                f"no cell {cell} has run since the extension was loaded"
                if cell
                else "no cell has finished since the extension was loaded"
            )
        start, stop = found.start, found.stop or time.time()
        title = f"GPU time in cell [{found.number}] ({format_seconds(stop - start)})"
    out = Profile(title)
    if cells is not None and found is not None:
        usage = cells.usage(found)
        out.kernel = readings.PrefixTime(
            "kernel", 1, stop - start, usage.gpu_seconds, usage.htod, usage.dtoh, found.peak
        )
        out.notes.append(f"kernel: {cells.reason}")
    if client is not None:
        try:
            events = _flushed_events(client)
        except Exception as err:
            log.warning("the cluster's GPU time was not read", exc_info=True)
            out.notes.append(f"cluster: not read ({err})")
        else:
            out.rows = readings.per_prefix(events, start, stop)
            out.notes.append("workers: " + readings.sources_of(events).summary())
    else:
        out.notes.append("no cluster: the kernel's own work only")
    return out
