"""The room with real kernels (jupyter_client) on a shared machine without GPUs: the GPU
inventory comes through the room's test seam, the clusters are CPU clusters, the leases are
real. Placement, the start's summary, ``%gpu_cluster room``, stop, and a kernel killed with -9."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from room_locks import StandIn
from support import run_cell as run

from gpudask_jupyter.cluster.room import holding, leases, measure, reading

START = "%load_ext gpudask_jupyter\n%gpu_cluster start --n-workers 1 --memory-limit 1GB"


def _memory(devices: Any, listing: dict[int, int], gpu: int = 0) -> dict[str, Any]:
    """The seam's GPUs as NVML would show them: ``listing`` (pid: bytes) on GPU ``gpu``."""
    out = {d.uuid: holding.GpuMemory(d.uuid, d.memory_total, 0, {}) for d in devices}
    uuid = devices[gpu].uuid
    out[uuid] = holding.GpuMemory(uuid, devices[gpu].memory_total, sum(listing.values()), listing)
    return measure.traced(out)


def _lease_files(room: Path) -> list[Path]:
    return sorted(room.glob(f"*/*{leases.SUFFIX}"))


def test_students_spread_over_the_gpus_and_see_their_share(kernels: Any, room_env: Path) -> None:
    _, first = kernels()
    _, second = kernels()
    one = run(first, START)
    assert one["status"] == "ok", one["output"]
    assert "room: GPU 0 had nobody else" in one["output"], one["output"]
    # planned for 2 holders a GPU (4 students, 2 GPUs): half of 16 GiB, two contexts set aside;
    # the seam's CPU cluster: its workers take no part of it, and the line says so
    assert (
        "Your share of GPU 0: 7 GiB (3.5 GiB for this kernel's own GPU work; its workers are "
        "CPU workers and take none)" in one["output"]
    ), one["output"]
    two = run(second, START)
    assert "room: GPU 1 had nobody else" in two["output"], two["output"]
    room = run(first, "%gpu_cluster room")
    out = room["output"]
    assert "The room: 2 GPU(s), 1 student(s), 2 kernel(s)" in out, out
    assert "you" in out and "you (kernel" in out  # the same user's other kernel
    assert len(_lease_files(room_env)) == 2
    stopped = run(first, "%gpu_cluster stop")
    assert "Cluster stopped" in stopped["output"]
    assert len(_lease_files(room_env)) == 1  # the first kernel's share ended with its cluster
    again = run(first, "%gpu_cluster start --n-workers 1 --memory-limit 1GB")
    assert "room: GPU 0 had nobody else" in again["output"], again["output"]


def test_a_kernel_killed_with_9_leaves_a_lease_the_next_start_reclaims(
    kernels: Any, room_env: Path
) -> None:
    km, kc = kernels()
    assert run(kc, START)["status"] == "ok"
    files = _lease_files(room_env)
    assert len(files) == 1
    os.kill(km.provisioner.process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while km.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    _, other = kernels()
    out = run(other, START)["output"]
    assert "room: GPU 0 had nobody else" in out, out  # the dead kernel's GPU is free again
    assert not files[0].exists()  # and its lease (this user's) is gone


def test_the_kernels_shutdown_ends_its_lease(kernels: Any, room_env: Path) -> None:
    km, kc = kernels()
    assert run(kc, START)["status"] == "ok"
    assert len(_lease_files(room_env)) == 1
    km.shutdown_kernel(now=False)
    assert _lease_files(room_env) == []


@pytest.mark.usefixtures("room_env")
def test_a_student_sees_others_as_counts_and_an_instructor_sees_names() -> None:
    from gpudask_jupyter.cluster.room import holder
    from gpudask_jupyter.machine import processes

    devices = holder.room_devices()
    now = time.time()
    me = processes.process_started(os.getpid()) or 0
    own = leases.Lease(
        os.getuid(), "me", os.getpid(), me, "k", [leases.Share(devices[0].uuid, 0, 2**30)], now, now
    )
    other = leases.Lease(
        os.getuid() + 1,
        "alice",
        3999999,
        0,
        "k2",
        [leases.Share(devices[0].uuid, 0, 2**30)],
        now,
        0.0,
    )
    import dask.config

    used = _memory(devices, {3999999: 3 * 2**30})  # alice: above her share
    with dask.config.set({"gpudask.room-students": 4}):  # the plan: shares as the leases say
        student = reading.build(devices, [own, other], used, now, False, "room")
        teacher = reading.build(devices, [own, other], used, now, True, "room")
    text = str(reading.table(student))
    assert "alice" not in text and "1 other student(s)" in text
    assert "1 idle, 1 above their share" in text
    assert "alice" in str(reading.table(teacher))
    assert "above the share, idle" in str(reading.table(teacher))

    with dask.config.set({"gpudask.room-names": "teacher,bob"}):
        assert reading.sees_names("bob") and not reading.sees_names("alice")


def test_the_lease_keeps_the_time_of_the_clusters_last_work(
    room_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dask.config
    from distributed import Client, LocalCluster

    from gpudask_jupyter import compat
    from gpudask_jupyter.cluster.room import holder

    for pinned in ("CUDA_VISIBLE_DEVICES", "CUPY_GPU_MEMORY_LIMIT"):  # the lease pins this process
        monkeypatch.delenv(pinned, raising=False)  # and monkeypatch puts them back after
    with dask.config.set({"gpudask.room-dir": str(room_env)}):
        held = holder.this_process.take(holder.room_devices(), None, None)
        try:
            lease = held.lease
            lease.active = time.time() - 3600  # as if the holder had not worked for an hour
            holder.this_process.note_activity(
                force=False
            )  # not yet 30 s since the last write: nothing changes
            with (
                LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster,
                Client(cluster) as client,
            ):
                before = time.time()
                client.submit(time.sleep, 0.5).result()
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    idle = client.run_on_scheduler(
                        lambda dask_scheduler: compat.idle_since(dask_scheduler)
                    )
                    if idle is not None and idle >= before:
                        break
                    time.sleep(0.1)
                assert idle is not None and idle >= before + 0.4  # when the task ended
                holder.this_process.watch(lambda: idle, every=0.05)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and lease.active < before:
                    time.sleep(0.05)
            on_disk = leases.lease_from_json(lease.path.read_bytes())  # type: ignore[union-attr]
            assert abs(on_disk.active - idle) < 0.01
        finally:
            holder.this_process.release()
    assert holder.this_process.current() is None and _lease_files(room_env) == []


@pytest.mark.usefixtures("room_env")
def test_the_room_shows_each_holders_share_of_the_gpus_multiprocessors() -> None:
    from gpudask_jupyter.cluster.room import holder
    from gpudask_jupyter.machine import processes

    devices = holder.room_devices()
    now = time.time()
    me = processes.process_started(os.getpid()) or 0
    own = leases.Lease(
        os.getuid(), "me", os.getpid(), me, "k", [leases.Share(devices[1].uuid, 1, 2**30)], now, now
    )
    busy = {(devices[1].uuid, os.getpid()): 37}
    memory = measure.traced(_memory(devices, {}), [own], {devices[1].uuid: [os.getpid()]})
    room = reading.build(devices, [own], memory, now, False, "room", busy)
    assert room.gpus[1].holdings[0].utilization == 37
    assert "37% busy" in str(reading.table(room))


def test_out_of_memory_on_a_shared_gpu_says_who_holds_it_instead_of_advising_del(
    room_env: Path,
) -> None:

    import dask.config

    from gpudask_jupyter.cluster import room
    from gpudask_jupyter.cluster.room import holder
    from gpudask_jupyter.cluster.room.leases import RoomDir
    from gpudask_jupyter.machine import processes

    other = StandIn()  # another kernel, holding its lease's lock
    try:
        started = None
        while started is None:
            started = processes.process_started(other.pid)
        device = holder.room_devices()[0]
        now = time.time()
        directory = RoomDir(room_env)
        assert directory.prepare()
        other.hold(directory.folder())
        directory.write(
            leases.Lease(
                os.getuid(),
                "me",
                other.pid,
                started,
                "k2",
                [leases.Share(device.uuid, 0, 2**30)],
                now,
                now,
            )
        )
        with dask.config.set({"gpudask.room-dir": str(room_env)}):
            said = room.out_of_memory("it needs about 3 GiB")
        assert said is not None
        cause, hint = said
        assert "this GPU is shared with other people (GPU 0: 1 kernel(s) of the room)" in cause
        assert "%gpu_cluster room" in hint and "del" not in hint
    finally:
        other.stop()


def test_gpus_by_hand_are_leased_and_a_crowded_one_is_said(
    room_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    import dask.config

    from gpudask_jupyter.cluster.room import holder
    from gpudask_jupyter.cluster.room.leases import RoomDir
    from gpudask_jupyter.machine import processes

    for pinned in ("CUDA_VISIBLE_DEVICES", "CUPY_GPU_MEMORY_LIMIT"):
        monkeypatch.delenv(pinned, raising=False)
    devices = holder.room_devices()
    others = [StandIn() for _ in "ab"]  # two other kernels, holding their leases' locks
    try:
        directory = RoomDir(room_env)
        assert directory.prepare()
        for other in others:  # two students on GPU 0 already: its plan (4 over 2 GPUs) is 2
            started = None
            while started is None:
                started = processes.process_started(other.pid)
            now = time.time()
            share = leases.Share(devices[0].uuid, 0, 2**30)
            other.hold(directory.folder())
            directory.write(
                leases.Lease(os.getuid(), "me", other.pid, started, "k", [share], now, now)
            )
        # the instructor's plan (room_env's, set here too: dask may have read the environment
        # before the fixture set it)
        with dask.config.set({"gpudask.room-dir": str(room_env), "gpudask.room-students": 4}):
            held = holder.this_process.take(devices, [devices[0]], None)
            try:
                assert [d.uuid for d in held.devices] == [devices[0].uuid]
                said = holder.describe(held)
                assert "GPU 0 had 2 other kernel(s) (as --gpus named it)" in said, said
                assert (
                    "Note: GPU 0 already has 2 holders; with this kernel 3, more than the 2" in said
                )
            finally:
                holder.this_process.release()
    finally:
        for other in others:
            other.stop()


@pytest.mark.usefixtures("room_env")
def test_a_holders_memory_counts_every_process_below_its_kernel() -> None:
    """Workers run under nannies under the kernel: memory NVML lists for a grandchild of the
    lease's kernel is the holder's; a process outside the tree is not."""
    import subprocess
    import sys

    import psutil

    from gpudask_jupyter.cluster.room import holder
    from gpudask_jupyter.machine import processes

    grandchild = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(p.pid, flush=True); time.sleep(60)"
    )
    kernel = subprocess.Popen([sys.executable, "-c", grandchild], stdout=subprocess.PIPE, text=True)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        worker = int(kernel.stdout.readline())  # type: ignore[union-attr]
        devices = holder.room_devices()
        now = time.time()
        started = processes.process_started(kernel.pid) or 0
        lease = leases.Lease(
            os.getuid(),
            "me",
            kernel.pid,
            started,
            "k",
            [leases.Share(devices[0].uuid, 0, 2**30)],
            now,
            now,
        )
        listing = _memory(devices, {worker: 300 * 2**20, stranger.pid: 700 * 2**20})
        room = reading.build(devices, [lease], listing, now, False, "room")
        assert room.gpus[0].holdings[0].used == 300 * 2**20
    finally:
        for below in psutil.Process(kernel.pid).children(recursive=True):
            below.kill()
        for process in (kernel, stranger):
            process.kill()
            process.wait()
