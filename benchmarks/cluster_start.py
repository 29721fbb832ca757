"""Time to a ready cluster: ``%gpu_cluster start`` (TLS, the secure default) against
``%gpu_cluster start --no-tls`` (plain TCP) and the plain dask-cuda / distributed calls.

Each repetition starts a cluster, waits until every worker is registered, then closes it; the
paths alternate so that drift on the machine hits all alike. Printed: median, spread (min–max)
per path, the ratio of each to the anchor measured in the same run, and what TLS costs: the
ratio of the default to ``--no-tls`` (goal: at most 1.10).

Then the first start in a fresh process against later ones in it (goal: at most 1.3): each of
``--fresh`` new processes loads the extension in a cell, as a notebook does, starts once, then
``--later`` more times. Half the processes start in the next cell at once (Run All), half once
the kernel has been idle long enough for the background imports to be done (a user who reads,
then types); the anchor is the later starts of the same processes.

    python benchmarks/cluster_start.py [--repeat 5] [--cpu-workers 2] [--cpu | --no-cpu] [--fresh 5]
        [--compare-ahead]
    python benchmarks/cluster_start.py --baseline-tree DIR [--cpu] [--fresh 5]

``--baseline-tree`` measures first starts alone, in turn with the package in ``DIR`` (another
version's checkout): what a change does to the first start, as our median over the baseline's.

With GPUs it compares against ``LocalCUDACluster`` + ``Client``; on the CPU (or with ``--cpu``)
against ``LocalCluster`` + ``Client``. Same host, dashboard and worker count on every side (the
dashboard is asked for explicitly, since by default a shared machine gets none).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any


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


def measure(label: str, paths: dict[str, Callable[[], float]], repeat: int) -> list[str]:
    """Rows for each path, then the TLS cost; the last path is the anchor."""
    for run in paths.values():
        run()  # warm all: imports, first CUDA init, spawn caches
    seen: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeat):
        for name, run in paths.items():
            seen[name].append(run())
    anchor = statistics.median(seen[list(paths)[-1]])
    rows = []
    for name, times in seen.items():
        m = statistics.median(times)
        rows.append(
            f"| {label} | {name} | {m:.3f} | {min(times):.3f}–{max(times):.3f} | {m / anchor:.3f} |"
        )
    tls, tcp = (statistics.median(seen[name]) for name in list(paths)[:2])
    rows.append(f"| {label} | TLS / plain TCP | {tls / tcp:.3f} | | |")
    return rows


def _has_gpu() -> bool:
    from gpudask_jupyter.machine import nvml

    return any(not d.is_mig for d in nvml.devices())


def _fresh_process(line: str, cpu: bool, wait: bool, later: int, ahead: bool = True) -> None:
    """In this new process: load the extension in a cell, start (at once or once the background
    imports are done), then ``later`` more starts; print the times as JSON."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from gpudask_jupyter import config
    from gpudask_jupyter.machine import nvml

    config.set_override("prewarm", True)  # the default; set here, whatever the environment says
    config.set_override("launch-ahead", ahead)
    shell = InteractiveShell.instance()
    with capture_output():
        shell.run_cell("%load_ext gpudask_jupyter")
    try:
        from gpudask_jupyter.magics.extension import Extension
    except ImportError:  # a --baseline-tree from before the extension object held the imports
        from gpudask_jupyter.cluster import prewarm

        imports = prewarm.this_kernel  # type: ignore[attr-defined]
    else:
        loaded = Extension.of(shell)
        assert loaded is not None
        imports = loaded.cluster.imports
    if cpu:
        config.set_override("nvml", False)
        nvml.reset()
    if wait:
        imports.join()  # the kernel idle after the cell, until the imports are done
    run = _ours(shell, line)
    times = [run() for _ in range(1 + later)]
    shell.run_line_magic("unload_ext", "gpudask_jupyter")
    print(json.dumps({"first": times[0], "later": times[1:], "imports": imports.took}))


def _fresh_env(tree: str | None = None) -> dict[str, str]:
    """A fresh kernel's environment: without what this process's clusters set in its own
    (dask-cuda's variable for RAPIDS); with ``tree`` first on the module path."""
    from gpudask_jupyter.cluster.connect import GPU_CLUSTER_ENVIRON

    env = {k: v for k, v in os.environ.items() if k not in GPU_CLUSTER_ENVIRON}
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))
    return env


def _first(line: str, cpu: bool, wait: bool, later: int, ahead: bool, env: dict[str, str]) -> Any:
    """One fresh process's first and later starts (:func:`_fresh_process`)."""
    command = [sys.executable, __file__, "--_fresh", line, "--later", str(later)]
    command += ["--cpu"] * cpu + ["--_wait"] * wait + ["--_no-ahead"] * (not ahead)
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_first(
    label: str, line: str, cpu: bool, n: int, later: int, ahead: bool = True
) -> list[str]:
    """Rows for the first start of ``n`` fresh processes per way, against their later starts.
    Each starts with a fresh kernel's environment. ``ahead``: the ``launch-ahead`` option."""
    env = _fresh_env()
    seen: dict[bool, list[float]] = {False: [], True: []}
    later_times: list[float] = []
    imports: list[float] = []
    for _ in range(n):
        for wait in (False, True):
            result = _first(line, cpu, wait, later, ahead, env)
            seen[wait].append(result["first"])
            later_times += result["later"]
            if wait and result["imports"] is not None:
                imports.append(result["imports"])
    anchor = statistics.median(later_times)
    off = "" if ahead else ", launch-ahead off"
    names = {
        False: f"first start, next cell at once{off}",
        True: f"first start, after the background imports{off}",
    }
    rows = []
    for wait, times in seen.items():
        m = statistics.median(times)
        spread = f"{min(times):.3f}–{max(times):.3f}"
        rows.append(f"| {label} | {names[wait]} | {m:.3f} | {spread} | {m / anchor:.3f} |")
    spread = f"{min(later_times):.3f}–{max(later_times):.3f}"
    rows.append(f"| {label} | later start, same process{off} | {anchor:.3f} | {spread} | 1.000 |")
    if imports:
        m = statistics.median(imports)
        spread = f"{min(imports):.3f}–{max(imports):.3f}"
        rows.append(f"| {label} | (background imports) | {m:.3f} | {spread} | |")
    return rows


def compare_first(label: str, line: str, cpu: bool, n: int, later: int, tree: str) -> list[str]:
    """Rows for the first start of ``n`` fresh processes per way with this checkout and with
    the package in ``tree`` (another version's checkout), taken in turn; the ratio is ours to
    the baseline's."""
    envs = {"ours": _fresh_env(), "baseline": _fresh_env(tree)}
    seen: dict[tuple[str, str], list[float]] = {}
    for _ in range(n):
        for wait in (False, True):
            for side, env in envs.items():
                result = _first(line, cpu, wait, later, True, env)
                what = "after the background imports" if wait else "next cell at once"
                seen.setdefault((f"first start, {what}", side), []).append(result["first"])
                seen.setdefault(("later start, same process", side), []).extend(result["later"])
    rows = []
    for what in dict.fromkeys(path for path, _ in seen):
        ours, base = seen[(what, "ours")], seen[(what, "baseline")]
        m, b = statistics.median(ours), statistics.median(base)
        rows.append(
            f"| {label} | {what}: this checkout / baseline | {m:.3f} / {b:.3f} "
            f"| {min(ours):.3f}–{max(ours):.3f} / {min(base):.3f}–{max(base):.3f} | {m / b:.3f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cpu-workers", type=int, default=2)
    parser.add_argument("--cpu", action="store_true", help="only the CPU comparison")
    parser.add_argument("--no-cpu", action="store_true", help="only the GPU comparison")
    parser.add_argument("--fresh", type=int, default=5, help="fresh processes per way (0: none)")
    parser.add_argument("--later", type=int, default=3, help="later starts in each")
    parser.add_argument("--_fresh", metavar="LINE", help=argparse.SUPPRESS)
    parser.add_argument("--_wait", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--_no-ahead", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--compare-ahead",
        action="store_true",
        help="first starts with the launch-ahead option on, then off (what it saves)",
    )
    parser.add_argument(
        "--baseline-tree",
        metavar="DIR",
        help="only first starts, against the package in DIR (another version's checkout, e.g. "
        "made by git worktree), measured in turn in the same run",
    )
    args = parser.parse_args()
    if args.baseline_tree:
        gpu = not args.cpu and _has_gpu()
        line = "start --dashboard-address 127.0.0.1:0"
        if not gpu:
            line = f"start --n-workers {args.cpu_workers} --memory-limit 2GB --oversubscribe"
            line += " --dashboard-address 127.0.0.1:0"
        label = "GPU" if gpu else f"CPU, {args.cpu_workers} workers"
        print("| machine | path | median s | min–max s | ratio |\n| --- | --- | --- | --- | --- |")
        rows = compare_first(label, line, not gpu, args.fresh, args.later, args.baseline_tree)
        print("\n".join(rows), flush=True)
        return
    if args._fresh:
        _fresh_process(args._fresh, args.cpu, args._wait, args.later, not args._no_ahead)
        return

    from IPython.core.interactiveshell import InteractiveShell

    from gpudask_jupyter import config
    from gpudask_jupyter.machine import nvml

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpudask_jupyter")

    def show(rows: list[str]) -> None:  # each block as soon as it is measured
        print("\n".join(rows), flush=True)

    show(
        [
            "| machine | path | median s | min–max s | ratio to anchor |",
            "| --- | --- | --- | --- | --- |",
        ]
    )
    gpus = [d for d in nvml.devices() if not d.is_mig]
    dashboard = " --dashboard-address 127.0.0.1:0"
    if gpus and not args.cpu:
        n = len(gpus)
        line = "start" + dashboard
        paths = {
            "%gpu_cluster start (TLS)": _ours(shell, line),
            "%gpu_cluster start --no-tls": _ours(shell, line + " --no-tls"),
            "LocalCUDACluster + Client": _anchor_gpu(n),
        }
        show(measure(f"{n} GPU", paths, args.repeat))
        if args.fresh:
            show(measure_first(f"{n} GPU", line, False, args.fresh, args.later))
            if args.compare_ahead:
                show(measure_first(f"{n} GPU", line, False, args.fresh, args.later, False))
    if args.no_cpu:
        shell.run_line_magic("unload_ext", "gpudask_jupyter")
        return
    config.set_override("nvml", False)
    nvml.reset()
    line = f"start --n-workers {args.cpu_workers} --memory-limit 2GB --oversubscribe" + dashboard
    paths = {
        "%gpu_cluster start (TLS)": _ours(shell, line),
        "%gpu_cluster start --no-tls": _ours(shell, line + " --no-tls"),
        "LocalCluster + Client": _anchor_cpu(args.cpu_workers),
    }
    show(measure(f"CPU, {args.cpu_workers} workers", paths, args.repeat))
    shell.run_line_magic("unload_ext", "gpudask_jupyter")
    if args.fresh:
        label = f"CPU, {args.cpu_workers} workers"
        show(measure_first(label, line, True, args.fresh, args.later))
        if args.compare_ahead:
            show(measure_first(label, line, True, args.fresh, args.later, False))


if __name__ == "__main__":
    main()
