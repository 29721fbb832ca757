"""What an open panel costs a running cell: a CPU-bound loop with and without a panel refreshing
every 0.25 s, in one real kernel, and the bytes per second the panel sends to the browser.

The kernel is a real ipykernel started through jupyter_client with a cluster of its own
(%gpu_cluster start), so the panel samples NVML and polls the scheduler as in a notebook. A
front end is simulated by sending the panel the "hello" a view sends when it is drawn, and the
"bye" it sends when it is disposed, then counting the frame messages on the IOPub channel. The
panel samples only while a view is there, so "without" is a panel whose view is gone (nothing
samples) and "with" a panel with one view. Repetitions alternate without/with the panel.

The loop's wall time is noisy on a shared machine (a few percent run to run), more than the
effect measured. So each run also reads, from /proc, the CPU time every thread of the kernel
except the main one used during the loop: a pure-Python loop can only be slowed by the GIL
those threads hold, so their extra CPU time with the panel bounds the panel's cost, with far
less noise than the wall time. It also reads how long the loop's own thread was off the CPU
(wall time less its CPU time): waiting for the GIL shows there, while a slower or faster core
changes wall and CPU time alike and cancels out.

    python benchmarks/panel_overhead.py [--repeat 7] [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import queue
import statistics
import sys
import time
from typing import Any

LOOP = """
import time as _t
def _spin(seconds):
    n, end = 0, _t.perf_counter() + seconds
    while _t.perf_counter() < end:   # calibrate: how many iterations fit in `seconds`
        n += 1
    return n
def _others_cpu():
    import os, threading
    main, tick, total = threading.main_thread().native_id, os.sysconf("SC_CLK_TCK"), 0.0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != main:
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # the thread ended
            total += (int(fields[11]) + int(fields[12])) / tick
    return total
def _work(n):
    c0, m0, t0 = _others_cpu(), _t.thread_time(), _t.perf_counter()
    x = 0
    for i in range(n):
        x += i * i % 7
    wall = _t.perf_counter() - t0
    return wall, _others_cpu() - c0, wall - (_t.thread_time() - m0)
"""


def execute(kc: Any, code: str, timeout: float = 600) -> tuple[str, list[dict[str, Any]]]:
    """Run ``code``; return its stdout and the panel's frame messages seen meanwhile."""
    msg_id = kc.execute(code)
    out, frames = [], []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        kind, content = msg["msg_type"], msg["content"]
        if kind == "comm_msg":
            data = content.get("data", {})
            if data.get("method") == "custom" and data["content"].get("type") == "frame":
                frames.append({"bytes": len(json.dumps(data["content"])), "t": time.monotonic()})
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if kind == "stream":
            out.append(content["text"])
        elif kind == "error":
            raise RuntimeError("\n".join(content["traceback"]))
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(out), frames


def drain(kc: Any) -> None:
    """Read and drop what IOPub holds now."""
    while True:
        try:
            kc.get_iopub_msg(timeout=0.05)
        except queue.Empty:
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one loop")
    parser.add_argument(
        "--no-cluster",
        action="store_true",
        help="start no cluster: the panel samples the GPUs only (what NVML alone costs)",
    )
    args = parser.parse_args()

    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    try:
        out, _ = execute(
            kc,
            "%load_ext gpudask_jupyter\n"
            + ("" if args.no_cluster else "client = %gpu_cluster start\n")
            + "from gpudask_jupyter.machine import nvml\n"
            "print('GPUS', len(nvml.devices()))\n" + LOOP + f"\nN = _spin({args.seconds})\n",
        )
        gpus = int(out.split("GPUS ")[1].split()[0])
        execute(kc, "_work(N)")  # warm up
        without, with_panel, sent = [], [], []
        cpu_without, cpu_with, off_without, off_with = [], [], [], []
        out, _ = execute(
            kc,
            "import gpudask_jupyter\npanel = gpudask_jupyter.Panel(interval=0.25)\n"
            "print('COMM', panel.comm.comm_id)",
        )
        comm_id = out.split("COMM ")[1].split()[0]

        def view(kind: str) -> None:
            content = {"type": kind}
            data = {"comm_id": comm_id, "data": {"method": "custom", "content": content}}
            kc.shell_channel.send(kc.session.msg("comm_msg", data))

        for _ in range(args.repeat):
            out, _ = execute(kc, "print(*_work(N))")
            wall, others, off = map(float, out.split())
            without.append(wall)
            cpu_without.append(others)
            off_without.append(off)
            view("hello")
            time.sleep(0.5)
            drain(kc)  # the frames of the first half second are not the steady rate
            start = time.monotonic()
            out, frames = execute(kc, "print(*_work(N))")
            elapsed = time.monotonic() - start
            wall, others, off = map(float, out.split())
            with_panel.append(wall)
            cpu_with.append(others)
            off_with.append(off)
            steady = [f for f in frames if f["t"] >= start]
            sent.append((sum(f["bytes"] for f in steady) / elapsed, len(steady) / elapsed))
            view("bye")
            time.sleep(0.3)
        execute(kc, "panel.close()" + ("" if args.no_cluster else "\n%gpu_cluster stop"))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)

    base, loaded = statistics.median(without), statistics.median(with_panel)
    # each run with the panel against the run just before it without: drift cancels out
    paired = sorted(w / b - 1 for w, b in zip(with_panel, without, strict=True))
    quartiles = statistics.quantiles(paired, n=4) if len(paired) >= 2 else [paired[0]] * 3
    # CPU seconds of the kernel's other threads per second of loop, over all runs
    share_without = sum(cpu_without) / sum(without)
    share_with = sum(cpu_with) / sum(with_panel)
    off_share = [sum(off_without) / sum(without), sum(off_with) / sum(with_panel)]
    rate = statistics.median(b for b, _ in sent)
    per_second = statistics.median(f for _, f in sent)
    print(
        f"GPUs on this machine: {gpus}; {'no cluster' if args.no_cluster else 'a cluster'}; "
        f"loop of about {args.seconds:g} s, {args.repeat} runs each"
    )
    print(
        f"paired slowdown: median {100 * statistics.median(paired):+.2f}%, "
        f"interquartile range {100 * quartiles[0]:+.2f}% .. {100 * quartiles[2]:+.2f}%"
    )
    print(
        f"CPU time of the kernel's other threads per second of loop: {100 * share_without:.2f}% "
        f"without the panel, {100 * share_with:.2f}% with it; the panel's share, which bounds "
        f"what it can take from a pure-Python cell: {100 * (share_with - share_without):+.2f}%"
    )
    print(
        f"The loop's thread was off the CPU {100 * off_share[0]:.2f}% of its time without the "
        f"panel, {100 * off_share[1]:.2f}% with it: {100 * (off_share[1] - off_share[0]):+.2f}%"
    )
    print(
        "| case | median loop s | best s | slowdown | other threads' CPU | loop off CPU "
        "| frames/s | bytes/s to browser | bytes/s per GPU |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print(
        f"| no panel | {base:.4f} | {min(without):.4f} | – | {100 * share_without:.2f}% "
        f"| {100 * off_share[0]:.2f}% | – | – | – |"
    )
    per_gpu = f"{rate / gpus:,.0f}" if gpus else "– (no GPU)"
    slowdown = 100 * (loaded / base - 1)
    print(
        f"| panel, 0.25 s | {loaded:.4f} | {min(with_panel):.4f} | {slowdown:+.2f}% "
        f"| {100 * share_with:.2f}% | {100 * off_share[1]:.2f}% | {per_second:.1f} | {rate:,.0f} "
        f"| {per_gpu} |"
    )


if __name__ == "__main__":
    main()
