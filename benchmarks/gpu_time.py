"""GPU time per task prefix against the truth, and what measuring costs.

Truth: one dask-cuda worker runs tasks whose GPU time and bytes are known by construction: a
kernel that spins on the GPU's global timer for a set time (``spin``: 1 s each), copies of set
sizes host→device and back (``copy``: 256 MiB each way), and tasks that only sleep (``idle``).
The GPU-time plugin attributes GPU seconds and bytes to each prefix from each source present
(NVML's per-process samples; CUPTI where ``cupti-python`` is installed); the table prints them
against the truth, as ratios.

Cost: notebook 04's pipeline (filter, new column, groupby with a shuffle, top 10) on a persisted
cuDF frame, run without the plugin and with it (each source), alternating; the ratio of medians.
Each case is timed on its second run after the plugin is registered, as a cluster that keeps its
plugin runs. With CUPTI, a third case traces as CUPTI does but drops the records before the
join: the difference between the two is what the plugin's own work with the records costs.
Where cuDF is not installed, a CuPy array pipeline of the same steps stands in, and says so.

Each case is repeated ``--runs`` times (default 5): median and min–max.

    python benchmarks/gpu_time.py [--runs 5] [--rows 50_000_000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

SPIN = r"""
extern "C" __global__ void spin(unsigned long long ns){
  unsigned long long s, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(s));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - s < ns);
}"""
SPIN_SECONDS = 1.0
COPY_BYTES = 256 * 2**20
TASKS = 4


def spin(seconds: float, i: int) -> int:
    import cupy

    kernel = cupy.RawKernel(SPIN, "spin")
    kernel((1,), (1,), (cupy.uint64(int(seconds * 1e9)),))
    cupy.cuda.runtime.deviceSynchronize()
    return i


def copy(nbytes: int, i: int) -> int:
    import cupy
    import numpy

    host = numpy.ones(nbytes, dtype="u1")
    back = cupy.asnumpy(cupy.asarray(host))
    return int(back[0]) + i


def idle(seconds: float, i: int) -> int:
    time.sleep(seconds)
    return i


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3g} ({min(values):.3g}–{max(values):.3g})"


def truth_runs(client: Any, source: str, runs: int) -> dict[str, list[tuple[float, float]]]:
    """Per prefix: (GPU seconds attributed, bytes attributed) of each run."""
    from gpudask_jupyter.gpu_time import readings, worker_plugin

    _without_plugin(client)
    client.register_plugin(worker_plugin.GpuTimePlugin(source), name=worker_plugin.NAME)
    found: dict[str, list[tuple[float, float]]] = {}
    for run in range(runs):
        start = time.time()
        futures = [
            client.submit(spin, SPIN_SECONDS, i, key=f"spin-{run}-{i}") for i in range(TASKS)
        ]
        futures += [client.submit(copy, COPY_BYTES, i, key=f"copy-{run}-{i}") for i in range(TASKS)]
        futures += [client.submit(idle, 1.0, i, key=f"idle-{run}-{i}") for i in range(2)]
        client.gather(futures)
        client.run(worker_plugin.flush)
        deadline = time.time() + 10
        while True:
            events = client.run_on_scheduler(readings.events_since, since=start)
            rows = {p.prefix: p for p in readings.per_prefix(events, start=start)}
            if sum(p.tasks for p in rows.values()) >= 2 * TASKS + 2 or time.time() > deadline:
                break
            time.sleep(0.2)
        for prefix, p in rows.items():
            found.setdefault(prefix, []).append((p.gpu, p.htod + p.dtoh))
        said = readings.sources_of(client.run_on_scheduler(readings.events_since)).summary()
    print(f"  {source}: {said}")
    return found


def _without_plugin(client: Any) -> None:
    """The plugin off the workers, where it is on (asking for one that is not there logs an
    error in the scheduler)."""
    from gpudask_jupyter.gpu_time import worker_plugin

    def registered(dask_scheduler: Any) -> bool:
        return worker_plugin.NAME in dask_scheduler.worker_plugins

    if client.run_on_scheduler(registered):
        client.unregister_worker_plugin(worker_plugin.NAME)


def _records_dropped(worker: Any) -> Any:
    """CUPTI tracing every kernel and copy and cupti-python handing each record to Python, and
    nothing more: the records are counted and dropped before the join, which tells CUPTI's own
    cost from what the plugin does with its records."""
    from cupti import cupti  # type: ignore[import-not-found]

    from gpudask_jupyter.gpu_time.sources import Choice, CuptiSource, Reading

    class Dropped(CuptiSource):
        count = 0

        def read(self) -> Reading:
            self._cupti.activity_flush_all(0)
            with self._lock:
                self.count += len(self._records)
                self._records = []
            return Reading(covered=time.time())

    return Choice(Dropped(cupti), "CUPTI, records dropped before the join")


def _records_seen(dask_worker: Any) -> int:
    """The records the dropping source counted since it was last asked."""
    from gpudask_jupyter.gpu_time import worker_plugin

    source = dask_worker.plugins[worker_plugin.NAME].source
    seen, source.count = source.count, 0
    return int(seen)


def pipeline_seconds(client: Any, events: Any) -> float:
    df = events
    start = time.perf_counter()
    positive = df[df.y > 0]
    positive = positive.assign(z=positive.x * positive.y)
    per_key = positive.groupby("key").agg({"z": "sum", "x": "mean"}, split_out=4)
    per_key.nlargest(10, "z").compute()
    return time.perf_counter() - start


def _events(rows: int) -> Any:
    """Notebook 04's frame: 32 partitions of keys, values and noise, on the GPU (cuDF)."""
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    def make_partition(i: int, rows: int) -> pd.DataFrame:
        rng = np.random.default_rng(i)
        return pd.DataFrame(
            {
                "key": rng.integers(0, 1_000, rows),
                "x": rng.random(rows),
                "y": rng.normal(size=rows),
            }
        )

    return dd.from_map(make_partition, range(32), rows=rows // 32).to_backend("cudf")


def _array(rows: int) -> Any:
    """The same number of values as a CuPy-backed Dask array of 32 chunks."""
    import cupy
    import dask.array as da

    return da.random.random(rows, chunks=rows // 32).map_blocks(cupy.asarray)


def array_pipeline_seconds(client: Any, values: Any) -> float:
    """Filter, a new column's arithmetic, a sort-based reduction, top 10: the pipeline's steps
    on an array."""
    import dask.array as da

    start = time.perf_counter()
    positive = values[values > 0.5]
    scaled = positive * values.mean()
    da.topk(scaled, 10).compute()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows", type=int, default=50_000_000)
    args = parser.parse_args()

    import importlib.util

    from dask_cuda import LocalCUDACluster
    from distributed import Client, wait

    from gpudask_jupyter.gpu_time import worker_plugin

    sources = ["nvml"] + (["cupti"] if importlib.util.find_spec("cupti") else [])
    with (
        LocalCUDACluster(n_workers=1, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        import cloudpickle

        import gpudask_jupyter.gpu_time as package

        cloudpickle.register_pickle_by_value(package)
        print(f"GPU time against the truth: {TASKS} tasks per prefix, {args.runs} runs")
        truth = {
            "spin": (TASKS * SPIN_SECONDS, 0),
            "copy": (None, TASKS * 2 * COPY_BYTES),
            "idle": (0.0, 0),
        }
        print(
            "| source | prefix | GPU s (truth) | GPU s attributed | ratio | bytes (truth) "
            "| bytes attributed |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for source in sources:
            found = truth_runs(client, source, args.runs)
            for prefix, (seconds, nbytes) in truth.items():
                got = found.get(prefix, [(0.0, 0)])
                gpu = [g for g, _ in got]
                moved = [b / 2**20 for _, b in got]
                ratio = _spread([g / seconds for g in gpu]) if seconds else "–"
                print(
                    f"| {source} | {prefix} | {seconds if seconds is not None else '–'} | "
                    f"{_spread(gpu)} | {ratio} | {nbytes / 2**20:.0f} MiB | {_spread(moved)} MiB |"
                )

        if importlib.util.find_spec("cudf") is not None:
            run_pipeline, what = pipeline_seconds, "notebook 04's pipeline"
            data = _events(args.rows)
        else:  # a machine without cuDF: a CuPy array pipeline of the same shape of work
            run_pipeline, what = array_pipeline_seconds, "a CuPy array pipeline (no cuDF here)"
            data = _array(args.rows)
        events = data.persist()
        wait(events)
        run_pipeline(client, events)  # warm
        dropped = "cupti, records dropped"
        cases = ["off", *sources, *([dropped] if "cupti" in sources else [])]
        times: dict[str, list[float]] = {c: [] for c in cases}
        records: list[float] = []
        for _ in range(args.runs):
            for case in cases:
                _without_plugin(client)
                if case == dropped:
                    plugin = worker_plugin.GpuTimePlugin("cupti", make_source=_records_dropped)
                elif case != "off":
                    plugin = worker_plugin.GpuTimePlugin(case)
                if case != "off":
                    client.register_plugin(plugin, name=worker_plugin.NAME)
                # the plugin stays on a cluster for its whole life: what it costs is what a run
                # costs once it is there, after CUPTI's first launches of each kernel
                run_pipeline(client, events)
                if case == dropped:
                    client.run(worker_plugin.flush)
                    client.run(_records_seen)
                times[case].append(run_pipeline(client, events))
                if case == dropped:
                    client.run(worker_plugin.flush)
                    records.append(sum(client.run(_records_seen).values()))
        print(f"\n{what}, {args.rows:,} rows, 32 partitions, {args.runs} runs each")
        if records:
            print(f"CUPTI records (kernels and copies) per run: {_spread(records)}")
        print("| plugin | seconds | against no plugin |")
        print("| --- | --- | --- |")
        base = statistics.median(times["off"])
        for case in cases:
            ratio = statistics.median(times[case]) / base
            print(f"| {case} | {_spread(times[case])} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
