"""Time to a ready cluster: ``%gpu_cluster start`` against the plain dask-cuda / distributed calls.

Each repetition starts a cluster, waits until every worker is registered, then closes it; the
two paths alternate so that drift on the machine hits both alike. Printed: median and best time
per path and the ratio of ours to the anchor measured in the same run.

    python benchmarks/cluster_start.py [--repeat 5] [--cpu-workers 2]

With GPUs it compares against ``LocalCUDACluster`` + ``Client``; on the CPU (or with ``--cpu``)
against ``LocalCluster`` + ``Client``. Same host, dashboard and worker count on both sides.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable


def _ours(shell: object, line: str) -> Callable[[], float]:
    from IPython.utils.capture import capture_output

    def run() -> float:
        with capture_output():
            t0 = time.perf_counter()
            shell.run_line_magic("gpu_cluster", line)  # type: ignore[attr-defined]
            elapsed = time.perf_counter() - t0
            shell.run_line_magic("gpu_cluster", "stop")  # type: ignore[attr-defined]
        return elapsed

    return run


def _anchor_gpu(n_workers: int) -> Callable[[], float]:
    def run() -> float:
        from dask_cuda import LocalCUDACluster
        from distributed import Client

        t0 = time.perf_counter()
        cluster = LocalCUDACluster(
            n_workers=n_workers, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        )
        client = Client(cluster)
        client.wait_for_workers(n_workers)
        elapsed = time.perf_counter() - t0
        client.close()
        cluster.close()
        return elapsed

    return run


def _anchor_cpu(n_workers: int) -> Callable[[], float]:
    def run() -> float:
        from distributed import Client, LocalCluster

        t0 = time.perf_counter()
        cluster = LocalCluster(
            n_workers=n_workers,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            memory_limit="2GB",
        )
        client = Client(cluster)
        client.wait_for_workers(n_workers)
        elapsed = time.perf_counter() - t0
        client.close()
        cluster.close()
        return elapsed

    return run


def measure(
    label: str, ours: Callable[[], float], anchor: Callable[[], float], repeat: int
) -> list[str]:
    ours(), anchor()  # warm both: imports, first CUDA init, spawn caches
    mine, theirs = [], []
    for _ in range(repeat):
        mine.append(ours())
        theirs.append(anchor())
    m, a = statistics.median(mine), statistics.median(theirs)
    return [
        f"| {label} | %gpu_cluster start | {m:.3f} | {min(mine):.3f} | {m / a:.3f} |",
        f"| {label} | anchor | {a:.3f} | {min(theirs):.3f} | 1.000 |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cpu-workers", type=int, default=2)
    parser.add_argument("--cpu", action="store_true", help="only the CPU comparison")
    args = parser.parse_args()

    from IPython.core.interactiveshell import InteractiveShell

    from gpudask_jupyter import config, nvml

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpudask_jupyter")
    rows = [
        "| machine | path | median s | best s | ratio to anchor |",
        "| --- | --- | --- | --- | --- |",
    ]
    gpus = [d for d in nvml.devices() if not d.is_mig]
    if gpus and not args.cpu:
        n = len(gpus)
        rows += measure(f"{n} GPU", _ours(shell, "start"), _anchor_gpu(n), args.repeat)
    config.set_override("nvml", False)
    nvml.reset()
    line = f"start --n-workers {args.cpu_workers} --memory-limit 2GB"
    rows += measure(
        f"CPU, {args.cpu_workers} workers",
        _ours(shell, line),
        _anchor_cpu(args.cpu_workers),
        args.repeat,
    )
    shell.run_line_magic("unload_ext", "gpudask_jupyter")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
