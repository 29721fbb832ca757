"""What TLS, the secure default, costs in task throughput against plain TCP, same run.

Two clusters are started as ``%gpu_cluster start`` starts them (the same keywords, through
``cluster.connect.launch``): one with TLS and fresh certificates (the default), one with
``--no-tls``. Both stay up, and every repetition runs each workload on one, then the other, so
that drift on the machine hits both alike. Workloads:

* tiny tasks: 2000 ``inc`` tasks mapped and gathered (scheduler round trips dominate);
* results: 8 tasks each returning a 16 MiB bytes object, gathered to the client;
* between workers: 8 tasks each reading a 16 MiB result held by the other worker.

Printed: median and spread (min–max) per workload and protocol, and the TLS/TCP throughput
ratio (goal: at least 0.9).

    python benchmarks/task_throughput.py [--cpu] [--repeat 5] [--workers 2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

MIB = 2**20
TINY = 2000
LARGE = 8
LARGE_BYTES = 16 * MIB


def inc(x: int) -> int:
    return x + 1


def blob(i: int) -> bytes:
    return bytes([i % 256]) * LARGE_BYTES


def size(data: bytes) -> int:
    return len(data)


def tiny(client: Any) -> float:
    """Tasks per second."""
    t0 = time.perf_counter()
    client.gather(client.map(inc, range(TINY), pure=False))
    return TINY / (time.perf_counter() - t0)


def results(client: Any) -> float:
    """MiB per second gathered to the client."""
    t0 = time.perf_counter()
    futures = client.map(blob, range(LARGE), pure=False)
    client.gather(futures)
    elapsed = time.perf_counter() - t0
    del futures
    return LARGE * LARGE_BYTES / MIB / elapsed


def between_workers(client: Any) -> float:
    """MiB per second moved from one worker to another."""
    first, second = sorted(client.scheduler_info()["workers"])[:2]
    from distributed import wait

    held = client.map(blob, range(LARGE), workers=[first], pure=False)
    wait(held)
    t0 = time.perf_counter()
    client.gather(client.map(size, held, workers=[second], allow_other_workers=False, pure=False))
    elapsed = time.perf_counter() - t0
    del held
    return LARGE * LARGE_BYTES / MIB / elapsed


WORKLOADS: dict[str, tuple[Callable[[Any], float], str]] = {
    f"{TINY} tiny tasks": (tiny, "tasks/s"),
    f"{LARGE} results of 16 MiB to the client": (results, "MiB/s"),
    f"{LARGE} results of 16 MiB between workers": (between_workers, "MiB/s"),
}


def start(tls: bool, workers: int, devices: list[Any]) -> tuple[Any, Any]:
    from gpudask_jupyter.cluster.connect import launch
    from gpudask_jupyter.cluster.options import StartOptions, temporary_tls

    opts = StartOptions(n_workers=workers, threads_per_worker=1, memory_limit="2GB", tls=tls)
    security = temporary_tls(f"benchmark-{'tls' if tls else 'tcp'}")[0] if tls else None
    return launch(opts, devices, security, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cpu", action="store_true", help="CPU workers even where GPUs are")
    args = parser.parse_args()

    from gpudask_jupyter import config, registry
    from gpudask_jupyter.cluster.options import StartOptions, gpu_plan
    from gpudask_jupyter.machine import nvml

    if args.cpu:
        config.set_override("nvml", False)
        nvml.reset()
    devices, _ = gpu_plan(StartOptions(n_workers=None if args.cpu else args.workers))
    clusters = {
        "TLS": start(True, args.workers, devices),
        "TCP": start(False, args.workers, devices),
    }
    kind = f"{len(devices)} GPU" if devices else f"CPU, {args.workers} workers"
    try:
        rows = _measure(clusters, args.repeat)
    finally:
        for client, cluster in clusters.values():
            client.close()
            cluster.close()
        registry.remove("benchmark-tls")
    print(f"task throughput, {kind}, {args.repeat} runs each (median, min–max)\n")
    print("| workload | TLS | TCP | TLS / TCP |")
    print("| --- | --- | --- | --- |")
    print("\n".join(rows))


def _measure(clusters: dict[str, tuple[Any, Any]], repeat: int) -> list[str]:
    seen: dict[tuple[str, str], list[float]] = {}
    for name, (work, _) in WORKLOADS.items():
        for client, _ in clusters.values():
            work(client)  # warm: connections, imports, the first task of each kind
        for _ in range(repeat):
            for protocol, (client, _) in clusters.items():
                seen.setdefault((name, protocol), []).append(work(client))
    rows = []
    for name, (_, unit) in WORKLOADS.items():
        tls, tcp = seen[(name, "TLS")], seen[(name, "TCP")]
        cells = [
            f"{statistics.median(v):,.0f} {unit} ({min(v):,.0f}–{max(v):,.0f})" for v in (tls, tcp)
        ]
        ratio = statistics.median(tls) / statistics.median(tcp)
        rows.append(f"| {name} | {cells[0]} | {cells[1]} | {ratio:.2f} |")
    return rows


if __name__ == "__main__":
    main()
