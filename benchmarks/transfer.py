"""Host↔device transfer: %%to_gpu / %%to_cpu against cupy.asarray, cudf.from_pandas and back.

For each case (a 2 GiB float64 array, a 2 GiB mixed numeric DataFrame, the same frame with a
string column) and each direction, one run measures:

  ceiling  one cudaMemcpy of the same number of bytes from/to a page-locked buffer
  anchor   cupy.asarray / cudf.from_pandas  (host→device),  .get() / .to_pandas()  (device→host)
  ours     the %%to_gpu / %%to_cpu cell magic, in a real IPython shell

and prints best-of-N seconds, GB/s, ours/anchor speed-up and ours/ceiling fraction.

It also prints how fast this machine's threads can first touch fresh host memory: every
device→host copy (ours and the anchor's) writes into newly allocated memory, which the kernel
must fault in and zero first, so that rate bounds device→host from the host side.

    python benchmarks/transfer.py [--gib 2] [--repeat 3] [--sweep]

``--sweep`` first times the pinned pipeline alone for several thread counts and buffer sizes.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any


def _best(fn: Callable[[], Any], repeat: int) -> float:
    import cupy

    times = []
    for _ in range(repeat):
        cupy.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        result = fn()
        cupy.cuda.runtime.deviceSynchronize()
        times.append(time.perf_counter() - t0)
        del result
    return min(times)


def ceiling(nbytes: int, repeat: int) -> tuple[float, float]:
    """Bytes per second of one pinned H2D and one pinned D2H copy of ``nbytes``."""
    import cupy

    host = cupy.cuda.alloc_pinned_memory(nbytes)
    dev = cupy.empty(nbytes, dtype=cupy.uint8)
    rt = cupy.cuda.runtime
    up = _best(lambda: rt.memcpy(dev.data.ptr, host.ptr, nbytes, rt.memcpyHostToDevice), repeat)
    down = _best(lambda: rt.memcpy(host.ptr, dev.data.ptr, nbytes, rt.memcpyDeviceToHost), repeat)
    return nbytes / up, nbytes / down


def first_touch(nbytes: int, threads: int, repeat: int) -> float:
    """Bytes per second at which ``threads`` threads fault in and fill fresh host memory."""
    import ctypes
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    piece = 16 * 2**20
    times = []
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeat):
            fresh: Any = np.empty(nbytes, dtype=np.uint8)
            base = fresh.ctypes.data
            t0 = time.perf_counter()
            list(
                pool.map(
                    lambda o, base=base: ctypes.memset(base + o, 0, min(piece, nbytes - o)),
                    range(0, nbytes, piece),
                )
            )
            times.append(time.perf_counter() - t0)
            del fresh
    return nbytes / min(times)


def make_cases(gib: float) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    n_bytes = int(gib * 2**30)
    rng = np.random.default_rng(0)
    array = rng.standard_normal(n_bytes // 8)
    rows = n_bytes // (8 + 8 + 4 + 4 + 1 + 8)
    frame = pd.DataFrame(
        {
            "i64": rng.integers(0, 2**40, rows),
            "f64": rng.standard_normal(rows),
            "i32": rng.integers(0, 2**30, rows).astype(np.int32),
            "f32": rng.standard_normal(rows).astype(np.float32),
            "b": rng.integers(0, 2, rows).astype(bool),
            "t": pd.to_datetime(rng.integers(0, 2**31, rows), unit="s").astype("datetime64[ns]"),
        }
    )
    with_strings = frame.copy()
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon"], dtype=object)
    with_strings["s"] = pd.Series(words[rng.integers(0, 5, rows)], dtype="str")
    return {"float64 array": array, "numeric frame": frame, "frame + strings": with_strings}


def measure(shell: Any, name: str, obj: Any, repeat: int, ceil: tuple[float, float]) -> list[str]:
    import cudf
    import cupy
    import numpy as np

    from gpudask_jupyter.convert.report import nbytes_of

    nbytes = nbytes_of(obj) or 0
    ns = shell.user_ns
    ns["src"] = obj

    def ours_up() -> Any:
        shell.run_cell_magic("to_gpu", "-q src", "pass")
        moved = ns["src"]
        ns["src"] = obj
        return moved

    anchor_up = (
        (lambda: cupy.asarray(obj))
        if isinstance(obj, np.ndarray)
        else lambda: cudf.from_pandas(obj)
    )
    device_obj = anchor_up()

    def ours_down() -> Any:
        ns["dev"] = device_obj
        shell.run_cell_magic("to_cpu", "-q dev", "pass")
        return ns.pop("dev")

    anchor_down = (
        (lambda: device_obj.get()) if isinstance(obj, np.ndarray) else device_obj.to_pandas
    )
    ours_up(), anchor_up(), ours_down(), anchor_down()  # warm: buffers, streams, kernels
    rows = []
    for direction, ceiling_bw, ours, anchor, anchor_name in (
        (
            "host→device",
            ceil[0],
            ours_up,
            anchor_up,
            "cupy.asarray" if isinstance(obj, np.ndarray) else "cudf.from_pandas",
        ),
        (
            "device→host",
            ceil[1],
            ours_down,
            anchor_down,
            ".get()" if isinstance(obj, np.ndarray) else ".to_pandas()",
        ),
    ):
        t_ours, t_anchor = _best(ours, repeat), _best(anchor, repeat)
        t_ceiling = nbytes / ceiling_bw
        rows.append(
            f"| {name} | {direction} | {nbytes / 2**30:.2f} | {ceiling_bw / 1e9:.1f} | "
            f"{anchor_name} {nbytes / t_anchor / 1e9:.1f} | {nbytes / t_ours / 1e9:.1f} | "
            f"{t_anchor / t_ours:.2f}× | {t_ceiling / t_ours:.0%} |"
        )
    ns.pop("src", None)
    cupy.get_default_memory_pool().free_all_blocks()
    return rows


def sweep(gib: float, repeat: int) -> None:
    import cupy
    import numpy as np

    from gpudask_jupyter import config
    from gpudask_jupyter.convert import staging

    array = np.random.default_rng(1).standard_normal(int(gib * 2**30) // 8)
    print("| threads | pinned MiB | MiB × buffers | host→device GB/s | device→host GB/s |")
    print("| --- | --- | --- | --- | --- |")
    for threads in (8, 12, 14, 16):
        for pinned in (256, 512):
            config.set_override("transfer-threads", threads)
            config.set_override("pinned-buffer", pinned * 2**20)
            staging.release()
            stager = staging.stager()
            up = _best(lambda: staging.to_device(array), repeat)
            on_device = [staging.to_device(array)]
            down = _best(lambda: staging.to_host(on_device[0]), repeat)  # noqa: B023
            print(
                f"| {threads} | {pinned} | {stager.chunk / 2**20:.1f} × {stager.depth} "
                f"| {array.nbytes / up / 1e9:.1f} | "
                f"{array.nbytes / down / 1e9:.1f} |"
            )
            on_device.clear()
            cupy.get_default_memory_pool().free_all_blocks()
    config.clear_overrides()
    staging.release()
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args()

    import cupy
    from IPython.core.interactiveshell import InteractiveShell

    from gpudask_jupyter import config
    from gpudask_jupyter.convert import staging

    cupy.zeros(1)
    if args.sweep:
        sweep(args.gib, args.repeat)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpudask_jupyter")
    ceil = ceiling(2 * 2**30, args.repeat)
    pinned, threshold = (
        config.get("pinned-buffer") // 2**20,
        config.get("transfer-threshold") // 2**20,
    )
    threads, cores = staging.default_threads(), staging.usable_cores()
    touch = [first_touch(2 * 2**30, n, args.repeat) / 1e9 for n in (threads, cores)]
    print(
        f"defaults: {threads} threads, pinned buffer {pinned} MiB, threshold {threshold} MiB; "
        f"first touch of fresh host memory: {touch[0]:.1f} GB/s with {threads} threads, "
        f"{touch[1]:.1f} GB/s with {cores}"
    )
    print(
        "| case | direction | GiB | pinned ceiling GB/s | anchor GB/s | ours GB/s "
        "| ours/anchor | ours/ceiling |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, obj in make_cases(args.gib).items():
        for row in measure(shell, name, obj, args.repeat, ceil):
            print(row, flush=True)
    shell.run_line_magic("unload_ext", "gpudask_jupyter")


if __name__ == "__main__":
    main()
