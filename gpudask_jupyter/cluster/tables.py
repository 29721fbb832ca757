"""The tables ``%gpu_cluster`` shows: what was started, attached or joined, and the live figures.

Both list the workers in the same order with the same leading columns and the same dashboard
link and notes (for a joined cluster, whose each worker is: this kernel's or others'); they differ
in what they say of each worker's GPU (which one, by UUID, in the summary; how busy and how full,
in the status). Which GPU a worker has is asked once (:mod:`.gpu_bindings`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .. import compat
from ..errors import ClusterError
from ..machine import nvml
from ..monitor import heartbeat, scheduler_probe
from ..schema.frame import WORKER_COUNTS
from ..text.table import Table
from ..text.units import format_bytes
from .room import holder

if TYPE_CHECKING:
    from .session import ClusterSession

log = logging.getLogger(__name__)

Workers = dict[str, dict[str, Any]]

#: seconds the status waits for the scheduler to count the tasks waiting for a resource
CALL_TIMEOUT = 5.0


def summary_table(session: ClusterSession) -> Table:
    """What was started or attached to: each worker and its GPU, and the dashboard link."""
    workers = _workers(session)
    title = session.kind.title(session, workers)
    gpu_columns = ["GPU", "UUID", "GPU memory"] if session.mode != "cpu" else []
    resources = any(identity.get("resources") for identity in workers.values())
    extra = ["resources"] if resources else []
    columns = ["worker", *_whose_column(session), "host", *gpu_columns, "threads"]
    table = Table(title, [*columns, "memory limit", *extra])
    without_gpu = 0
    for address, identity in workers.items():
        gpu_cells: list[object] = []
        if gpu_columns:
            name, uuid, total = session.gpu_bindings.describe(address, identity)
            without_gpu += not name
            gpu_cells = [
                name or "–",
                _short_uuid(uuid) if uuid else "–",
                format_bytes(total) if total else "–",
            ]
        limit = identity.get("memory_limit")
        table.add(
            *_worker_cells(session, address, identity),
            *gpu_cells,
            identity.get("nthreads", "–"),
            format_bytes(limit) if limit else "none",
            *([_resources(identity)] if resources else []),
        )
    notes = [f"scheduler: {session.address}", reach(session)]
    return _with_links_and_notes(table, session, *notes, *_gpu_dashes(without_gpu, len(workers)))


def _gpu_dashes(without: int, workers: int) -> list[str]:
    """What a GPU column of "–" means, where every worker has one: a local CPU cluster's
    tables say why there is no GPU; an attached cluster's said nothing."""
    if workers == 0 or without < workers:
        return []
    return [
        "GPU columns: no worker reports a GPU (CPU workers, or workers that do not run "
        "dask-cuda's GPU diagnostics)"
    ]


def reach(session: ClusterSession) -> str:
    """One line on who can reach the cluster (and its dashboard), and this kernel's workers in
    a cluster it joined, for the summary."""
    return session.kind.reach(session)


def status_table(session: ClusterSession) -> Table:
    """Live figures per worker: GPU use, host memory and tasks."""
    if not session.alive:
        raise ClusterError(session.gone())
    workers = _workers(session)
    n = len(workers)
    gpu_columns = ["GPU", "GPU util", "GPU memory"] if session.mode != "cpu" else []
    columns = ["worker", *_whose_column(session), "host", *gpu_columns, "host memory", "threads"]
    table = Table(
        f"{session.kind.heading} at {session.address}: {n} worker{'s' * (n != 1)}",
        [*columns, f"tasks {' / '.join(WORKER_COUNTS.values())}"],
    )
    for address, identity in workers.items():
        metrics = identity.get("metrics") or {}
        gpu_cells = _gpu_use(session, address, identity) if gpu_columns else []
        host_memory = format_bytes(metrics.get("memory"))
        if identity.get("memory_limit"):
            host_memory += f" / {format_bytes(identity['memory_limit'])}"
        table.add(
            *_worker_cells(session, address, identity),
            *gpu_cells,
            host_memory,
            identity.get("nthreads", "–"),
            _task_counts(identity),
        )
    return _with_links_and_notes(table, session, *_waiting_notes(session))


def _task_counts(identity: dict[str, Any]) -> str:
    counts = heartbeat.task_counts(identity)
    return f"{counts.executing} / {counts.ready} / {counts.in_memory}"


def _waiting_notes(session: ClusterSession) -> list[str]:
    """A note per resource that tasks wait for and no worker offers (they never run here)."""
    waiting = missing_resources(session.client)
    return [
        f"{n} task{'s' * (n != 1)} wait{'s' * (n == 1)} for resource {name!r}, which no worker "
        f"offers: {'it' if n == 1 else 'they'} will not run until a worker with {name} joins "
        "(start workers with --resources, or submit without resources=)"
        for name, n in sorted(waiting.items())
    ]


def missing_resources(client: Any) -> dict[str, int]:
    """:func:`..monitor.scheduler_probe.missing_resources`, asked of the scheduler within
    :data:`CALL_TIMEOUT`; empty when it cannot answer (the status still shows the rest)."""
    import cloudpickle

    registered = scheduler_probe.__name__ in cloudpickle.list_registry_pickle_by_value()
    if not registered:  # a scheduler elsewhere need not have this package
        cloudpickle.register_pickle_by_value(scheduler_probe)
    try:
        found = compat.run_on_scheduler(client, scheduler_probe.missing_resources, CALL_TIMEOUT)
    except Exception:
        log.debug("asking the scheduler for missing resources failed", exc_info=True)
        return {}
    finally:
        if not registered:
            cloudpickle.unregister_pickle_by_value(scheduler_probe)
    if not isinstance(found, dict):
        return {}
    return {str(k): int(v) for k, v in found.items() if isinstance(v, int) and v > 0}


def no_cluster_text() -> str:
    """What ``status`` says in a kernel without a cluster: this machine's GPUs, and how to start."""
    state = nvml.status()
    found = (
        ", ".join(f"{d.label}: {d.name}" for d in nvml.devices())
        if state.available
        else f"none ({state.reason})"
    )
    return (
        f"No cluster in this kernel. GPUs on this machine: {found}.\n"
        "Start one with %gpu_cluster start, or %gpu_cluster attach ADDRESS."
    )


def _workers(session: ClusterSession) -> Workers:
    """The workers by name, with their GPUs asked for unless the cluster has none."""
    workers = session.workers()
    if session.mode != "cpu":
        session.gpu_bindings.ask(session.client, list(workers))
    return dict(sorted(workers.items(), key=lambda item: str(item[1].get("name"))))


def _whose_column(session: ClusterSession) -> list[str]:
    """A joined cluster's tables say whose each worker is; the others' are all or none ours."""
    return ["whose"] if session.kind.mixed else []


def _worker_cells(session: ClusterSession, address: str, identity: dict[str, Any]) -> list[object]:
    name = identity.get("name", address)
    if not session.kind.mixed:
        return [name, identity.get("host", "")]
    whose = "this kernel" if session.kind.owns(address) else "others"
    return [name, whose, identity.get("host", "")]


def _gpu_use(session: ClusterSession, address: str, identity: dict[str, Any]) -> list[object]:
    name, _, total = session.gpu_bindings.describe(address, identity)
    beat = heartbeat.reported_gpu(identity)
    util = f"{beat.utilization:.0f}%" if beat and beat.utilization is not None else "–"
    used = beat.memory_used if beat else None
    total = (beat.memory_total if beat else None) or total
    memory = f"{format_bytes(used)} / {format_bytes(total)}" if used is not None and total else "–"
    return [name or "–", util, memory]


def _with_links_and_notes(table: Table, session: ClusterSession, *notes: str) -> Table:
    link = session.dashboard_link
    if link:
        table.links.append(("dashboard", link))
    table.notes.extend(notes)
    if session.place is not None:
        table.notes.append(holder.describe(session.place, cpu_workers=session.mode == "cpu"))
    table.notes.extend(session.kind.notes(session))
    return table


def _resources(identity: dict[str, Any]) -> str:
    found = identity.get("resources") or {}
    if not isinstance(found, dict):
        return "–"
    return ", ".join(f"{name}={amount:g}" for name, amount in sorted(found.items())) or "–"


def _short_uuid(uuid: str) -> str:
    return uuid if len(uuid) <= 16 else uuid[:12] + "…"
