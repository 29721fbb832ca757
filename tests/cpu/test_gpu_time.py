"""GPU time per task prefix and per cell, on the CPU: the join of readings to tasks, each
source's reading of its library (CUPTI records, NVML samples, RMM statistics) driven through a
stand-in GPU (tests/stand_in_gpu.py), the worker plugin on a real cluster feeding distributed's
fine performance metrics and the scheduler's events, and ``%gpu_cluster profile`` in a shell."""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

import pytest
import stand_in_gpu
from hypothesis import given, settings
from hypothesis import strategies as st
from stand_in_gpu import StandInGpu
from support import cpu_cluster_client, wait_until

from gpudask_jupyter.gpu_time import readings, worker_plugin
from gpudask_jupyter.gpu_time.memory_peaks import Peaks
from gpudask_jupyter.gpu_time.sources import Choice, CuptiSource, NvmlSource
from gpudask_jupyter.gpu_time.timeline import Busy, Copy, TaskRun, attribute, union

MiB = 2**20


def run(key: str, start: float, stop: float, prefix: str = "p") -> TaskRun:
    return TaskRun(key, prefix, "span", start, stop)


# -- the join ----------------------------------------------------------------------------------


def test_a_task_gets_the_busy_time_inside_its_own_interval_only() -> None:
    tasks = [run("a", 0.0, 2.0), run("b", 3.0, 5.0)]
    busy = [Busy(0.5, 1.5), Busy(1.8, 3.5)]  # the second spills past a's end into the gap and b
    found = attribute(tasks, busy)
    assert found.by_task["a"].gpu_seconds == pytest.approx(1.0 + 0.2)
    assert found.by_task["b"].gpu_seconds == pytest.approx(0.5)
    assert found.unclaimed.gpu_seconds == pytest.approx(1.0)  # 2.0–3.0: nobody's


def test_overlapping_tasks_share_the_moments_they_share_equally() -> None:
    tasks = [run("a", 0.0, 4.0), run("b", 2.0, 6.0)]
    found = attribute(tasks, [Busy(0.0, 6.0)])
    assert found.by_task["a"].gpu_seconds == pytest.approx(2.0 + 1.0)
    assert found.by_task["b"].gpu_seconds == pytest.approx(1.0 + 2.0)


def test_kernels_on_several_streams_count_once_and_samples_count_their_level() -> None:
    assert union([Busy(0, 2), Busy(1, 3), Busy(5, 6)]) == [Busy(0, 3), Busy(5, 6)]
    found = attribute([run("a", 0.0, 10.0)], [Busy(0.0, 4.0, 0.25), Busy(4.0, 10.0, 0.5)])
    assert found.by_task["a"].gpu_seconds == pytest.approx(1.0 + 3.0)


def test_copies_go_to_the_task_running_when_they_began_by_direction() -> None:
    tasks = [run("a", 0.0, 1.0), run("b", 1.0, 2.0)]
    copies = [Copy(0.5, 100, "htod"), Copy(1.5, 40, "dtoh"), Copy(3.0, 7, "htod")]
    found = attribute(tasks, [], copies)
    assert (found.by_task["a"].htod, found.by_task["a"].dtoh) == (100, 0)
    assert (found.by_task["b"].htod, found.by_task["b"].dtoh) == (0, 40)
    assert found.unclaimed.htod == 7


def _attributed_by_search(
    tasks: list[TaskRun], busy: list[Busy], copies: list[Copy]
) -> dict[str, tuple[float, int, int]]:
    """The rule of the module's docstring, the slow way: every moment between two edges asks
    which tasks ran at its middle."""
    out = {t.key: [0.0, 0, 0] for t in tasks} | {"": [0.0, 0, 0]}
    edges = sorted({t.start for t in tasks} | {t.stop for t in tasks})

    def running(moment: float) -> list[str]:
        return [t.key for t in tasks if t.start <= moment < t.stop]

    for b in union(b for b in busy if b.level >= 1) + [b for b in busy if b.level < 1]:
        points = [b.start, *(e for e in edges if b.start < e < b.end), b.end]
        for lo, hi in itertools.pairwise(points):
            keys = running((lo + hi) / 2) or [""]
            for key in keys:
                out[key][0] += (hi - lo) * b.level / len(keys)
    for c in copies:
        keys = running(c.start) or [""]
        for key in keys:
            out[key][1 if c.direction == "htod" else 2] += c.nbytes // len(keys)
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(1, 15)), max_size=8),
    st.lists(
        st.tuples(st.integers(0, 60), st.integers(0, 10), st.sampled_from([1.0, 0.5, 0.25])),
        max_size=30,
    ),
    st.lists(st.tuples(st.integers(0, 60), st.sampled_from(["htod", "dtoh"])), max_size=6),
)
def test_the_sweep_gives_what_asking_each_moment_gives(
    spans: list[tuple[int, int]],
    kernels: list[tuple[int, int, float]],
    moved: list[tuple[int, str]],
) -> None:
    # seconds on the wall clock, as the worker has them, in whole quarters: edges that meet
    # exactly, as a worker's back-to-back tasks do
    now = 1.8e9
    tasks = [run(f"t{i}", now + a / 4, now + (a + n) / 4) for i, (a, n) in enumerate(spans)]
    busy = [Busy(now + a / 4, now + (a + n) / 4, level) for a, n, level in kernels]
    copies = [Copy(now + a / 4, 1000, d) for a, d in moved]  # type: ignore[arg-type]
    found = attribute(tasks, busy, copies)
    expected = _attributed_by_search(tasks, busy, copies)
    for key, usage in [*found.by_task.items(), ("", found.unclaimed)]:
        seconds, htod, dtoh = expected[key]
        assert usage.gpu_seconds == pytest.approx(seconds, abs=1e-9), key
        assert (usage.htod, usage.dtoh) == (htod, dtoh), key


def test_a_second_of_many_short_kernels_on_the_wall_clock_sums_to_the_microsecond() -> None:
    # a pipeline of small cuDF kernels: 20,000 of 10 µs in a task of one second, at today's
    # wall-clock seconds, where a running sum of the times themselves loses milliseconds
    start = time.time()
    kernels = [Busy(start + i * 50e-6, start + i * 50e-6 + 10e-6) for i in range(20_000)]
    found = attribute([run("a", start, start + 1.0), run("b", start + 1.0, start + 2.0)], kernels)
    # the kernels' own durations, as these floats hold them (about 0.2 s)
    assert found.by_task["a"].gpu_seconds == pytest.approx(
        math.fsum(b.end - b.start for b in kernels), abs=1e-6
    )
    assert found.by_task["b"].gpu_seconds == 0.0
    assert found.unclaimed.gpu_seconds == pytest.approx(0.0, abs=1e-6)


def test_a_workers_event_counts_in_one_stretch_only_where_its_last_task_ended() -> None:
    def event(first: float, last: float, prefix: str) -> tuple[float, dict[str, Any]]:
        row = ["span", prefix, 1, last - first, 0.5, 0, 0, None, False]
        return last, {"kind": "usage", "first": first, "last": last, "rows": [row]}

    events = [event(9.5, 10.4, "a"), event(10.6, 11.4, "b")]
    # two cells back to back, the first from 9 to 10.5: the batch straddling nothing counts once
    first = readings.per_prefix(events, 9.0, 10.5)
    second = readings.per_prefix(events, 10.5, 12.0)
    assert [p.prefix for p in first] == ["a"] and [p.prefix for p in second] == ["b"]


# -- the sources, reading their libraries ------------------------------------------------------


def test_cupti_records_come_back_on_the_wall_clock_with_their_copies() -> None:
    gpu = StandInGpu()
    source = CuptiSource(gpu.cupti())
    t0 = time.time()
    gpu.kernel(0.2)
    gpu.copy(64 * MiB, "htod")
    gpu.copy(8 * MiB, "dtoh")
    reading = source.read()
    seconds = sum(b.end - b.start for b in union(reading.busy))
    assert seconds == pytest.approx(0.2, abs=0.02)
    assert all(t0 - 0.01 <= b.start <= time.time() for b in reading.busy)  # offset taken out
    assert sorted((c.direction, c.nbytes) for c in reading.copies) == [
        ("dtoh", 8 * MiB),
        ("htod", 64 * MiB),
    ]
    assert reading.covered >= t0 + 0.2
    assert source.read().busy == []  # each record once
    source.close()


def test_nvml_samples_become_busy_levels_over_their_periods() -> None:
    gpu = StandInGpu()
    source = NvmlSource(gpu.nvml_sampler(pid=4242), pid=4242)
    busy: list[Busy] = []
    start = time.time()
    for duty in (1.0, 0.5, 0.0, 1.0):  # a period fully busy, then half, idle, busy again
        gpu.kernel(0.3, duty=duty)
        busy += source.read().busy
    stop = time.time()
    wait_until(lambda: source.read().covered >= stop or None, 5, "the samples of the work")
    busy += source.read().busy
    assert source.resolution == pytest.approx(stand_in_gpu.PERIOD, rel=0.2)  # learnt
    found = attribute([run("a", start, stop)], busy)
    assert found.by_task["a"].gpu_seconds == pytest.approx(0.3 + 0.15 + 0.3, rel=0.25)
    assert all(0 < b.level <= 1 for b in busy)
    source.close()
    other = NvmlSource(gpu.nvml_sampler(pid=1), pid=4242)
    assert other.read().busy == []  # another pid's
    other.close()


def test_nvml_read_once_after_the_work_still_places_it_within_a_period() -> None:
    # NVML gives one sample per call, averaged since the last one seen: a worker that read it
    # once a second would spread a busy half-second over the whole second
    gpu = StandInGpu()
    source = NvmlSource(gpu.nvml_sampler(pid=4242), pid=4242)
    start = time.time()
    gpu.kernel(0.6)
    middle = time.time()
    gpu.kernel(0.6, duty=0.0)
    stop = time.time()
    busy: list[Busy] = []

    def read() -> bool | None:  # the first read since the work began, and any until covered
        reading = source.read()
        busy.extend(reading.busy)
        return reading.covered >= stop or None

    wait_until(read, 5, "the samples of the work")
    source.close()
    found = attribute([run("busy", start, middle), run("idle", middle, stop)], busy)
    assert found.by_task["busy"].gpu_seconds == pytest.approx(0.6, rel=0.25)
    assert found.by_task["idle"].gpu_seconds == pytest.approx(0.0, abs=0.6 * 0.25)


def test_memory_peaks_are_above_the_windows_start_and_a_replaced_resource_is_unknown() -> None:
    gpu = StandInGpu()
    peaks = Peaks(gpu.rmm)
    gpu.allocate(500 * MiB)  # before: not the task's
    peaks.begin()
    gpu.allocate(300 * MiB)
    gpu.free(300 * MiB)
    gpu.allocate(100 * MiB)
    assert peaks.end() == 300 * MiB
    peaks.begin()
    gpu.rmm.current_resource = type(gpu.rmm.current_resource)(
        gpu.rmm.current_resource
    )  # made current over it
    gpu.allocate(50 * MiB)
    assert peaks.end() is None
    peaks.begin()
    gpu.allocate(20 * MiB)
    assert peaks.end() == 20 * MiB  # a new window over the new top


# -- the worker plugin on a real cluster -------------------------------------------------------


def _idle_task(seconds: float) -> None:
    time.sleep(seconds)


@pytest.fixture
def measured_cluster(request: pytest.FixtureRequest) -> Any:
    import cloudpickle

    cloudpickle.register_pickle_by_value(stand_in_gpu)
    with cpu_cluster_client() as client:
        plugin = worker_plugin.GpuTimePlugin(
            interval=0.2, make_source=stand_in_gpu.worker_source(request.param)
        )
        client.register_plugin(plugin, name=worker_plugin.NAME)
        yield client


def _metric(client: Any, prefix: str, activity: str, unit: str) -> float:
    def read(dask_scheduler: Any) -> float:
        return float(
            dask_scheduler.cumulative_worker_metrics.get(("execute", prefix, activity, unit), 0)
        )

    return client.run_on_scheduler(read)


def _unsent(dask_worker: Any) -> bool:
    """Whether the worker holds GPU metrics its next heartbeat has to send."""
    return any(
        isinstance(k, tuple) and k[-1] in ("gpu-seconds", "bytes")
        for k in dask_worker.digests_total_since_heartbeat
    )


SEND = "import pickle, sys\nobj = pickle.loads(sys.stdin.buffer.read())\nprint(type(obj).__name__)"


def test_what_the_kernel_sends_its_cluster_travels_by_value() -> None:
    """The plugin, its flush and the scheduler's reading load where the package cannot be
    imported (a worker or scheduler elsewhere), as distributed pickles them: registering the
    package alone sent the plugin by reference."""
    import subprocess
    import sys

    from distributed.protocol.pickle import dumps

    from gpudask_jupyter.gpu_time import kernel

    kernel.ship_by_value()
    blocked = "import sys\nsys.modules['gpudask_jupyter'] = None\n"  # the import fails there
    for sent, name in (
        (worker_plugin.GpuTimePlugin("nvml"), "GpuTimePlugin"),
        (worker_plugin.flush, "function"),
        (readings.events_since, "function"),
    ):
        loaded = subprocess.run(
            [sys.executable, "-c", blocked + SEND],
            input=dumps(sent),
            capture_output=True,
            check=False,
        )
        assert (loaded.returncode, loaded.stdout.decode().strip()) == (0, name), loaded.stderr


@pytest.mark.parametrize("measured_cluster", ["cupti", "nvml"], indirect=True)
def test_each_prefixs_gpu_seconds_and_bytes_reach_the_metrics_and_the_events(
    measured_cluster: Any, request: pytest.FixtureRequest
) -> None:
    client = measured_cluster
    cupti = "cupti" in request.node.callspec.id
    busy = [
        client.submit(stand_in_gpu.busy, 0.4, 32 * MiB, key=f"busy-{i}", pure=False)
        for i in range(4)
    ]
    idle = [client.submit(_idle_task, 0.3, key=f"idle-{i}", pure=False) for i in range(2)]
    client.gather(busy + idle)
    client.run(worker_plugin.flush)
    # 4 tasks of 0.4 s of GPU on two workers of one thread: 1.6 GPU seconds, 128 MiB
    tolerance = 0.1 if cupti else 0.25
    wait_until(lambda: not any(client.run(_unsent).values()), 30, "the workers' heartbeats")
    gpu = _metric(client, "busy", "gpu", "gpu-seconds")
    assert gpu == pytest.approx(1.6, rel=tolerance)
    # a sample's busy time is spread over its period: some spills into the next task
    spill = 0.01 if cupti else 2 * stand_in_gpu.PERIOD
    assert _metric(client, "idle", "gpu", "gpu-seconds") == pytest.approx(0.0, abs=spill)
    if cupti:
        assert _metric(client, "busy", "host-to-device", "bytes") == 128 * MiB
    events = client.run_on_scheduler(readings.events_since, since=0.0)
    rows = {p.prefix: p for p in readings.per_prefix(events)}
    assert rows["busy"].tasks == 4 and rows["idle"].tasks == 2
    assert rows["busy"].gpu == pytest.approx(1.6, rel=tolerance)
    assert rows["busy"].busy == pytest.approx(1.0, rel=tolerance)  # busy the whole task long
    assert rows["idle"].gpu == pytest.approx(0.0, abs=spill)
    assert rows["busy"].peak == 32 * MiB  # each task's own allocation above its start
    assert rows["busy"].htod == (128 * MiB if cupti else 0)
    assert not rows["busy"].shared
    said = readings.sources_of(events).summary()
    assert ("stand-in CUPTI" if cupti else "NVML samples") in said or "CUPTI" in said, said


@pytest.mark.parametrize("measured_cluster", ["cupti"], indirect=True)
def test_a_worker_of_two_threads_splits_shared_moments_and_says_shared(
    measured_cluster: Any,
) -> None:
    client = measured_cluster
    client.cluster.scale(0)
    wait_until(lambda: not client.scheduler_info()["workers"], 30, "the workers gone")
    client.cluster.worker_spec.clear()
    client.cluster.new_spec["options"]["nthreads"] = 2
    client.cluster.scale(1)
    client.wait_for_workers(1)
    futures = [client.submit(stand_in_gpu.busy, 0.5, key=f"both-{i}", pure=False) for i in range(2)]
    client.gather(futures)
    client.run(worker_plugin.flush)

    def both_counted() -> Any:  # the worker's events reach the scheduler in its next batch
        events = client.run_on_scheduler(readings.events_since, since=0.0)
        row = {p.prefix: p for p in readings.per_prefix(events)}.get("both")
        return row if row is not None and row.tasks == 2 else None

    both = wait_until(both_counted, 30, "the two tasks' figures on the scheduler")
    assert both.shared
    # two kernels at once are one busy GPU: 0.5 s shared by the two tasks, not 1 s
    assert both.gpu == pytest.approx(0.5, rel=0.2)


@pytest.mark.parametrize("measured_cluster", ["cupti"], indirect=True)
def test_a_long_tasks_first_copy_is_kept_until_the_task_ends(measured_cluster: Any) -> None:
    """A task that copies first, then keeps the GPU busy longer than the readings are kept:
    the copy, read while the task still runs, is still there when the task ends (a pruning
    that looked only at ended tasks dropped it, and a 1 GiB prefix showed 768 MiB)."""
    client = measured_cluster
    client.submit(stand_in_gpu.busy, 1.6, 64 * MiB, key="long-0", pure=False).result()
    client.run(worker_plugin.flush)

    def counted() -> Any:
        events = client.run_on_scheduler(readings.events_since, since=0.0)
        row = {p.prefix: p for p in readings.per_prefix(events)}.get("long")
        return row if row is not None and row.tasks == 1 else None

    row = wait_until(counted, 30, "the task's figures on the scheduler")
    assert row.htod == 64 * MiB
    assert row.gpu == pytest.approx(1.6, rel=0.1)


# -- %gpu_cluster profile ------------------------------------------------------------------------


@pytest.fixture
def measured_shell(shell: Any) -> Any:
    """A shell whose kernel and cluster measure a stand-in GPU each."""
    import cloudpickle

    from gpudask_jupyter.magics.extension import Extension

    cloudpickle.register_pickle_by_value(stand_in_gpu)
    gpu = StandInGpu()
    loaded = Extension.of(shell)
    assert loaded is not None
    loaded.cells.install(shell, lambda: Choice(CuptiSource(gpu.cupti()), "stand-in CUPTI", gpu.rmm))
    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'false'")
    client = shell.run_line_magic(
        "gpu_cluster", "start --n-workers 2 --threads-per-worker 1 --memory-limit 1GB"
    )
    client.unregister_worker_plugin(worker_plugin.NAME)
    plugin = worker_plugin.GpuTimePlugin(
        interval=0.2, make_source=stand_in_gpu.worker_source("cupti")
    )
    client.register_plugin(plugin, name=worker_plugin.NAME)
    shell.user_ns.update(kernel_gpu=gpu, stand_in_gpu=stand_in_gpu, MiB=MiB)
    return shell


def test_profile_gives_the_last_cells_prefixes_and_the_kernels_own_work(
    measured_shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from distributed import default_client

    shell = measured_shell
    shell.run_cell("print('an earlier cell')", store_history=True)
    cell = (
        "futures = [client.submit(stand_in_gpu.busy, 0.4, 32 * MiB, key=f'busy-{i}', pure=False)"
        " for i in range(4)]\n"
        "client.gather(futures)\n"
        "kernel_gpu.allocate(10 * MiB)\n"
        "kernel_gpu.kernel(0.3)\n"
        "kernel_gpu.free(10 * MiB)\n"
    )
    shell.user_ns["client"] = default_client()
    result = shell.run_cell(cell, store_history=True)
    assert result.success, result.error_in_exec
    number = shell.execution_count - 1
    capsys.readouterr()
    frame = shell.run_line_magic("gpu_cluster", "profile")
    out = capsys.readouterr().out
    assert f"GPU time in cell [{number}]" in out, out
    assert "kernel: stand-in CUPTI" in out and "workers: CUPTI" in out, out
    rows = frame.set_index("prefix")
    assert list(rows.index) == ["kernel", "busy"], frame
    assert rows.loc["kernel", "GPU s"] == pytest.approx(0.3, rel=0.1)
    assert rows.loc["kernel", "peak MiB"] == pytest.approx(10.0)
    assert rows.loc["busy", "tasks"] == 4
    assert rows.loc["busy", "GPU s"] == pytest.approx(1.6, rel=0.1)
    assert rows.loc["busy", "GPU busy %"] == pytest.approx(100, rel=0.1)
    assert rows.loc["busy", "to GPU MiB"] == pytest.approx(128.0)
    assert rows.loc["busy", "peak MiB"] == pytest.approx(32.0)
    # the earlier cell, by number: no task of the cluster, no GPU time of the kernel
    earlier = shell.run_line_magic("gpu_cluster", f"profile --cell {number - 1}")
    assert list(earlier["prefix"]) == ["kernel"], earlier
    assert earlier["GPU s"].iloc[0] == pytest.approx(0.0, abs=0.01)


def test_profile_refuses_what_it_cannot_answer(shell: Any) -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="no cell 999 has run"):
        shell.run_line_magic("gpu_cluster", "profile --cell 999")
    with pytest.raises(UsageError, match="give one of them"):
        shell.run_line_magic("gpu_cluster", "profile --cell 1 --seconds 5")
    with pytest.raises(UsageError, match="--seconds"):
        shell.run_line_magic("gpu_cluster", "profile --seconds soon")


# -- the views' frames ---------------------------------------------------------------------------


@pytest.mark.parametrize("measured_cluster", ["cupti"], indirect=True)
def test_the_views_frame_has_each_prefixs_gpu_time_in_its_stream_colour(
    measured_cluster: Any,
) -> None:
    import json

    from gpudask_jupyter.monitor import Monitor, Source, scheduler_probe
    from gpudask_jupyter.monitor.callers import ClientCaller

    client = measured_cluster
    source = Source(
        token=client,
        caller=lambda: ClientCaller(client),
        mode="cpu",
        address=client.scheduler.address,
    )
    monitor = Monitor(lambda: {"c": source})
    client.run_on_scheduler(scheduler_probe.record_tasks)  # as a start does
    client.gather(
        [client.submit(stand_in_gpu.busy, 0.3, MiB, key=f"busy-{i}", pure=False) for i in range(4)]
        + [client.submit(_idle_task, 0.2, key=f"idle-{i}", pure=False) for i in range(2)]
    )
    client.run(worker_plugin.flush)

    def frame() -> Any:
        monitor.tick()
        found, _ = monitor.frame("c")
        rows = {r["prefix"]: r for r in found["gpu_time"]["rows"]}
        done = rows.get("busy", {}).get("tasks") == 4 and rows.get("idle", {}).get("tasks") == 2
        return (found, rows) if done else None

    found, rows = wait_until(frame, 30, "the GPU time of both prefixes in a frame", step=0.2)
    json.dumps(found)  # plain JSON
    assert list(rows) == ["busy", "idle"]  # most GPU time first
    assert rows["busy"]["gpu"] == pytest.approx(1.2, rel=0.1)
    assert rows["busy"]["htod"] == 4 * MiB and rows["busy"]["peak"] == MiB
    assert rows["idle"]["gpu"] == pytest.approx(0.0, abs=0.01)
    colors = {t["prefix"]: t["color"] for t in found["tasks"] if t["action"] == "compute"}
    assert rows["busy"]["color"] == colors["busy"] != rows["idle"]["color"] == colors["idle"]
    assert "CUPTI" in found["gpu_time"]["source"]


def test_the_panels_text_says_the_gpu_time_per_prefix_and_nothing_without_a_gpu() -> None:
    from gpudask_jupyter.schema.frame import GpuTime, GpuTimeRow
    from gpudask_jupyter.widget.snapshot import _gpu_time_lines

    row = GpuTimeRow(
        prefix="spin", color="#000000", tasks=4, wall=4.0, gpu=3.0, peak=32 * MiB,
        htod=128 * MiB, dtoh=0, shared=False,
    )  # fmt: skip
    measured = GpuTime(rows=[row], source="CUPTI (1 µs resolution): 1 worker(s)", measuring=1)
    lines = _gpu_time_lines({"gpu_time": measured})  # type: ignore[typeddict-item]
    assert lines == [
        "GPU time by task prefix (CUPTI (1 µs resolution): 1 worker(s)):",
        "  spin: 75% busy, 3 s GPU of 4 s, 4 task(s), peak 32 MiB, 128 MiB to GPU, 0 B back",
    ]
    unmeasured = GpuTime(rows=[], source="GPU time is not measured: no GPU", measuring=0)
    assert _gpu_time_lines({"gpu_time": unmeasured}) == []  # type: ignore[typeddict-item]
    assert _gpu_time_lines({"gpu_time": None}) == []  # type: ignore[typeddict-item]


def test_a_worker_without_a_gpu_says_why_once_and_records_nothing() -> None:
    """On this machine (no NVML, no CUPTI) each worker announces why it does not measure, and
    sends no usage: the views then show no GPU time section, and profile says why."""
    from gpudask_jupyter.machine import nvml

    if nvml.status().available:
        pytest.skip("this test is of a machine without a GPU")
    with cpu_cluster_client() as client:
        client.register_plugin(worker_plugin.GpuTimePlugin(interval=0.2), name=worker_plugin.NAME)
        client.gather(
            [client.submit(_idle_task, 0.1, key=f"idle-{i}", pure=False) for i in range(4)]
        )
        client.run(worker_plugin.flush)
        events = client.run_on_scheduler(readings.events_since)
        kinds = [msg["kind"] for _, msg in events]
        assert kinds == ["source", "source"], events
        sources = readings.sources_of(events)
        assert sources.measuring == 0
        assert sources.summary().startswith("GPU time is not measured: "), sources.summary()
        assert readings.per_prefix(events) == []
