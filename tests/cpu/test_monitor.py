"""The Monitor against a real Dask cluster: increments, progress, bounds, failures, threads."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support import this_kernel, this_view, wait_until

from gpudask_jupyter.machine import nvml
from gpudask_jupyter.monitor import Cursor, Monitor, Source
from gpudask_jupyter.monitor.callers import ClientCaller
from gpudask_jupyter.monitor.taskstream import SeqBuffer
from gpudask_jupyter.schema.frame import WorkerInfo


def slow_inc(x: int, delay: float = 0.05) -> int:
    time.sleep(delay)
    return x + 1


def fails(x: int) -> int:
    raise ValueError(x)


@pytest.fixture
def dask_client() -> Iterator[Any]:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=2,
        processes=True,
        dashboard_address=None,
        memory_limit="1GB",
    )
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def source_for(client: Any) -> Source:
    return Source(
        token=client,
        caller=lambda: ClientCaller(client),
        mode="cpu",
        address=client.scheduler.address,
    )


def monitor_for(client: Any) -> Monitor:
    source = source_for(client)
    return Monitor(lambda: {"c": source})


def test_task_stream_comes_in_increments(dask_client) -> None:
    monitor = monitor_for(dask_client)
    monitor.tick()
    snapshot, cursor = monitor.frame("c")
    assert snapshot["kind"] == "snapshot"
    assert snapshot["cluster"]["state"] == "running"
    assert {w["name"] for w in snapshot["workers"]} == {"0", "1"}
    dask_client.gather(dask_client.map(slow_inc, range(20)))
    monitor.tick()
    delta, cursor = monitor.frame("c", cursor)
    assert delta["kind"] == "delta"
    computed = [t for t in delta["tasks"] if t["action"] == "compute"]
    assert len({t["key"] for t in computed}) == 20
    assert {t["prefix"] for t in computed} == {"slow_inc"}
    workers = {w["address"] for w in delta["workers"]}
    for rect in computed:
        assert rect["worker"] in workers
        assert rect["stop"] >= rect["start"] > time.time() - 60
        assert rect["color"].startswith("#") and not rect["error"]
    monitor.tick()
    again, _ = monitor.frame("c", cursor)
    assert again["tasks"] == []  # nothing new, nothing sent twice
    json.dumps(delta)  # the frame is plain JSON


def test_progress_per_prefix_and_errors(dask_client) -> None:
    monitor = monitor_for(dask_client)
    futures = dask_client.map(slow_inc, range(12), delay=0.5)
    bad = dask_client.map(fails, range(3))

    def processing() -> dict[str, Any] | None:
        monitor.tick()
        rows = {p["prefix"]: p for p in monitor.frame("c")[0]["progress"]}
        return rows if rows.get("slow_inc", {}).get("processing") else None

    rows = wait_until(processing, 30, "slow_inc tasks processing in the frame", step=0.1)
    assert rows["slow_inc"]["total"] == 12
    assert rows["slow_inc"]["processing"] > 0
    dask_client.gather(futures)
    with contextlib.suppress(ValueError):
        dask_client.gather(bad)
    monitor.tick()
    frame, _ = monitor.frame("c")
    rows = {p["prefix"]: p for p in frame["progress"]}
    assert rows["slow_inc"]["done"] == 12
    assert rows["fails"]["erred"] == 3
    assert any(t["error"] for t in frame["tasks"])


def test_running_counts_come_from_the_workers_and_never_exceed_their_threads(dask_client) -> None:
    """The scheduler gives each worker a few more tasks than it has threads (worker-saturation);
    those wait there. "Running" is what the workers said they run, so it fits in their threads."""
    monitor = monitor_for(dask_client)
    threads = sum(w["nthreads"] for w in dask_client.scheduler_info()["workers"].values())
    a = dask_client.map(slow_inc, range(20), delay=1.5, key=[f"slow_a-{i}" for i in range(20)])
    b = dask_client.map(slow_inc, range(20), delay=1.5, key=[f"slow_b-{i}" for i in range(20)])
    seen = {"running": 0, "waiting": 0}

    def both_seen() -> bool:
        monitor.tick()
        frame, _ = monitor.frame("c")
        rows = [p for p in frame["progress"] if p["prefix"] in ("slow_a", "slow_b")]
        running = sum(p["running"] for p in rows)
        assert running <= threads, rows
        assert all(p["running"] <= p["processing"] for p in rows), rows
        seen["running"] = max(seen["running"], running)
        waiting = sum(p["processing"] - p["running"] for p in rows)
        seen["waiting"] = max(seen["waiting"], waiting)
        return bool(seen["running"] and seen["waiting"])

    wait_until(both_seen, 20, lambda: f"tasks running and waiting on the workers: {seen}", 0.5)
    dask_client.cancel(a + b)
    assert seen["running"] > 0  # the heartbeats named what runs
    assert seen["waiting"] > 0  # what was given beyond the threads is told apart


def test_a_killed_worker_is_reported_and_monitoring_goes_on(dask_client) -> None:
    monitor = monitor_for(dask_client)
    monitor.tick()
    victim = sorted(dask_client.scheduler_info()["workers"])[0]
    with contextlib.suppress(Exception):
        dask_client.run(os._exit, 1, workers=[victim])

    def reported() -> Any:
        monitor.tick()
        frame, _ = monitor.frame("c")
        return frame if any(f"worker {victim} left" in m for m in frame["messages"]) else None

    frame = wait_until(
        reported, 30, lambda: f"the frame to say {victim} left: {monitor.frame('c')[0]}", 0.2
    )
    assert frame["cluster"]["state"] == "running"
    assert dask_client.submit(slow_inc, 1).result() == 2


def test_a_closed_cluster_is_reported() -> None:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)
    client = Client(cluster)
    monitor = monitor_for(client)
    monitor.tick()
    cluster.close()
    client.close()
    monitor.tick()
    frame, _ = monitor.frame("c")
    assert frame["cluster"]["state"] in {"closed", "unreachable"}
    assert frame["cluster"]["message"]


def test_without_cluster_and_gpu_the_frame_says_why() -> None:
    monitor = Monitor(lambda: {})
    monitor.tick()
    frame, _ = monitor.frame("kernel")
    assert frame["cluster"] is None
    state = nvml.status()
    assert frame["nvml"]["available"] is state.available
    if not state.available:
        assert frame["nvml"]["reason"] == state.reason != ""
        assert frame["devices"] == []


def test_buffers_are_bounded_by_count_and_age() -> None:
    buffer: SeqBuffer[int] = SeqBuffer(maxlen=100)
    for i in range(1000):
        buffer.append(float(i), i)
    assert len(buffer) == 100
    assert buffer.since(996) == [996, 997, 998, 999]  # item i has sequence number i + 1
    buffer.prune(950.0)
    assert len(buffer) == 50
    assert buffer.window(990.0) == list(range(990, 1000))


def test_monitor_history_is_bounded(dask_client) -> None:
    monitor = monitor_for(dask_client)
    token = monitor.subscribe(lambda: None, interval=10, history=10)
    try:
        for _ in range(3):
            monitor.tick()
        frame, _ = monitor.frame("c")
        assert frame["history"] == 10
        assert all(s["t"] >= frame["time"] - 10 for s in frame["samples"])
    finally:
        monitor.unsubscribe(token)


def test_samples_on_its_own_thread_only_while_subscribed() -> None:
    monitor = Monitor(lambda: {})
    seen: list[str] = []
    token = monitor.subscribe(lambda: seen.append(threading.current_thread().name), interval=0.25)
    wait_until(lambda: len(seen) >= 3, 10, lambda: f"three samples ({len(seen)} came)")
    assert set(seen) == {"gpudask-monitor"}
    assert monitor.running
    monitor.unsubscribe(token)
    assert not monitor.running
    assert "gpudask-monitor" not in {t.name for t in threading.enumerate()}


def test_requests_keep_the_thread_alive_then_it_stops(monkeypatch) -> None:
    monitor = Monitor(lambda: {})
    monitor.request("tab", 0.25)
    assert monitor.running
    assert monitor.interval == 0.25
    monkeypatch.setattr(time, "monotonic", lambda: 1e12)  # 30 s without a poll
    deadline = time.time() + 10
    while monitor.running and time.time() < deadline:
        time.sleep(0.05)
    assert not monitor.running


def test_interval_and_history_are_clamped() -> None:
    monitor = Monitor(lambda: {})
    token = monitor.subscribe(lambda: None, interval=0.001, history=10**9)
    try:
        assert monitor.interval == 0.25
        assert monitor.history == 3600
    finally:
        monitor.unsubscribe(token)


def test_a_failing_consumer_is_logged_and_the_others_still_get_frames(caplog) -> None:
    monitor = Monitor(lambda: {})
    seen: list[str] = []

    def broken() -> None:
        raise RuntimeError("view gone")

    caplog.set_level(logging.DEBUG, logger="gpudask_jupyter.monitor")
    first = monitor.subscribe(broken, interval=0.25)
    second = monitor.subscribe(lambda: seen.append("frame"), interval=0.25)
    try:
        wait_until(lambda: len(seen) >= 2, 10, lambda: f"two frames ({len(seen)} came)")
    finally:
        monitor.unsubscribe(first)
        monitor.unsubscribe(second)
    failed = [r for r in caplog.records if "callback failed" in r.getMessage()]
    assert failed and failed[0].exc_info is not None


def test_a_failing_tick_is_logged_and_said_in_the_frames(caplog) -> None:
    def sources() -> dict[str, Source]:
        raise OSError("registry unreadable")

    monitor = Monitor(sources)
    caplog.set_level(logging.DEBUG, logger="gpudask_jupyter.monitor")

    def said() -> Any:
        frame, _ = monitor.frame("c")
        return frame if frame["messages"] else None

    token = monitor.subscribe(lambda: None, interval=0.25)
    try:
        frame = wait_until(said, 10, "the frame to say the tick failed")
    finally:
        monitor.unsubscribe(token)
    assert frame["messages"] == ["monitor error: OSError: registry unreadable"]
    failed = [r for r in caplog.records if "tick failed" in r.getMessage()]
    assert failed[0].levelno == logging.WARNING and failed[0].exc_info is not None


def test_deltas_follow_the_cursor_and_a_foreign_cursor_gets_a_snapshot() -> None:
    monitor = Monitor(lambda: {})
    monitor.tick()
    snapshot, cursor = monitor.frame("kernel")
    assert snapshot["kind"] == "snapshot" and len(snapshot["samples"]) == 1
    monitor.tick()
    delta, after = monitor.frame("kernel", cursor)
    assert delta["kind"] == "delta" and len(delta["samples"]) == 1
    assert after.samples == cursor.samples + 1
    future = Cursor(samples=after.samples + 100, tasks=0, epoch=0)  # a restarted monitor's
    assert monitor.frame("kernel", future)[0]["kind"] == "snapshot"
    other_cluster = Cursor(samples=after.samples, tasks=0, epoch=7)
    assert monitor.frame("kernel", other_cluster)[0]["kind"] == "snapshot"


def test_the_kernel_monitor_follows_no_cluster_until_one_is_started() -> None:
    from gpudask_jupyter.cluster.session import KernelCluster
    from gpudask_jupyter.widget.shared_monitor import KernelView

    view = KernelView(KernelCluster())
    assert view.cluster.current() is None
    assert view.sources() == {}


# -- what the frames say about the cluster ------------------------------------------------------


def _scheduler_counts(dask_scheduler: Any = None) -> dict[str, tuple[int, int]]:
    """Per worker: tasks sent to it and not finished (running or ready there), results held."""
    return {a: (len(ws.processing), len(ws.has_what)) for a, ws in dask_scheduler.workers.items()}


def test_worker_counts_match_the_schedulers_with_held_results(dask_client) -> None:
    from distributed import wait

    monitor = monitor_for(dask_client)
    held = dask_client.map(slow_inc, range(10), delay=0)
    wait(held)
    sleepers = dask_client.map(time.sleep, [4] * 6, pure=False)

    def agreed() -> dict[str, WorkerInfo] | None:
        monitor.tick()
        workers = {w["address"]: w for w in monitor.frame("c")[0]["workers"]}
        expected = dask_client.run_on_scheduler(_scheduler_counts)
        mine = {a: (w["executing"] + w["ready"], w["in_memory"]) for a, w in workers.items()}
        busy = sum(w["executing"] for w in workers.values())
        return workers if mine == expected and busy == 4 else None

    workers = wait_until(
        agreed,
        20,
        lambda: f"the scheduler's counts: {dask_client.run_on_scheduler(_scheduler_counts)}",
        step=0.3,
    )
    assert sum(w["in_memory"] for w in workers.values()) == 10
    assert sum(w["ready"] for w in workers.values()) == 6 - 4 - _queued(dask_client)
    assert all(w["ours"] for w in workers.values())  # a cluster the kernel started
    dask_client.cancel(sleepers)


def _queued(client: Any) -> int:
    return int(client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.queued)))


def test_tasks_waiting_for_a_resource_no_worker_offers_are_in_the_frame(dask_client) -> None:
    monitor = monitor_for(dask_client)
    future = dask_client.submit(slow_inc, 1, resources={"GPU": 1}, pure=False)

    def waiting() -> list[Any]:
        monitor.tick()
        return monitor.frame("c")[0]["waiting"]

    assert wait_until(waiting, 10, "a task waiting", 0.2) == [{"resource": "GPU", "tasks": 1}]
    future.cancel()
    wait_until(lambda: not waiting(), 10, "the cancelled task to leave the frame", 0.2)


def test_the_probe_gives_each_workers_process_id(dask_client) -> None:
    from gpudask_jupyter.monitor import scheduler_probe

    scheduler_probe.ship_by_value()
    answer = dask_client.run_on_scheduler(scheduler_probe.poll)
    pids = {address: identity["pid"] for address, identity in answer["workers"].items()}
    assert pids == dask_client.run(os.getpid)


def test_workers_of_an_attached_cluster_are_not_ours_unless_the_source_says(dask_client) -> None:
    def source(**extra: Any) -> Source:
        return Source(
            token=1,
            caller=lambda: ClientCaller(dask_client),
            mode="attached",
            address=dask_client.scheduler.address,
            **extra,
        )

    attached = Monitor(lambda: {"c": source()})
    attached.tick()
    assert [w["ours"] for w in attached.frame("c")[0]["workers"]] == [False, False]
    first = sorted(dask_client.scheduler_info()["workers"])[0]
    joined = Monitor(lambda: {"c": source(ours=lambda address: address == first)})
    joined.tick()
    ours = {w["address"]: w["ours"] for w in joined.frame("c")[0]["workers"]}
    assert ours == {a: a == first for a in ours} and sum(ours.values()) == 1


def test_the_clusters_share_of_device_memory_comes_from_its_workers_processes() -> None:
    from gpudask_jupyter.monitor.workers import memory_by_device

    listing = [
        nvml.GpuProcess("GPU-a", 10, 100, own=True),
        nvml.GpuProcess("GPU-a", 11, 50, own=True),
        nvml.GpuProcess("GPU-b", 11, 7, own=True),
        nvml.GpuProcess("GPU-b", 99, 1000, own=False),  # not the cluster's
        nvml.GpuProcess("GPU-c", 12, None, own=True),  # memory not reported
    ]
    assert memory_by_device({10, 11, 12}, listing) == {"GPU-a": 150, "GPU-b": 7, "GPU-c": 0}
    assert memory_by_device({42}, listing) is None  # the listing does not see them: unknown
    assert memory_by_device(set(), listing) is None


def test_after_stop_the_history_stays_until_a_new_cluster_starts(dask_client) -> None:
    sources: dict[str, Source] = {"c": monitor_for(dask_client)._sampler.trackers._sources()["c"]}
    monitor = Monitor(lambda: dict(sources))
    monitor.tick()  # the scheduler records the task stream from the first question on
    # held until the tick has seen them: the scheduler drops the progress of forgotten tasks
    futures = dask_client.map(slow_inc, range(5))
    dask_client.gather(futures)
    monitor.tick()
    running, cursor = monitor.frame("c")
    del futures
    assert running["cluster"]["state"] == "running" and running["tasks"]
    del sources["c"]  # %gpu_cluster stop, or the kernel went away
    monitor.tick()
    stopped, after = monitor.frame("c", cursor)
    assert stopped["kind"] == "delta"  # the same cluster's history, not a new one
    assert stopped["cluster"]["state"] == "stopped"
    assert stopped["cluster"]["stopped_at"] == pytest.approx(time.time(), abs=5)
    assert stopped["cluster"]["message"] == "the cluster was stopped"
    snapshot, _ = monitor.frame("c")
    assert {t["key"] for t in snapshot["tasks"]} == {t["key"] for t in running["tasks"]}
    assert snapshot["workers"] and snapshot["progress"]
    assert all(w["executing"] == 0 for w in snapshot["workers"])
    sources["c"] = Source(
        token="new", caller=lambda: ClientCaller(dask_client), mode="cpu", address="x"
    )
    monitor.tick()
    fresh, _ = monitor.frame("c", after)
    assert fresh["kind"] == "snapshot" and fresh["cluster"]["stopped_at"] is None
    assert fresh["cluster"]["state"] == "running"


def test_a_stopped_cluster_keeps_the_stop_time_its_kernel_noted() -> None:
    """Every view of one stop gives the kernel's time (panel and sidebar alike), never later
    than the monitor noticed; where the kernel noted none, when the monitor noticed."""
    from gpudask_jupyter.monitor.trackers import Trackers

    noted: list[float | None] = [998.5]
    sources = {
        "c": Source(
            token=1, caller=lambda: ClientCaller(None), mode="cpu", address="a",
            stopped_at=lambda: noted[0],
        )
    }  # fmt: skip
    trackers = Trackers(lambda: dict(sources))
    lock = threading.RLock()
    trackers.reconcile(990.0, 60, lock)
    sources.clear()
    trackers.reconcile(1001.0, 60, lock)
    tracker = trackers.get("c")
    assert tracker is not None and tracker.stopped_at == 998.5
    noted[0] = None
    sources["c"] = Source(
        token=2, caller=lambda: ClientCaller(None), mode="cpu", address="a",
        stopped_at=lambda: noted[0],
    )  # fmt: skip
    trackers.reconcile(1002.0, 60, lock)
    sources.clear()
    trackers.reconcile(1003.0, 60, lock)
    tracker = trackers.get("c")
    assert tracker is not None and tracker.stopped_at == 1003.0


def test_a_stopped_clusters_history_ages_out() -> None:
    from gpudask_jupyter.monitor.trackers import Trackers

    sources = {"c": Source(token=1, caller=lambda: ClientCaller(None), mode="cpu", address="a")}
    trackers = Trackers(lambda: dict(sources))
    lock = threading.RLock()
    assert trackers.reconcile(1000.0, 60, lock)
    sources.clear()
    assert trackers.reconcile(1001.0, 60, lock)  # stopped
    tracker = trackers.get("c")
    assert tracker is not None and tracker.state == "stopped" and tracker.stopped_at == 1001.0
    assert not trackers.reconcile(1060.0, 60, lock)  # still within the history
    assert trackers.reconcile(1062.0, 60, lock) and trackers.get("c") is None


def test_a_cluster_that_goes_away_is_said_within_two_seconds_at_any_interval() -> None:
    sources = {"c": Source(token=1, caller=lambda: ClientCaller(None), mode="cpu", address="a")}
    monitor = Monitor(lambda: dict(sources))
    states: list[tuple[float, str]] = []

    def seen() -> None:
        cluster = monitor.frame("c")[0]["cluster"]
        states.append((time.monotonic(), cluster["state"] if cluster else "none"))

    token = monitor.subscribe(seen, interval=10)
    try:
        wait_until(lambda: states, 10, "a first frame", 0.2)
        gone = time.monotonic()
        sources.clear()
        wait_until(lambda: states[-1][1] == "stopped", 5, lambda: f"a stop ({states})", 0.2)
        assert states[-1][0] - gone < 2.0
    finally:
        monitor.unsubscribe(token)


def test_the_polling_function_is_pickled_once_and_sent_as_bytes(monkeypatch) -> None:
    """Pickling poll by value walks two modules (~0.4 ms); a panel polls four times a second."""
    import cloudpickle
    from distributed.protocol.pickle import dumps, loads

    from gpudask_jupyter.monitor import callers, scheduler_probe

    shipped = callers.shipped("poll")
    assert callers.shipped("poll") is shipped

    def walk(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("cloudpickle walked the function again")

    monkeypatch.setattr(cloudpickle, "dumps", walk)
    monkeypatch.setattr(cloudpickle.cloudpickle, "dumps", walk, raising=False)
    sent = dumps(shipped)
    assert len(sent) < len(shipped.data) + 200
    monkeypatch.undo()
    received = loads(sent)
    assert callable(received) and received.__name__ == "poll"
    assert received is not scheduler_probe.poll  # rebuilt from the bytes: by value


# -- what the panel says happened ---------------------------------------------------------------


def _local_cluster(n_workers: int) -> Any:
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=False,
        dashboard_address=None,
    )


def test_workers_that_come_and_go_make_one_note_saying_where_things_stand() -> None:
    """Scaling by four used to leave four boxes in the panel, and another per later change."""
    from distributed import Client

    with _local_cluster(2) as cluster, Client(cluster) as client:
        sources = {"c": source_for(client)}
        monitor = Monitor(lambda: dict(sources))
        monitor.tick()
        cluster.scale(6)
        client.wait_for_workers(6, timeout=30)

        def notes() -> list[str]:
            monitor.tick()
            return [m for m in monitor.frame("c")[0]["messages"] if "worker" in m]

        wait_until(lambda: notes() and "(6 now)" in notes()[-1], 30, "a note of six", 0.2)
        joined = notes()
        assert len(joined) == 1 and joined[0].startswith("4 workers joined ("), joined
        cluster.scale(5)
        wait_until(lambda: "(5 now)" in notes()[-1], 30, "a note of five", 0.2)
        left = notes()
        assert len(left) == 1 and left[0].startswith("worker "), left
        assert left[0].endswith("left the cluster (5 now)"), left
        sources.clear()  # the kernel stopped it
        assert notes() == []  # who came and went is no longer news
        assert monitor.frame("c")[0]["cluster"]["state"] == "stopped"
        monitor.stop()


@pytest.mark.parametrize("on_purpose", [True, False])
def test_a_scheduler_stopped_on_purpose_is_a_stop_not_a_lost_contact(on_purpose: bool) -> None:
    """The sidebar asks the scheduler over a comm of its own. Between the kernel's stop (which
    removes its registry entry first) closing the scheduler and the sidebar rereading the
    registry, a poll fails; the source says the stop was asked for, so the view says stopped."""
    from distributed import LocalCluster

    from gpudask_jupyter.monitor.callers import CommCaller

    stopping = threading.Event()
    cluster = LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    )
    address = cluster.scheduler_address
    source = Source(
        token=address,
        caller=lambda: CommCaller(address, dict, 5),
        mode="cpu",
        address=address,
        stopping=stopping.is_set if on_purpose else None,
    )
    monitor = Monitor(lambda: {"c": source})  # the source stays: the stop is under way

    def state() -> str:
        monitor.tick()
        return str(monitor.frame("c")[0]["cluster"]["state"])

    try:
        wait_until(lambda: state() == "running", 30, "the cluster running", 0.2)
        stopping.set()
        cluster.close()
        wait_until(lambda: state() in {"stopped", "unreachable"}, 30, "the cluster gone", 0.2)
        frame, _ = monitor.frame("c")
        lost = [m for m in frame["messages"] if "lost contact" in m]
        if on_purpose:
            assert frame["cluster"]["state"] == "stopped" and lost == [], frame["messages"]
        else:  # the same failure without the word of the kernel: a warning, as before
            assert frame["cluster"]["state"] == "unreachable" and lost, frame["messages"]
    finally:
        monitor.stop()
        cluster.close()


def test_the_kernels_stop_is_known_to_the_panel_and_the_sidebar(shell) -> None:
    from gpudask_jupyter.server.registry_monitor import RegistrySources
    from gpudask_jupyter.widget import shared_monitor

    shell.run_line_magic("gpu_cluster", "start --n-workers 1")
    session = this_kernel().current()
    assert session is not None
    panel = this_view().sources()[shared_monitor.KEY]
    sidebar = RegistrySources()()[session.kernel_id]
    assert panel.stopping is not None and sidebar.stopping is not None
    assert not panel.stopping() and not sidebar.stopping()
    shell.run_line_magic("gpu_cluster", "stop")
    assert panel.stopping() and sidebar.stopping()
    assert this_view().sources() == {}


def test_a_view_opened_later_shows_the_work_done_before_it_looked(shell) -> None:
    from gpudask_jupyter.server.registry_monitor import RegistrySources

    shell.run_line_magic("gpu_cluster", "start --n-workers 1")
    session = this_kernel().current()
    assert session is not None
    futures = session.client.map(slow_inc, range(5), key=[f"before-{i}" for i in range(5)])
    session.client.gather(futures)
    sidebar = Monitor(RegistrySources())  # the first look, after the work
    try:
        sidebar.tick(wait=10)
        frame, _ = sidebar.frame(session.kernel_id)
    finally:
        sidebar.stop()
        shell.run_line_magic("gpu_cluster", "stop")
    assert sorted(t["key"] for t in frame["tasks"]) == [f"before-{i}" for i in range(5)]


def test_every_view_of_a_cluster_gives_a_prefix_the_same_colour_neighbours_apart(shell) -> None:
    """The kernel's panel and a sidebar opened later read colours from the scheduler's order of
    prefixes: the same in both, consecutive prefixes in palette order (far apart by design)."""
    from gpudask_jupyter.schema.frame import PALETTE
    from gpudask_jupyter.server.registry_monitor import RegistrySources
    from gpudask_jupyter.widget import shared_monitor

    shell.run_line_magic("gpu_cluster", "start --n-workers 1")
    session = this_kernel().current()
    assert session is not None
    client = session.client
    names = ["sum", "sum-aggregate", "chunk_sum", "load"]  # Dask's hash gives three one colour

    def run(name: str) -> None:
        client.gather(
            client.map(slow_inc, range(2), delay=0, key=[f"{name}-{i}" for i in range(2)])
        )

    colors = []
    try:
        run(names[0])
        run(names[1])
        panel = Monitor(this_view().sources)
        panel.tick(wait=10)
        run(names[2])
        run(names[3])
        sidebar = Monitor(RegistrySources())
        for monitor, key in ((panel, shared_monitor.KEY), (sidebar, session.kernel_id)):
            monitor.tick(wait=10)
            frame, _ = monitor.frame(key)
            monitor.stop()
            seen = {t["prefix"]: t["color"] for t in frame["tasks"] if t["prefix"] in names}
            seen.update(
                {p["prefix"]: p["color"] for p in frame["progress"] if p["prefix"] in names}
            )
            colors.append(seen)
    finally:
        shell.run_line_magic("gpu_cluster", "stop")
    assert colors[0] == colors[1]
    assert [colors[0][n] for n in names] == PALETTE[:4]
