"""A cluster from dask-gateway, and data spread onto its workers: ``%gpu_cluster start --gateway``
against dask-gateway's own ``new_cluster()`` + ``scale()`` + ``wait_for_workers()``, and
``%%to_gpu --distribute`` against ``dd.from_pandas(...).persist()`` onto the same cluster.

The gateway is a real dask-gateway server started here on loopback (its local backend, its own
proxy and TLS), as the tests start it; ``--address`` uses one already running instead (a hub's,
with ``--gpu`` workers). The paths alternate in each repetition so that drift on the machine
hits both alike. Printed: median and spread (min–max) of ``--repeat`` runs, and each path's
ratio to the anchor measured in the same run.

    python benchmarks/gateway.py [--repeat 5] [--workers 2] [--rows 4000000] [--address URL]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _table(title: str, seen: dict[str, list[float]]) -> list[str]:
    names = list(seen)
    anchor = statistics.median(seen[names[-1]])
    rows = [f"| {title} | path | median s | min–max s | ratio to anchor |", "| --- " * 5 + "|"]
    for name in names:
        times = seen[name]
        median = statistics.median(times)
        rows.append(
            f"| | {name} | {median:.2f} | {min(times):.2f}–{max(times):.2f} | "
            f"{median / anchor:.2f}× |"
        )
    return rows


def _alternate(paths: dict[str, Callable[[], float]], repeat: int) -> dict[str, list[float]]:
    seen: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeat):
        for name, run in paths.items():
            seen[name].append(run())
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--address", help="a running gateway instead of one started here")
    args = parser.parse_args()

    import numpy as np
    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from gpudask_jupyter import compat

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpudask_jupyter")
    frame = pd.DataFrame({"x": np.arange(args.rows), "y": np.arange(args.rows) * 0.5})

    def run_with(address: str) -> int:
        def ours() -> float:
            with capture_output():
                t0 = time.perf_counter()
                shell.run_line_magic(
                    "gpu_cluster", f"start --gateway {address} --n-workers {args.workers}"
                )
                elapsed = time.perf_counter() - t0
                shell.run_line_magic("gpu_cluster", "stop")
            return elapsed

        def anchor() -> float:
            from dask_gateway import Gateway

            gateway = Gateway(address)
            t0 = time.perf_counter()
            cluster = gateway.new_cluster(shutdown_on_close=False)
            cluster.scale(args.workers)
            client = cluster.get_client(set_as_default=False)
            client.wait_for_workers(args.workers)
            elapsed = time.perf_counter() - t0
            client.close()
            compat.close_gateway_cluster(cluster, True)
            compat.close_gateway(gateway)
            return elapsed

        started = _alternate(
            {"%gpu_cluster start --gateway": ours, "new_cluster + scale": anchor}, args.repeat
        )

        with capture_output():
            client = shell.run_line_magic(
                "gpu_cluster", f"start --gateway {address} --n-workers {args.workers}"
            )

        # each run moves other data: the same frame again has the same Dask keys, and a second
        # run found the first one's partitions still on the workers (0.07 s, not a transfer)
        fresh = iter(range(1, 4 * args.repeat + 1))

        def new_frame() -> Any:
            copy = frame.copy()
            copy.iloc[0, 0] = -next(fresh)
            return copy

        def spread() -> float:
            shell.user_ns["frame"] = new_frame()
            t0 = time.perf_counter()
            shell.run_cell_magic("to_gpu", "--distribute -q frame", "pass")
            elapsed = time.perf_counter() - t0
            del shell.user_ns["frame"]
            return elapsed

        def persist() -> float:
            import dask.dataframe as dd
            from distributed import wait

            data = new_frame()
            t0 = time.perf_counter()
            done = client.persist(dd.from_pandas(data, npartitions=args.workers))
            wait(done)
            elapsed = time.perf_counter() - t0
            del done
            return elapsed

        moved = _alternate(
            {"%%to_gpu --distribute": spread, "from_pandas().persist()": persist}, args.repeat
        )
        with capture_output():
            shell.run_line_magic("gpu_cluster", "stop")
        rows = _table(f"ready cluster, {args.workers} workers", started)
        rows += ["", *_table(f"{frame.memory_usage().sum() / 2**20:.0f} MiB onto it", moved)]
        print("\n".join(rows), flush=True)
        return 0

    if args.address:
        return run_with(args.address)
    from gateway_server import gateway_server

    with (
        tempfile.TemporaryDirectory(prefix="gpudask-gateway-bench-") as work,
        gateway_server(Path(work)) as server,
    ):
        return run_with(server.address)


if __name__ == "__main__":
    sys.exit(main())
