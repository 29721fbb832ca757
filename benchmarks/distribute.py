"""A table bigger than one GPU: ``to_gpu(distribute=True)`` / ``to_cpu(gather=True)`` against
today's ways of putting a pandas frame or NumPy array on every worker of a cluster, and back.

One table, every anchor measured in the same run on the same bytes (a frame of eight float64
columns, and an array of the same size; with ``--strings``, also a table of the same size as
people load them: about 40% of its bytes in a string column with 1% nulls, a categorical, four
float64 and one int64 column):

  to the cluster (persisted, waited for)
    dd.from_pandas(df, npartitions=N).to_backend("cudf").persist()
    client.scatter of pandas parts, then cudf.from_pandas on the workers
    da.from_array(arr, chunks).map_blocks(cupy.asarray).persist()
    for scale: cudf.from_pandas(df) onto one GPU in the kernel; to_gpu(df) / to_gpu(arr) (pinned)
    ours: to_gpu(df, distribute=True), to_gpu(arr, distribute=True), to_gpu(table, ...)
  back
    .compute() of the dask-cuDF collection, then .to_pandas()   (.compute() for the array)
    ours: to_cpu(collection, gather=True)

Each case runs ``--runs`` times (5): median, spread (min–max), GB/s at the median and the ratio of
the anchor's median to ours. Then, on GPUs, one failed attempt (a worker's GPU nearly full) and
the memory left on each GPU before and after it.

    python benchmarks/distribute.py [--gib 8] [--runs 5] [--strings] [--no-array]
                                                              # every GPU, one worker each
    python benchmarks/distribute.py --cpu --gib 0.25          # a CPU cluster of 2 workers

With ``--cpu`` the partitions are pandas / NumPy and the anchors ``dd.from_pandas(...).persist()``,
``client.scatter`` and ``da.from_array(...).persist()``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any


def _timed(run: Callable[[], Any], runs: int, release: Callable[[], None]) -> list[float]:
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - t0)
        del result
        release()
    return times


def _persisted(client: Any, collection: Any) -> Any:
    from distributed import futures_of, wait

    done = client.persist(collection)
    wait(futures_of(done))
    return done


def _scattered(client: Any, df: Any, n: int, gpu: bool) -> Any:
    from distributed import wait

    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    step = -(-len(df) // n)
    futures = [
        client.scatter(df.iloc[i * step : (i + 1) * step], workers=[workers[i % len(workers)]])
        for i in range(n)
    ]
    if gpu:
        import cudf

        futures = client.map(cudf.from_pandas, futures, pure=False)
    wait(futures)
    return futures


def cases(
    client: Any, df: Any, arr: Any, n: int, gpu: bool, strings: Any = None
) -> dict[str, Callable[[], Any]]:
    """What each row of the table runs, by name (anchors first, ours last per group); ``arr``
    None leaves the array's cases out, ``strings`` (a table with strings) adds its own."""
    import dask.array as da
    import dask.dataframe as dd

    from gpudask_jupyter import to_gpu

    no_array = arr is None
    if no_array:
        arr = df.to_numpy()[:8]  # its cases are left out below
    chunks = (-(-arr.shape[0] // n), arr.shape[1])
    found: dict[str, Callable[[], Any]] = {}
    if gpu:
        import cudf
        import cupy

        found["dd.from_pandas().to_backend('cudf').persist()"] = lambda: _persisted(
            client, dd.from_pandas(df, npartitions=n).to_backend("cudf")
        )
        found["scatter + cudf.from_pandas on workers"] = lambda: _scattered(client, df, n, True)
        found["da.from_array().map_blocks(cupy.asarray).persist()"] = lambda: _persisted(
            client, da.from_array(arr, chunks=chunks).map_blocks(cupy.asarray)
        )
        found["one GPU: cudf.from_pandas(df)"] = lambda: cudf.from_pandas(df)
        found["one GPU: to_gpu(df)"] = lambda: to_gpu(df)
        found["one GPU: to_gpu(arr)"] = lambda: to_gpu(arr)
    else:
        found["dd.from_pandas().persist()"] = lambda: _persisted(
            client, dd.from_pandas(df, npartitions=n)
        )
        found["scatter of pandas parts"] = lambda: _scattered(client, df, n, False)
        found["da.from_array().persist()"] = lambda: _persisted(
            client, da.from_array(arr, chunks=chunks)
        )
    found["ours: to_gpu(df, distribute=True)"] = lambda: to_gpu(df, distribute=True)
    if strings is not None:
        backend = dd.from_pandas(strings, npartitions=n)
        name = "table: dd.from_pandas()" + (".to_backend('cudf')" if gpu else "") + ".persist()"
        found[name] = lambda: _persisted(client, backend.to_backend("cudf") if gpu else backend)
        if gpu:
            found["table, one GPU: to_gpu(table)"] = lambda: to_gpu(strings)
        found["ours: to_gpu(table, distribute=True)"] = lambda: to_gpu(strings, distribute=True)
    if no_array:
        return {k: v for k, v in found.items() if "arr" not in k and "from_array" not in k}
    found["ours: to_gpu(arr, distribute=True)"] = lambda: to_gpu(arr, distribute=True)
    return found


def gather_cases(
    client: Any, df: Any, arr: Any, gpu: bool, strings: Any = None
) -> dict[str, Callable[[], Any]]:
    from gpudask_jupyter import to_cpu, to_gpu

    frame = to_gpu(df, distribute=True)
    array = to_gpu(arr if arr is not None else df.to_numpy()[:8], distribute=True)
    if gpu:
        found = {
            "frame: .compute().to_pandas()": lambda: frame.compute().to_pandas(),
            "array: .compute().get()": lambda: array.compute().get(),
        }
    else:
        found = {
            "frame: .compute()": lambda: frame.compute(),
            "array: .compute()": lambda: array.compute(),
        }
    found["ours: frame to_cpu(gather=True)"] = lambda: to_cpu(frame, gather=True)
    if arr is not None:
        found["ours: array to_cpu(gather=True)"] = lambda: to_cpu(array, gather=True)
    else:
        del found[next(k for k in found if k.startswith("array"))]
    if strings is not None:
        spread = to_gpu(strings, distribute=True)
        computed = (lambda: spread.compute().to_pandas()) if gpu else spread.compute
        found["table: .compute()" + (".to_pandas()" if gpu else "")] = computed
        found["ours: table to_cpu(gather=True)"] = lambda: to_cpu(spread, gather=True)
    return found


RATIOS = {  # ours → the anchors it is compared with
    "ours: to_gpu(df, distribute=True)": [
        "dd.from_pandas().to_backend('cudf').persist()",
        "scatter + cudf.from_pandas on workers",
        "one GPU: to_gpu(df)",
        "dd.from_pandas().persist()",
        "scatter of pandas parts",
    ],
    "ours: to_gpu(arr, distribute=True)": [
        "da.from_array().map_blocks(cupy.asarray).persist()",
        "one GPU: to_gpu(arr)",
        "da.from_array().persist()",
    ],
    "ours: frame to_cpu(gather=True)": ["frame: .compute().to_pandas()", "frame: .compute()"],
    "ours: array to_cpu(gather=True)": ["array: .compute().get()", "array: .compute()"],
    "ours: to_gpu(table, distribute=True)": [
        "table: dd.from_pandas().to_backend('cudf').persist()",
        "table: dd.from_pandas().persist()",
        "table, one GPU: to_gpu(table)",
    ],
    "ours: table to_cpu(gather=True)": ["table: .compute().to_pandas()", "table: .compute()"],
}
#: the rate of the table with strings against the numeric frame's, ours on both (goal ≥ 0.5)
AGAINST_NUMERIC = {
    "ours: to_gpu(table, distribute=True)": "ours: to_gpu(df, distribute=True)",
    "ours: table to_cpu(gather=True)": "ours: frame to_cpu(gather=True)",
}


def table(results: dict[str, list[float]], nbytes: int, table_nbytes: int = 0) -> str:
    """The results as rows; the table with strings is measured in its own bytes, and its rate
    compared with the numeric frame's."""

    def size(name: str) -> int:
        return table_nbytes if "table" in name else nbytes

    lines = [
        "| case | median s | min–max s | GB/s | anchor median / ours median |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, times in results.items():
        median = statistics.median(times)
        ratios = [
            f"{statistics.median(results[a]) / median:.1f}× vs {a}"
            for a in RATIOS.get(name, [])
            if a in results
        ]
        numeric = AGAINST_NUMERIC.get(name)
        if numeric in results:
            rate = size(name) / median
            theirs = size(numeric) / statistics.median(results[numeric])
            ratios.append(f"{rate / theirs:.2f}× the numeric frame's GB/s")
        lines.append(
            f"| {name} | {median:.3f} | {min(times):.3f}–{max(times):.3f} | "
            f"{size(name) / median / 1e9:.2f} | {'; '.join(ratios)} |"
        )
    return "\n".join(lines)


def _free_memory(client: Any) -> dict[str, int]:
    def free() -> int:
        import cupy

        return int(cupy.cuda.runtime.memGetInfo()[0])

    found: dict[str, int] = client.run(free)
    return found


def failed_attempt(client: Any, df: Any) -> None:
    """Fill one worker's GPU, try to distribute, and show what each GPU has free around it."""
    from gpudask_jupyter import to_gpu

    # client.run hands the worker to a function that takes ``dask_worker`` (get_worker() works
    # only inside tasks)
    def hog(leave: int, dask_worker: Any = None) -> int:
        """Take all but ``leave`` bytes of the GPU, in as many allocations as it takes (one
        allocation of everything that is free may leave gigabytes behind)."""
        import cupy

        dask_worker.gpudask_hog = taken = []
        for _ in range(16):
            free = int(cupy.cuda.runtime.memGetInfo()[0])
            if free <= leave + 64 * 2**20:
                break
            try:
                taken.append(cupy.empty(free - leave, dtype="u1"))
            except cupy.cuda.memory.OutOfMemoryError:
                leave += (free - leave) // 2
        return sum(int(block.nbytes) for block in taken)

    def unhog(dask_worker: Any = None) -> None:
        import cupy

        dask_worker.gpudask_hog = None
        cupy.get_default_memory_pool().free_all_blocks()

    before = _free_memory(client)
    victim = sorted(before)[0]
    client.run(hog, 256 * 2**20, workers=[victim])
    during = _free_memory(client)
    try:
        to_gpu(df, distribute=True)
        print("the failed attempt did not fail")
    except Exception as err:
        print(f"failed attempt: {err}")
    after = _free_memory(client)
    client.run(unhog, workers=[victim])
    print(
        "| worker | free before GiB | free with one GPU filled GiB | free after the failure GiB |"
    )
    print("| --- | --- | --- | --- |")
    for worker in sorted(before):
        print(
            f"| {worker} | {before[worker] / 2**30:.2f} | {during[worker] / 2**30:.2f} | "
            f"{after[worker] / 2**30:.2f} |"
        )


def phases(client: Any, run: Callable[[], Any], name: str) -> None:
    """Where the time of one call of ours goes: the tasks each worker ran (from the scheduler's
    task stream) against the wall time of the call."""
    from distributed import get_task_stream
    from distributed.utils import key_split

    with get_task_stream(client) as stream:
        started = time.time()
        result = run()
        total = time.time() - started
    del result
    rows: dict[tuple[str, str], list[float]] = {}
    for task in stream.data:
        prefix = key_split(task["key"])
        for step in task["startstops"]:
            if step["action"] != "compute":
                continue
            row = rows.setdefault((task["worker"], prefix), [0.0, 0, float("inf"), 0.0])
            row[0] += step["stop"] - step["start"]
            row[1] += 1
            row[2] = min(row[2], step["start"] - started)
            row[3] = max(row[3], step["stop"] - started)
    print(f"\nphases of {name}: {total:.3f} s in all")
    print("| worker | task | tasks | compute s | first start s | last stop s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (address, prefix), (busy, count, first, last) in sorted(rows.items()):
        print(f"| {address} | {prefix} | {count} | {busy:.3f} | {first:.3f} | {last:.3f} |")


def make_data(gib: float) -> tuple[Any, Any]:
    import numpy as np
    import pandas as pd

    rows = int(gib * 2**30) // 64
    rng = np.random.default_rng(0)
    arr = rng.standard_normal((rows, 8))
    df = pd.DataFrame({f"c{i}": arr[:, i].copy() for i in range(8)})
    return df, arr


def make_table(gib: float) -> Any:
    """A table of about ``gib`` GiB with about 40% of its bytes in one string column (1% nulls,
    words of 2–40 characters), a categorical, four float64 and one int64 column. The strings are
    made by Arrow (a vocabulary taken at random rows): Python would take minutes at 8 GiB."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    rows = int(gib * 2**30) // 70  # 41 bytes of numbers and codes, ~21 + 8 of a string
    rng = np.random.default_rng(1)
    vocabulary = pa.array([f"{'word' * (i % 10)}{i}" for i in range(10_000)], pa.large_string())
    picks = pa.array(rng.integers(0, len(vocabulary), rows), mask=rng.random(rows) < 0.01)
    text = pd.StringDtype("pyarrow", na_value=np.nan).__from_arrow__(vocabulary.take(picks))
    cities = np.array(["Oslo", "Lyon", "Kyoto", "Lima", "Perth"], dtype=object)
    data: dict[str, Any] = {f"x{i}": rng.random(rows) for i in range(4)}
    data["n"] = rng.integers(0, 10**6, rows)
    data["city"] = pd.Categorical.from_codes(rng.integers(0, 5, rows), categories=cities)
    data["name"] = text
    return pd.DataFrame(data)


def start(cpu: bool) -> tuple[Any, Any, bool]:
    from distributed import Client

    if not cpu:
        try:
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(host="127.0.0.1", dashboard_address="127.0.0.1:0")
            return cluster, Client(cluster), True
        except ImportError:
            print("dask-cuda is not installed: a CPU cluster instead")
    from distributed import LocalCluster

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address="127.0.0.1:0"
    )
    return cluster, Client(cluster), False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cpu", action="store_true", help="a CPU cluster: pandas partitions")
    parser.add_argument(
        "--anchor-runs",
        type=int,
        default=None,
        help="runs of each anchor (default: --runs; at 8 GiB the slowest takes over a minute)",
    )
    parser.add_argument(
        "--phases", action="store_true", help="only where the time of ours goes, task by task"
    )
    parser.add_argument(
        "--strings", action="store_true", help="also a table of the same size with strings"
    )
    parser.add_argument("--no-array", action="store_true", help="leave the array's cases out")
    args = parser.parse_args()
    anchor_runs = args.anchor_runs or args.runs
    import warnings

    warnings.simplefilter("ignore")  # the CPU run's "no GPU" notice
    cluster, client, gpu = start(args.cpu)
    workers = len(client.scheduler_info(n_workers=-1)["workers"])
    n = workers * max(1, round(args.gib * 2**30 / workers / (512 * 2**20)))
    df, arr = make_data(args.gib)
    small_df, small_arr = make_data(min(args.gib, 1 / 16))
    strings = make_table(args.gib) if args.strings else None
    small_strings = make_table(min(args.gib, 1 / 16)) if args.strings else None
    if args.no_array:
        arr = small_arr = None

    def release() -> None:
        gc.collect()
        if gpu:
            import cupy

            cupy.get_default_memory_pool().free_all_blocks()
        deadline = time.monotonic() + 30
        while any(client.has_what().values()) and time.monotonic() < deadline:
            time.sleep(0.05)

    warm = cases(client, small_df, small_arr, n, gpu, small_strings)
    for run in warm.values():  # imports, pinned buffers
        run()
        release()
    if args.phases:
        import logging
        import sys

        from gpudask_jupyter import to_cpu, to_gpu

        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        for module in ("gathering", "spread"):
            logger = logging.getLogger(f"gpudask_jupyter.convert.distribute.kernel.{module}")
            logger.setLevel(logging.DEBUG)
            logger.addHandler(handler)

        for name, obj in (("df", df), ("arr", arr)):
            there = partial(to_gpu, obj, distribute=True)
            for _ in range(2):  # the second is the one that counts
                phases(client, there, f"to_gpu({name}, distribute=True)")
                release()
            back = partial(to_cpu, there(), gather=True)
            for _ in range(2):
                phases(client, back, f"to_cpu({name}, gather=True)")
            del back
            release()
        client.close()
        cluster.close()
        return

    def runs(name: str) -> int:
        return args.runs if name.startswith("ours") else anchor_runs

    results = {
        name: _timed(run, runs(name), release)
        for name, run in cases(client, df, arr, n, gpu, strings).items()
    }
    results.update(
        {
            name: _timed(run, runs(name), gc.collect)
            for name, run in gather_cases(client, df, arr, gpu, strings).items()
        }
    )
    release()
    kind = "GPU" if gpu else "CPU"
    print(
        f"\n{args.gib:g} GiB (eight float64 columns; the array the same size), {workers} {kind} "
        f"workers, {n} partitions, {args.runs} runs of ours, {anchor_runs} of each anchor\n"
    )
    table_nbytes = 0 if strings is None else int(strings.memory_usage(index=True, deep=True).sum())
    if strings is not None:
        print(f"the table with strings: {table_nbytes / 2**30:.2f} GiB\n")
    print(table(results, df.memory_usage(index=True).sum(), table_nbytes))
    from gpudask_jupyter.convert.distribute.kernel.variables import distribute_names

    named = {"df": df, "arr": arr, "table": strings}
    names = [k for k, v in named.items() if v is not None]
    report, _ = distribute_names(named, names)
    print()
    print(report.table())
    if gpu:
        print()
        failed_attempt(client, df)
    client.close()
    cluster.close()


if __name__ == "__main__":  # the workers start with spawn and import this file
    main()
