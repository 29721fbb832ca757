"""A workshop room on one shared machine: N student kernels press Run at once.

Each student is a real ipykernel (jupyter_client) on a machine that counts as shared, running a
notebook-02-like flow: ``%gpu_cluster start``, a pandas frame, ``%%to_gpu``, a groupby,
``%%to_cpu``, ``%gpu_cluster stop``. One student first runs the flow alone (the anchor, in the
same run); then all N kernels, already started, get the flow within the same second.

By default the instructor set nothing: no ``room-students``, so shares follow the holders present
(``--plan`` sets ``room-students`` to N instead). ``--other-accounts K`` makes K local accounts
before the room runs, ``--accounts-arriving K`` makes K more while the kernels start, as a
JupyterHub makes each student's account at their first login (both need root; they are removed
after); neither may change what anyone gets.

Printed, one table over ``--runs`` rooms (median and min–max of each figure): students that
finished, failed with the share error, or failed otherwise; holders per GPU (max − min); time to
the first result (the groupby) per student, median and p95, against the student alone in the same
room; peak memory per GPU against its capacity (NVML, sampled); and what was left after
(processes, leases, registry files, shared memory).

    python benchmarks/room.py --students 16 [--frame 512MiB] [--greedy] [--oversize] [--runs 5]
    python benchmarks/room.py --students 16 --other-accounts 1 --accounts-arriving 16
    python benchmarks/room.py --students 6 --cpu      # no GPU: CPU clusters, seam GPUs

``--greedy``: one student starts with ``--rmm-pool-size 0.9``. ``--oversize``: one student's
frame is larger than its share. Either must fail with the share error, alone. ``--cpu`` (automatic
without a GPU) places the kernels on the tests' stand-in GPUs (``--seam``, e.g. ``2:16GiB``).
The exit status is 1 when a student failed for a reason other than the share error, when a
greedy or oversize student did not get it, or when anything was left behind, in any run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

SHARE_ERROR = "your share of GPU"
#: the tests' stand-in GPUs (the room-reader option names them), for --cpu
STAND_INS = Path(__file__).resolve().parents[1] / "tests" / "stand_ins"
ROWS = 200_000


def _flow(frame_bytes: int, pool: bool) -> list[tuple[str, str]]:
    """The cells of one student, named: the first result is the groupby's."""
    rows = max(1000, frame_bytes // 16)  # two 8-byte columns
    start = "%gpu_cluster start --n-workers 1" + (" --rmm-pool-size 0.9" if pool else "")
    return [
        ("load", "%load_ext gpudask_jupyter"),
        ("start", f"client = {start}"),
        ("imports", "import numpy as np, pandas as pd"),
        (
            "to_gpu",  # the cell makes the frame: %%to_gpu moves what a cell creates
            f"%%to_gpu\ndf = pd.DataFrame({{'k': np.arange({rows}) % 100, 'x': np.ones({rows})}})",
        ),
        (
            "groupby",
            "result = df.groupby('k').x.sum()\n"
            "print('RESULT', type(result).__module__, float(result.sum()))",
        ),
        ("to_cpu", "%%to_cpu\nhost = result"),
        ("stop", "%gpu_cluster stop"),
    ]


def _run(kc: Any, code: str, timeout: float = 600) -> tuple[bool, str]:
    """(ok, everything the cell said), from its iopub messages."""
    msg_id = kc.execute(code)
    said: list[str] = []
    ok = True
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            said.append(content["text"])
        elif kind == "error":
            ok = False
            said.append(f"{content['ename']}: {content['evalue']}")
        elif kind in {"display_data", "execute_result"}:
            said.append(content["data"].get("text/plain", ""))
        elif kind == "status" and content["execution_state"] == "idle":
            break
    text = "\n".join(said)
    return ok and "UsageError:" not in text, text  # a magic's error is a UsageError: "ok"


class Student:
    def __init__(self, runtime: Path, env: dict[str, str]) -> None:
        from jupyter_client.manager import KernelManager

        kernel_id = str(uuid.uuid4())
        self.km = KernelManager(
            kernel_name="python3",
            kernel_id=kernel_id,
            connection_file=str(runtime / f"kernel-{kernel_id}.json"),
        )
        self.km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        self.km.start_kernel(env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        self.pid = self.km.provisioner.process.pid
        self.first_result: float | None = None
        self.outcome = "finished"
        self.said = ""
        self.children: set[tuple[int, float]] = set()  # (pid, start time): a pid may be reused
        self.cells: list[str] = []  # what each cell said, for a student that surprised
        self.context: int | None = None  # the kernel's GPU memory after start: its context

    def run(self, cells: list[tuple[str, str]], go: float) -> None:
        for name, code in cells:
            ok, said = _run(self.kc, code)
            self.cells.append(f"[{name}] {said}")
            self._note_children()
            if not ok:
                self.said = said
                self.outcome = "share error" if SHARE_ERROR in said else "failed"
                _run(self.kc, "%gpu_cluster stop")
                return
            if name == "start":
                self.context = _process_memory(self.pid)
            if name == "groupby":
                self.first_result = time.monotonic() - go

    def _note_children(self) -> None:
        import psutil

        try:
            found = psutil.Process(self.pid).children(recursive=True)
            self.children |= {(p.pid, p.create_time()) for p in found}
        except psutil.Error:
            pass

    def close(self) -> None:
        self.kc.stop_channels()
        if self.km.is_alive():
            self.km.shutdown_kernel(now=False)


#: seconds a kernel's processes (nannies, workers, the fork server, the undertaker) may take to
#: end after its shutdown before they count as left behind
LEFT_WITHIN = 30.0


def _left(students: list[Student]) -> list[str]:
    """The processes the students' kernels started that are still there :data:`LEFT_WITHIN`
    seconds after their kernels' shutdown (waited for, not slept on), each as ``pid command``."""
    import psutil

    running = []
    for student in students:
        for pid, started in student.children:
            try:
                process = psutil.Process(pid)
                if process.create_time() == started:  # not another process of the same pid
                    running.append(process)
            except psutil.Error:
                continue
    _, alive = psutil.wait_procs(running, timeout=LEFT_WITHIN)
    left = []
    for process in alive:
        try:
            left.append(f"{process.pid} {' '.join(process.cmdline())[:120]}")
        except psutil.Error:
            continue
    return left


class GpuPeaks(threading.Thread):
    """The most memory in use per GPU while the room runs, from NVML."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peaks: dict[str, int] = {}
        self.totals: dict[str, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        from gpudask_jupyter.machine import nvml

        while not self.done.wait(0.2):
            for sample in nvml.sample():
                if sample.memory_used is not None:
                    label = sample.uuid
                    self.peaks[label] = max(self.peaks.get(label, 0), sample.memory_used)
                    self.totals[label] = sample.memory_total or 0


def _process_memory(pid: int) -> int | None:
    """GPU memory NVML counts for process ``pid`` (None without a GPU or a context)."""
    from gpudask_jupyter.machine import nvml

    used = [p.memory_used for p in nvml.processes() if p.pid == pid and p.memory_used]
    return sum(used) if used else None


def _shm() -> set[str]:
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


def _holders(room_dir: Path) -> dict[str, int]:
    """Holders per GPU now, from the lease files."""
    from gpudask_jupyter.cluster.room import holder, placement
    from gpudask_jupyter.cluster.room.leases import RoomDir

    leases = RoomDir(room_dir).leases()
    return {d.uuid: len(placement.holders_on(leases, d.uuid)) for d in holder.room_devices()}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _accounts(names: list[str], make: bool) -> None:
    """Make (or remove) local accounts with a login shell, as a hub makes its students'."""
    import subprocess

    for name in names:
        command = ["useradd", "-M", "-s", "/bin/bash", name] if make else ["userdel", name]
        subprocess.run(command, check=make, capture_output=True)


def _room(args: argparse.Namespace, cpu: bool, run: int) -> tuple[dict[str, Any], bool]:
    """One room: the student alone, then all of them at once; its figures and whether it went
    as it must."""
    from gpudask_jupyter.text.units import parse_bytes

    work = Path(tempfile.mkdtemp(prefix="gpudask-room-bench-"))
    runtime = work / "runtime"
    runtime.mkdir(mode=0o700)
    room_dir = work / "room"
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "DASK_GPUDASK__SHARED_MACHINE": "true",
        "DASK_GPUDASK__ROOM_DIR": str(room_dir),
        "DASK_GPUDASK__ROOM_STUDENTS": str(args.students if args.plan else 0),
        "DASK_GPUDASK__ROOM_GPUS": "1",
    }
    os.environ["DASK_GPUDASK__ROOM_DIR"] = str(room_dir)
    if cpu:  # the tests' stand-in GPUs, for the kernels and for this process's readings
        sys.path.insert(0, str(STAND_INS))
        import room_gpus

        seam = room_gpus.environment(args.seam, path=env.get("PYTHONPATH", ""))
        env.update(seam)
        os.environ.update(seam)
    frame = parse_bytes(args.frame)
    shm_before = _shm()
    peaks = GpuPeaks()
    peaks.start()

    alone = Student(runtime, env)
    go = time.monotonic()
    alone.run(_flow(frame, False), go)
    alone.close()
    if alone.first_result is None:
        print(f"run {run}: the student alone failed: {alone.said}", file=sys.stderr)
        return {}, False

    arriving = [f"gpudask-bench-{run}-{i}" for i in range(args.accounts_arriving)]
    maker = threading.Thread(target=_accounts, args=(arriving, True), daemon=True)
    maker.start()  # while the kernels start, as students log in
    print(f"run {run}: starting {args.students} kernels…", file=sys.stderr, flush=True)
    with ThreadPoolExecutor(max_workers=8) as pool:
        students = list(pool.map(lambda _: Student(runtime, env), range(args.students)))
    flows = [_flow(frame, False) for _ in students]
    special: dict[int, str] = {}
    if args.greedy:
        flows[0] = _flow(frame, True)
        special[0] = "greedy"
    if args.oversize:
        share = _planned_share(args.students)
        index = 1 if args.greedy else 0
        flows[index] = _flow(int(1.2 * share), False)  # above the kernel's half, and the share
        special[index] = "oversize"
    holders_max: dict[str, int] = {}
    sampling = threading.Event()

    def sample_holders() -> None:
        while not sampling.wait(0.1):
            for uuid_, count in _holders(room_dir).items():
                holders_max[uuid_] = max(holders_max.get(uuid_, 0), count)

    watcher = threading.Thread(target=sample_holders, daemon=True)
    watcher.start()
    go = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(students)) as pool:
        list(pool.map(lambda pair: pair[0].run(pair[1], go), zip(students, flows, strict=True)))
    sampling.set()
    watcher.join()
    peaks.done.set()
    maker.join()
    for student in students:
        student.close()
    left_processes = _left([alone, *students])
    _accounts(arriving, False)
    left_leases = list(room_dir.glob("*/*.lease.json")) if room_dir.exists() else []
    # registry entries and TLS folders; the kernels' Dask log folder stays on purpose
    left_files = [
        p.name
        for p in runtime.iterdir()
        if p.name.startswith("gpudask") and p.name != "gpudask-logs"
    ]
    left_shm = sorted(name for name in _shm() - shm_before if "gpudask" in name)
    shutil.rmtree(work, ignore_errors=True)

    finished = [s for s in students if s.outcome == "finished"]
    share_errors = [i for i, s in enumerate(students) if s.outcome == "share error"]
    failed = [i for i, s in enumerate(students) if s.outcome == "failed"]
    times = [s.first_result for s in finished if s.first_result is not None]
    counts = list(holders_max.values()) or [0]
    figures: dict[str, Any] = {
        "finished": len(finished),
        "failed with the share error": len(share_errors),
        "  of them greedy or oversize": sum(1 for i in share_errors if i in special),
        "failed otherwise": len(failed),
        "holders per GPU, max − min": max(counts) - min(counts),
        "first result alone (s)": alone.first_result,
    }
    if times:
        figures["first result, median (× alone)"] = statistics.median(times) / alone.first_result
        figures["first result, p95 (× alone)"] = _percentile(times, 0.95) / alone.first_result
    for uuid_, peak in sorted(peaks.peaks.items()):
        figures[f"peak memory {uuid_[:12]} (GiB of {peaks.totals.get(uuid_, 0) / 2**30:.0f})"] = (
            peak / 2**30
        )
    figures["left: processes"] = len(left_processes)
    figures["left: leases"] = len(left_leases)
    figures["left: registry files"] = len(left_files)
    figures["left: shared memory"] = len(left_shm)
    for i in failed:
        print(f"run {run}: student {i} failed: {students[i].said[-600:]}", file=sys.stderr)
    for what in left_processes:
        print(f"run {run}: left behind: {what}", file=sys.stderr)
    for i, what in special.items():
        if students[i].outcome != "share error":
            said = "\n".join(students[i].cells)[-3000:]
            print(f"run {run}: the {what} student {i} did not get the share error:\n{said}",
                  file=sys.stderr)  # fmt: skip
    bad = bool(failed or left_processes or left_leases or left_files or left_shm)
    bad |= any(students[i].outcome != "share error" for i in special)
    bad |= len(share_errors) != len(special)
    return figures, not bad


def _shown(values: list[Any]) -> str:
    """A figure over the runs: its median and, over several runs, its spread."""
    median = statistics.median(values)
    if all(isinstance(v, int) for v in values):
        spread = f"{min(values)}–{max(values)}"
        text = f"{median:g}"
    else:
        spread = f"{min(values):.2f}–{max(values):.2f}"
        text = f"{median:.2f}"
    return text if len(values) == 1 or min(values) == max(values) else f"{text} ({spread})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=16)
    parser.add_argument("--frame", default="256MiB", help="each student's frame")
    parser.add_argument("--greedy", action="store_true", help="one student asks for a 0.9 pool")
    parser.add_argument("--oversize", action="store_true", help="one student's frame > its share")
    parser.add_argument("--plan", action="store_true", help="room-students = --students")
    parser.add_argument("--other-accounts", type=int, default=0, help="accounts made before")
    parser.add_argument("--accounts-arriving", type=int, default=0, help="made as kernels start")
    parser.add_argument("--runs", type=int, default=1, help="rooms, one after the other")
    parser.add_argument("--cpu", action="store_true", help="CPU clusters on the seam's GPUs")
    parser.add_argument("--seam", default="2:16GiB", help="with --cpu: the room's GPUs, N:SIZE")
    args = parser.parse_args()

    from gpudask_jupyter.machine import nvml

    cpu = args.cpu or not nvml.status().available
    if cpu and (args.greedy or args.oversize):
        parser.error("--greedy and --oversize need GPUs: a CPU cluster has no share to exceed")
    if (args.other_accounts or args.accounts_arriving) and os.getuid() != 0:
        parser.error("--other-accounts and --accounts-arriving make accounts: run as root")
    others = [f"gpudask-bench-other-{i}" for i in range(args.other_accounts)]
    _accounts(others, True)
    rooms = []
    try:
        for run in range(args.runs):
            figures, ok = _room(args, cpu, run)
            rooms.append((figures, ok))
            shown = ", ".join(f"{k.strip()}: {v:.2f}" if isinstance(v, float) else
                              f"{k.strip()}: {v}" for k, v in figures.items())  # fmt: skip
            print(f"run {run} ({'as it must' if ok else 'NOT as it must'}): {shown}",
                  file=sys.stderr, flush=True)  # fmt: skip
    finally:
        _accounts(others, False)
    good = all(ok for _, ok in rooms) and all(figures for figures, _ in rooms)
    runs = [figures for figures, _ in rooms if figures]
    names = list(dict.fromkeys(name for figures in runs for name in figures))
    plan = f"room-students {args.students}" if args.plan else "room-students unset"
    accounts = f", {args.other_accounts} other account(s)" if args.other_accounts else ""
    accounts += (
        f", {args.accounts_arriving} made as the kernels start" if args.accounts_arriving else ""
    )
    where = " (CPU clusters, seam GPUs)" if cpu else ""
    title = f"{args.students} students, {plan}{accounts}{where}; {len(runs)} run(s)"
    width = max([len(name) for name in names] + [len("room")])
    print(f"| {'room':<{width}} | {title} |")
    print(f"| {'-' * width} | --- |")
    for name in names:
        values = [figures[name] for figures in runs if name in figures]
        print(f"| {name:<{width}} | {_shown(values)} |")
    return 0 if good else 1


def _planned_share(students: int) -> int:
    """The share a student gets once all ``students`` hold a part of one GPU (for
    ``--oversize``): equal parts of the GPU, contexts set aside."""
    from gpudask_jupyter.cluster.room import holder, placement, shares

    devices = holder.room_devices()
    per_gpu = placement.planned_holders(students, 1, len(devices), 0)
    return shares.usable(devices[0].memory_total, per_gpu) // per_gpu


if __name__ == "__main__":
    sys.exit(main())
