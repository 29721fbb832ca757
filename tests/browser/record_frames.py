"""Record the frames a panel receives while a small CPU cluster runs notebook 04's pipeline.

    python tests/browser/record_frames.py tests/fixtures/frames_sample.json --gpus 2

The frames are real (a LocalCluster, the package's Monitor, one frame every 0.25 s); with
``--gpus N`` the recording also gets N made-up GPUs ("NVIDIA H200 (replayed)") whose utilisation
follows the tasks running and whose memory follows the results held, so that the browser tests
draw the GPU charts on a machine without a GPU. The replay (replay.py) reads this file and the
recordings of the same shape made on a GPU machine.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

GIB = 2**30
H200_MEMORY = 143_771_336_704


def _pipeline(client: Any, partitions: int, rows: int) -> None:
    """Notebook 04's stages on a small DataFrame: make-events, filter, assign, a shuffling groupby,
    the top 10; then one task that fails (the view draws errors)."""
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    def make_partition(i: int, rows: int) -> pd.DataFrame:
        rng = np.random.default_rng(i)
        time.sleep(0.05)
        return pd.DataFrame(
            {
                "key": rng.integers(0, 1_000, rows),
                "x": rng.random(rows),
                "y": rng.normal(size=rows),
            }
        )

    events = dd.from_map(make_partition, range(partitions), rows=rows, label="make-events")
    events = events.persist()
    client.gather(client.futures_of(events))
    for _ in range(2):
        positive = events[events.y > 0]
        positive = positive.assign(z=positive.x * positive.y)
        per_key = positive.groupby("key").agg({"z": "sum", "x": "mean"}, split_out=4)
        per_key.nlargest(10, "z").compute()

    def fails() -> None:
        raise ValueError("a failing task, recorded on purpose")

    future = client.submit(fails, key="fails-on-purpose")
    try:
        future.result()
    except ValueError:
        pass
    del events


def record(seconds_after: float = 2.0) -> list[dict[str, Any]]:
    from distributed import Client, LocalCluster

    from gpudask_jupyter.monitor import Monitor, Source
    from gpudask_jupyter.monitor.callers import ClientCaller

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=2, processes=True, dashboard_address=":0"
    )
    client = Client(cluster)
    source = Source(
        token=cluster,
        caller=lambda: ClientCaller(client),
        mode="cpu",
        address=cluster.scheduler_address,
        dashboard=client.dashboard_link,
    )
    monitor = Monitor(lambda: {"kernel": source})
    frames: list[dict[str, Any]] = []
    cursor = None

    def take() -> None:
        nonlocal cursor
        frame, cursor = monitor.frame("kernel", cursor, 300)
        frames.append(json.loads(json.dumps(frame)))

    token = monitor.subscribe(take, 0.25, 300)
    try:
        time.sleep(1.0)
        _pipeline(client, partitions=16, rows=200_000)
        time.sleep(seconds_after)
    finally:
        monitor.unsubscribe(token)
        monitor.stop()
        client.close()
        cluster.close()
    return frames


def _busy(t: float, tasks: list[dict[str, Any]], worker: str, span: float = 0.5) -> float:
    """The share of ``worker``'s two threads busy during the ``span`` seconds before ``t``."""
    busy: float = sum(
        max(0.0, min(float(r["stop"]), t) - max(float(r["start"]), t - span))
        for r in tasks
        if r["worker"] == worker
    )
    return min(1.0, busy / (2 * span))


def _done(t: float, tasks: list[dict[str, Any]], worker: str) -> int:
    """How many tasks of ``worker`` ended by ``t`` (their results fill GPU memory)."""
    return sum(1 for r in tasks if r["worker"] == worker and r["stop"] <= t)


def add_gpus(frames: list[dict[str, Any]], count: int) -> None:
    """Made-up GPUs, one per worker: utilisation from the tasks running, memory growing with the
    tasks done (made up: the recording's clock and workers are real, these numbers are not)."""
    tasks = [t for f in frames for t in f["tasks"]]
    workers = sorted({w["address"] for f in frames for w in f["workers"]})
    devices = [
        {
            "id": f"GPU-replayed-{i}",
            "label": str(i),
            "name": "NVIDIA H200 (replayed)",
            "host": "",
            "mig": False,
            "memory_total": H200_MEMORY,
            "power_limit": 700.0,
            "cluster_memory": None,
        }
        for i in range(count)
    ]

    def reading(i: int, t: float) -> tuple[float, int, int]:
        worker = workers[i] if i < len(workers) else None
        base = (5 + 2 * i) * GIB
        if worker is None:
            return 0.0, base, 0
        util = min(100.0, 2.0 + 98.0 * _busy(t, tasks, worker))
        cluster = 2 * GIB + min(60, _done(t, tasks, worker)) * 700 * 2**20
        return util, base + cluster, cluster

    for frame in frames:
        frame["nvml"] = {"available": True, "reason": "", "driver": "580.82.07 (replayed)"}
        frame["devices"] = [
            dict(d, cluster_memory=reading(i, frame["time"])[2] or None)
            for i, d in enumerate(devices)
        ]
        for sample in frame["samples"]:
            for i, device in enumerate(devices):
                util, used, _ = reading(i, sample["t"])
                sample["values"][device["id"]] = [
                    util,
                    used,
                    38.0 + util / 4,
                    90.0 + 5 * util,
                    int(util * 2e8),
                    int(util * 1e8),
                ]
        for w in frame["workers"]:
            if w["address"] in workers[:count]:
                i = workers.index(w["address"])
                util, used, _ = reading(i, frame["time"])
                w["gpu"] = {
                    "device": devices[i]["id"],
                    "name": devices[i]["name"],
                    "utilization": util,
                    "memory_used": used,
                    "memory_total": H200_MEMORY,
                }


def mark_ours(frames: list[dict[str, Any]]) -> None:
    """The recording's workers are its own cluster's: ``ours`` says so (the monitor of this
    version may still send the placeholder false)."""
    for frame in frames:
        for worker in frame["workers"]:
            worker["ours"] = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--gpus", type=int, default=0, help="made-up GPUs to add")
    args = parser.parse_args()
    frames = record()
    mark_ours(frames)
    if args.gpus:
        add_gpus(frames, args.gpus)
    meta = {
        "source": "tests/browser/record_frames.py: a CPU LocalCluster, 2 workers x 2 threads",
        "gpus": f"{args.gpus} made up from the tasks" if args.gpus else "none",
        "interval": 0.25,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "frames": frames}, separators=(",", ":")))
    print(f"{len(frames)} frames, {args.out.stat().st_size // 1024} KiB -> {args.out}")


if __name__ == "__main__":
    main()
