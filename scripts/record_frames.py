"""Record the frames a panel receives during a short, known workload, as a JSON fixture.

The view's tests replay such recordings, so the charts are drawn and checked from real frames
without a GPU in CI. The run: start a cluster with ``%gpu_cluster start`` (or attach to one), then
a matrix-multiplication load on one worker (CuPy on a GPU, NumPy otherwise), then a Dask
DataFrame shuffle over two workers (the cuDF backend where cuDF is installed, pandas otherwise),
then ``%gpu_cluster stop`` and a few seconds of the stopped cluster's history. Every frame a
consumer receives is kept: a snapshot first, then deltas, exactly as the panel's view gets them.
The file is trimmed below 1 MiB so that it can be committed.

    python scripts/record_frames.py tests/fixtures/frames_cpu.json --seconds 20
    python scripts/record_frames.py tests/fixtures/frames_h200.json        # on the GPU machine
"""

from __future__ import annotations

import argparse
import json
import math
import threading
import time
from pathlib import Path
from typing import Any

MAX_BYTES = 1024 * 1024
MAX_TASKS_PER_FRAME = 400


def matmul_load(seconds: float, size: int) -> float:
    """Multiply matrices for ``seconds`` on the worker's GPU (CuPy) or CPU (NumPy)."""
    try:
        import cupy as xp
    except ImportError:
        import numpy as xp
    a = xp.random.random((size, size)).astype(xp.float32)
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(4):
            a = a @ a
            a /= xp.linalg.norm(a)
        if hasattr(xp, "cuda"):
            xp.cuda.runtime.deviceSynchronize()
    return float(a[0, 0])


def shuffle_load(client: Any, workers: list[str], partitions: int, rows: int) -> int:
    """A Dask DataFrame shuffle on ``workers``: cuDF partitions where cuDF is installed."""
    import importlib.util

    import dask
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    backend = "cudf" if importlib.util.find_spec("cudf") is not None else "pandas"
    frame = pd.DataFrame({"key": np.random.randint(0, 1000, rows), "value": np.random.random(rows)})
    with dask.config.set({"dataframe.backend": backend}):
        ddf = dd.from_pandas(frame, npartitions=partitions)
        if backend == "cudf":
            ddf = ddf.to_backend("cudf")
        shuffled = ddf.shuffle("key").map_partitions(len)
        return int(client.compute(shuffled.sum(), workers=workers).result())


class Recorder:
    """Keeps every frame the kernel's monitor hands a consumer, from a snapshot on."""

    def __init__(self, interval: float) -> None:
        from gpudask_jupyter.widget.shared_monitor import KEY, this_kernel_view

        self.frames: list[dict[str, Any]] = []
        self._key = KEY
        self._monitor = this_kernel_view().monitor()
        self._cursor: Any = None
        self._lock = threading.Lock()
        self._token = self._monitor.subscribe(self._take, interval=interval)

    def _take(self) -> None:
        with self._lock:
            frame, self._cursor = self._monitor.frame(self._key, self._cursor)
            self.frames.append(json.loads(json.dumps(frame)))  # a copy, as the view gets it

    def stop(self) -> list[dict[str, Any]]:
        self._monitor.unsubscribe(self._token)
        return self.frames


def _rounded(value: Any) -> Any:
    """Floats to what the view can show (4 significant decimals for times), recursively."""
    if isinstance(value, float):
        return value if not math.isfinite(value) else round(value, 4)
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def trimmed(frames: list[dict[str, Any]], limit: int = MAX_BYTES) -> list[dict[str, Any]]:
    """The frames, smaller: floats rounded, task rectangles per frame capped, and while still
    over ``limit`` bytes, the cap halved (a snapshot stays first, deltas stay in order)."""
    cap = MAX_TASKS_PER_FRAME
    while True:
        out = [_rounded({**f, "tasks": f["tasks"][:cap]}) for f in frames]
        if len(json.dumps(out)) <= limit or cap <= 1:
            return out
        cap //= 2


def _shell(start: str, attach: str | None) -> tuple[Any, Any]:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpudask_jupyter")
    line = f"attach {attach}" if attach else f"start {start}"
    client = shell.run_line_magic("gpu_cluster", line)
    if client is None:
        raise SystemExit(f"%gpu_cluster {line} gave no client")
    return shell, client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the JSON file to write")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the load")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between frames")
    parser.add_argument("--attach", help="a scheduler address to attach to instead of starting")
    parser.add_argument(
        "--start",
        default=None,
        help="arguments of %%gpu_cluster start (default: one worker per GPU; on a machine "
        "without GPUs, two workers of 2 GB)",
    )
    parser.add_argument("--size", type=int, default=0, help="matrix size (default by device)")
    args = parser.parse_args()

    from gpudask_jupyter.machine import nvml

    gpu = nvml.status().available
    start = (
        args.start
        if args.start is not None
        else ("" if gpu else "--n-workers 2 --memory-limit 2GB")
    )
    shell, client = _shell(start, args.attach)
    recorder = Recorder(args.interval)
    began = time.time()
    try:
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        time.sleep(2 * args.interval)
        size = args.size or (8192 if gpu else 384)
        matmul = client.submit(matmul_load, args.seconds / 2, size, workers=workers[:1], pure=False)
        matmul.result()
        shuffle_load(client, workers[:2], partitions=16, rows=200_000)
        rest = began + args.seconds - time.time()
        time.sleep(max(2 * args.interval, rest))
    finally:
        shell.run_line_magic("gpu_cluster", "stop")
    time.sleep(4 * args.interval)  # the stopped cluster, its history kept
    frames = trimmed(recorder.stop())
    record = {
        "recorded": {
            "gpus": [d.name for d in nvml.devices()],
            "nvml": nvml.status().reason or "available",
            "interval": args.interval,
            "workload": "matmul on one worker, then a DataFrame shuffle over two; then stop",
        },
        "frames": frames,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, separators=(",", ":")) + "\n")
    print(f"{len(frames)} frames, {args.out.stat().st_size:,} bytes written to {args.out}")


if __name__ == "__main__":
    main()
