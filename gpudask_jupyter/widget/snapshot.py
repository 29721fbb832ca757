"""The panel as plain text: what a terminal, ``jupyter console`` or an executed notebook shows.

Where no widget front end draws the panel, ``%gpu_cluster panel`` prints this snapshot instead
and starts no sampler; the widget's ``text/plain`` is the same text, so a notebook executed by
nbconvert or papermill carries it in its outputs. It reads one frame, from the kernel's running
monitor when panels are open, otherwise from a monitor made for the one reading and stopped
right after.
"""

from __future__ import annotations

import logging
import time

from ..monitor import Monitor
from ..monitor.trackers import CALL_TIMEOUT
from ..schema.frame import WORKER_COUNTS, DeviceReading, Frame, WorkerInfo
from ..text.units import format_bytes, format_seconds
from .shared_monitor import KEY, KernelView

log = logging.getLogger(__name__)

MAX_ROWS = 12
"""Workers and progress rows listed; the rest are counted."""


def snapshot_frame(view: KernelView, wait: float = CALL_TIMEOUT) -> Frame:
    """The kernel's frame now; ``wait``: how long a one-off reading waits for the scheduler."""
    monitor = view.running()
    if monitor is not None and monitor.ticks:
        return monitor.frame(KEY)[0]
    monitor = Monitor(view.sources)
    try:
        monitor.tick(wait=wait)
        return monitor.frame(KEY)[0]
    finally:
        monitor.stop()


def snapshot_text(view: KernelView, wait: float = CALL_TIMEOUT) -> str:
    """The kernel's panel, now, as text."""
    try:
        return frame_text(snapshot_frame(view, wait))
    except Exception as err:  # a text fallback must not fail the cell that asked for it
        log.debug("the panel's text snapshot failed", exc_info=True)
        return f"GPU Dask panel: no snapshot ({type(err).__name__}: {err})"


def frame_text(frame: Frame) -> str:
    """A frame in a few plain lines: cluster state, GPUs, workers with their counts, progress."""
    lines = _cluster_lines(frame) + _gpu_lines(frame) + _worker_lines(frame)
    lines += _progress_lines(frame)
    lines += _gpu_time_lines(frame)
    lines += _room_lines(frame)
    for wait in frame["waiting"]:
        lines.append(
            f"Waiting: {wait['tasks']} task(s) ask for the resource {wait['resource']!r}, "
            "which no worker offers: they will not run"
        )
    lines += [f"Note: {message}" for message in frame["messages"]]
    return "\n".join(lines)


def _room_lines(frame: Frame) -> list[str]:
    """The room of a shared GPU server, where the frame has one: a line per GPU, then the
    holders this user may see and the others as a count."""
    room = frame.get("room")
    if not room:
        return []
    lines = [
        f"Room: {sum(g['holders'] for g in room['gpus'])} holder(s) on {len(room['gpus'])} GPU(s)"
    ]
    for gpu in room["gpus"]:
        lines.append(
            f"  GPU {gpu['label']} {gpu['name']}: {gpu['holders']} holder(s), "
            f"{format_bytes(gpu['not_promised'])} not promised, "
            f"{_percent(gpu['utilization'])} busy"
        )
        for holder in gpu["shown"]:
            used = "–" if holder["used"] is None else format_bytes(holder["used"])
            marks = [
                m
                for m, on in (("above the share", holder["above"]), ("idle", holder["idle"]))
                if on
            ]
            lent = holder.get("relied_on")
            share = (
                f"a {format_bytes(holder['share'])} share"
                if lent is None
                else f"{format_bytes(holder['share'])} lent, {format_bytes(lent)} relied on"
            )
            lines.append(
                f"    {holder['who']}: {used} of {share}"
                + (f" ({', '.join(marks)})" if marks else "")
            )
        if gpu["others"]:
            lines.append(
                f"    {gpu['others']} other student(s), {gpu['others_idle']} idle, "
                f"{gpu['others_above']} above their share"
            )
    return lines


def _cluster_lines(frame: Frame) -> list[str]:
    cluster = frame["cluster"]
    if cluster is None:
        return ["GPU Dask panel: no cluster in this kernel (start one with %gpu_cluster start)"]
    parts = [cluster["state"], cluster["mode"], f"scheduler {cluster['address']}"]
    if cluster["dashboard"]:
        parts.append(f"dashboard {cluster['dashboard']}")
    lines = ["GPU Dask panel: cluster " + ", ".join(parts)]
    if cluster["stopped_at"] is not None:
        when = time.strftime("%H:%M:%S", time.localtime(cluster["stopped_at"]))
        lines.append(f"  stopped at {when}: {cluster['message']} (what follows is its last view)")
    elif cluster["message"]:
        lines.append(f"  {cluster['message']}")
    return lines


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}%"


def _gpu_lines(frame: Frame) -> list[str]:
    if not frame["devices"]:
        if frame["nvml"]["available"]:
            return ["GPUs: none reported"]
        return [f"GPUs: no GPU data ({frame['nvml']['reason']})"]
    latest = frame["samples"][-1]["values"] if frame["samples"] else {}
    lines = ["GPUs:"]
    for device in frame["devices"]:
        values = latest.get(device["id"])
        reading = DeviceReading.from_values(values) if values is not None else DeviceReading()
        memory = f"{format_bytes(reading.memory_used)} / {format_bytes(device['memory_total'])}"
        if device["cluster_memory"] is not None:
            memory += f" ({format_bytes(device['cluster_memory'])} this cluster's)"
        where = f" on {device['host']}" if device["host"] else ""
        lines.append(
            f"  {device['label']} {device['name']}{where}: {_percent(reading.utilization)} busy, "
            f"memory {memory}"
        )
    return lines


def _worker_line(worker: WorkerInfo) -> str:
    memory = f"{format_bytes(worker['memory'])} / {format_bytes(worker['memory_limit'])}"
    line = (
        f"  {worker['name']} ({worker['address']}): "
        + ", ".join(f"{word} {worker.get(key)}" for key, word in WORKER_COUNTS.items())
        + f"; host memory {memory}"
    )
    gpu = worker["gpu"]
    if gpu is not None:
        line += (
            f"; GPU {_percent(gpu['utilization'])} busy, "
            f"{format_bytes(gpu['memory_used'])} / {format_bytes(gpu['memory_total'])}"
        )
    return line


def _worker_lines(frame: Frame) -> list[str]:
    workers = frame["workers"]
    if frame["cluster"] is None:
        return []
    lines = [f"Workers ({len(workers)}):"]
    lines += [_worker_line(w) for w in workers[:MAX_ROWS]]
    if len(workers) > MAX_ROWS:
        lines.append(f"  … and {len(workers) - MAX_ROWS} more")
    return lines


def _gpu_time_lines(frame: Frame) -> list[str]:
    """Where the GPU's time went per prefix, as the views' GPU time section says it; nothing
    where no worker measures (no GPU)."""
    gpu_time = frame.get("gpu_time")
    if not gpu_time or (not gpu_time["measuring"] and not gpu_time["rows"]):
        return []
    lines = [f"GPU time by task prefix ({gpu_time['source']}):"]
    for row in gpu_time["rows"][:MAX_ROWS]:
        busy = f"{100 * row['gpu'] / row['wall']:.0f}% busy" if row["wall"] > 0 else "–"
        line = f"  {row['prefix']}: {busy}, {format_seconds(row['gpu'])} GPU of "
        line += f"{format_seconds(row['wall'])}, {row['tasks']} task(s)"
        if row["peak"]:
            line += f", peak {format_bytes(row['peak'])}"
        if row["htod"] or row["dtoh"]:
            line += f", {format_bytes(row['htod'])} to GPU, {format_bytes(row['dtoh'])} back"
        lines.append(line)
    if len(gpu_time["rows"]) > MAX_ROWS:
        lines.append(f"  … and {len(gpu_time['rows']) - MAX_ROWS} more prefixes")
    return lines


def _progress_lines(frame: Frame) -> list[str]:
    progress = frame["progress"]
    if not progress:
        return []
    lines = ["Progress by task prefix:"]
    for row in progress[:MAX_ROWS]:
        line = f"  {row['prefix']}: {row['done']} / {row['total']} done"
        if row["running"]:
            line += f", {row['running']} running"
        if row["processing"] > row["running"]:
            line += f", {row['processing'] - row['running']} waiting for a thread"
        if row["erred"]:
            line += f", {row['erred']} failed"
        lines.append(line)
    if len(progress) > MAX_ROWS:
        lines.append(f"  … and {len(progress) - MAX_ROWS} more prefixes")
    return lines
