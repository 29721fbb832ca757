"""The room on a real GPU, in fresh kernels (CUDA must not have started in them): a share
holds in the worker and in the kernel, a pool beyond it is refused naming it, a ``%%to_gpu``
beyond the kernel's part fails for that student alone, and the kernel is pinned to its GPU."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask.config  # noqa: F401  (see below)
import pytest
from support import kernel_factory, wait_until
from support import run_cell as run

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(300)]

# dask reads its DASK_ variables once, when first imported: imported above, before a fixture
# sets the room's for the kernels, so that this process's later tests never see them

GiB = 2**30


def _whole() -> int:
    """GPU 0's memory, by NVML (the test process starts no CUDA): the sizes below are parts of
    it, so that the tests hold on an 80 GB card as on a 141 GB one."""
    from gpudask_jupyter.machine import nvml

    return int(nvml.devices()[0].memory_total)


#: a cell's function that allocates ``n`` bytes with CuPy, in the kernel or on a worker, and
#: says "ok" or the name of what it raised
GRAB = (
    "def grab(n):\n"
    "    import cupy\n"
    "    try:\n"
    "        a = cupy.empty(n, dtype='u1'); del a; return 'ok'\n"
    "    except Exception as err:\n"
    "        return type(err).__name__\n"
)


def _gpu_memory_of_other_processes() -> str:
    """What this account's other processes hold on the GPUs, in words ("" when nothing)."""
    import os

    from gpudask_jupyter.machine import nvml

    held = [p for p in nvml.processes() if p.own and p.pid != os.getpid() and p.memory_used]
    return ", ".join(f"pid {p.pid}: {(p.memory_used or 0) >> 20} MiB" for p in held)


@pytest.fixture
def kernels(runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    # a share follows what the GPU's other processes hold: the kernels and workers of the test
    # before must have let go of theirs (a context's teardown outlives its kernel's shutdown)
    wait_until(
        lambda: not _gpu_memory_of_other_processes(),
        60,
        lambda: f"the GPU is still held by {_gpu_memory_of_other_processes()}",
        step=0.2,
    )
    monkeypatch.delenv("DASK_GPUDASK__ROOM_READER", raising=False)  # the GPUs NVML shows
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("DASK_GPUDASK__ROOM_DIR", str(tmp_path / "room"))
    monkeypatch.setenv("DASK_GPUDASK__SHARED_MACHINE", "true")
    monkeypatch.setenv("DASK_GPUDASK__ROOM_STUDENTS", "16")
    monkeypatch.setenv("DASK_GPUDASK__ROOM_GPUS", "1")  # the tests' conftest turns it off
    with kernel_factory(runtime_dir) as start:
        yield start


def _number(output: str, label: str) -> int:
    return int(output.split(f"{label} ")[1].split()[0])


def test_a_share_holds_in_the_worker_and_the_kernel(kernels: Any, tmp_path: Path) -> None:
    _, kc = kernels()
    refused = run(kc, "%load_ext gpudask_jupyter\n%gpu_cluster start --rmm-pool-size 0.9")
    assert "UsageError" in refused["output"], refused["output"]  # a UsageError: status "ok"
    assert "your share of GPU 0 is" in refused["output"], refused["output"]
    assert "Nothing was started" in refused["output"]
    assert list((tmp_path / "room").glob("*/*.lease.json")) == []  # the refused start holds none

    started = run(kc, "client = %gpu_cluster start")
    assert started["status"] == "ok", started["output"]
    assert "room: GPU 0 had nobody else" in started["output"], started["output"]
    facts = run(
        kc,
        "import os, rmm, cupy\n"
        "from gpudask_jupyter.cluster.room import caps, holder\n"
        "share = holder.this_process.current().gpus[0].share\n"
        "print('SHARE', share)\n"
        "print('PINNED', os.environ['CUDA_VISIBLE_DEVICES'].startswith('GPU-'))\n"
        # the cap, wherever it is in the chain (GPU time's statistics wrap what is current)
        "mr = rmm.mr.get_current_device_resource()\n"
        "while not hasattr(mr, 'get_allocation_limit'):\n"
        "    mr = mr.get_upstream()\n"
        "print('KERNELCAP', mr.get_allocation_limit())\n" + GRAB + "cap = caps.worker_part(share)\n"
        "print('WORKER_IN', list(client.run(grab, int(cap * 0.9)).values())[0])\n"
        "print('WORKER_OUT', list(client.run(grab, int(cap * 1.1)).values())[0])\n"
        "kcap = caps.kernel_part(share)\n"
        "print('KERNEL_IN', grab(int(kcap * 0.9)))\n"
        "print('KERNEL_OUT', grab(int(kcap * 1.1)))\n",
    )
    out = facts["output"]
    assert facts["status"] == "ok", out
    share = _number(out, "SHARE")
    # 16 students planned on one GPU: a sixteenth of it, two contexts (512 MiB each) set aside
    assert _whole() / 16 - 1.5 * GiB < share <= _whole() / 16 - GiB, out
    assert "PINNED True" in out
    assert _number(out, "KERNELCAP") == share // 2
    assert "WORKER_IN ok" in out and "WORKER_OUT ok" not in out, out
    assert "KERNEL_IN ok" in out and "KERNEL_OUT ok" not in out, out

    failed = run(  # %%to_gpu moves what the cell makes: a frame above the kernel's half
        kc,
        "%%to_gpu\n"
        "import numpy as np, pandas as pd\n"
        "df = pd.DataFrame({'x': np.ones(int(share * 0.6) // 8)})\n"
        "small = pd.DataFrame({'x': np.ones(1000)})",
    )
    assert "your share of GPU 0 is" in failed["output"], failed["output"]
    assert "del GPU objects" not in failed["output"]
    kept = run(kc, "print('KIND', type(df).__module__, type(small).__module__)")
    assert "KIND pandas" in kept["output"] and kept["output"].count("pandas") == 2  # nothing moved
    moved = run(kc, "%%to_gpu\nsmall = pd.DataFrame({'x': np.ones(1000)})")
    assert moved["status"] == "ok", moved["output"]
    where = run(kc, "print('OK', type(small).__module__)")
    assert "OK cudf" in where["output"], where["output"]
    run(kc, "%gpu_cluster stop")


def test_two_kernels_of_one_student_on_one_gpu_share_that_students_part(
    kernels: Any,
) -> None:
    """Both kernels are of this account: the room counts one student with two kernels, each
    holding half of the student's part (students of other accounts: the hub's CPU tests)."""
    _, first = kernels()
    _, second = kernels()
    for kc in (first, second):
        reply = run(kc, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start")
        assert reply["status"] == "ok", reply["output"]
    room = run(first, "%gpu_cluster room")["output"]
    assert "The room: 1 GPU(s), 1 student(s), 2 kernel(s)" in room, room
    assert "you: 2 kernels" in room and "your kernels share your part" in room, room
    assert "you (kernel" in room


@pytest.fixture
def no_plan(kernels: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The room as an instructor who set nothing leaves it: shares follow the holders."""
    monkeypatch.setenv("DASK_GPUDASK__ROOM_STUDENTS", "0")
    return kernels


PROBE = "import time\nfrom gpudask_jupyter.cluster.room import caps, holder\n" + GRAB
SENTENCE = "Out of GPU memory under your share: your share of GPU 0 on this shared machine is"


def test_shares_follow_the_students_present_and_name_themselves_when_exceeded(
    no_plan: Any,
) -> None:
    """Alone, a student may take nearly the whole GPU; a second student's arrival halves what
    the first may take, in its kernel and its worker, within seconds; an allocation beyond the
    share, a plain CuPy one, a cuDF merge or one in a worker's task, names the share."""
    _, first = no_plan()
    started = run(first, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start\n" + PROBE)
    assert started["status"] == "ok", started["output"]
    assert "It is an equal part of what the GPU's holders do not hold" in started["output"]
    alone = run(first, "print('SHARE', holder.this_process.current_share())")["output"]
    whole = _number(alone, "SHARE")
    assert whole > _whole() * 0.85, alone  # the whole GPU, contexts set aside
    big = int(whole * 0.45)
    said = run(first, f"print('W', list(client.run(grab, {big}).values())[0], grab({big}))")
    assert "W ok ok" in said["output"], said["output"]  # both halves may take 45% of the GPU

    _, second = no_plan()
    joined = run(second, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start\n" + PROBE)
    assert joined["status"] == "ok", joined["output"]
    assert "GPU 0 had 1 other kernel(s)" in joined["output"], joined["output"]
    waited = run(
        first,
        "end = time.time() + 10\n"
        "while (caps.this_process.cap() > holder.this_process.current_share() // 2 + 1\n"
        "       and time.time() < end):\n"
        "    time.sleep(0.2)\n"
        "time.sleep(2.5)  # the worker looks every second too\n"
        "print('NOW', holder.this_process.current_share())\n"
        f"print('W', list(client.run(grab, {big}).values())[0], grab({big}))",
    )
    out = waited["output"]
    assert whole // 2 - GiB < _number(out, "NOW") <= whole // 2 + GiB, out
    assert "W MemoryError MemoryError" in out, out  # 45% of the GPU no longer fits either half

    share = _number(
        run(second, "print('SHARE', holder.this_process.current_share())")["output"], "SHARE"
    )
    plain = run(second, f"import cupy\nx = cupy.empty({share}, dtype='u1')")
    assert SENTENCE in plain["output"], plain["output"]
    assert "Exceeded memory limit" in plain["output"]  # RMM's own line stays, not alone
    rows = int(share * 0.3) // 16
    merge = run(
        second,
        "import cudf\n"
        f"a = cudf.DataFrame({{'k': cupy.zeros({rows}, dtype='i8'), 'x': cupy.ones({rows})}})\n"
        "b = a.merge(a, on='k')",
    )
    assert SENTENCE in merge["output"], merge["output"]
    run(second, "del a")
    task = run(
        second,
        "def hold(n):\n"
        "    import cupy\n"
        "    return cupy.empty(n, dtype='u1').nbytes\n"
        f"client.submit(hold, {share}).result()",
    )
    assert SENTENCE in task["output"] and "for its worker" in task["output"], task["output"]
    for kc in (first, second):
        run(kc, "%gpu_cluster stop")


def test_a_lone_root_beside_an_idle_ubuntu_account_gets_the_whole_gpu_and_the_dashboard(
    kernels: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root in an image with an ``ubuntu`` login account nobody uses, ``shared-machine``
    left at ``auto``: not shared, so the cluster has its dashboard and nothing caps the GPU."""
    import pwd
    import subprocess

    monkeypatch.setenv("DASK_GPUDASK__SHARED_MACHINE", "auto")
    made = False
    try:
        pwd.getpwnam("ubuntu")
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/bash", "ubuntu"], check=True)
        made = True
    try:
        _, kc = kernels()
        started = run(kc, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start")
        out = started["output"]
        assert started["status"] == "ok", out
        assert "room:" not in out and "other people use this machine" not in out, out
        assert "dashboard: http://" in out, out
        most = int(_whole() * 0.7)
        grabbed = run(kc, f"import cupy\nx = cupy.empty({most}, dtype='u1')\nprint('OK')")
        assert "OK" in grabbed["output"], grabbed["output"]  # far beyond a quarter of the GPU
        run(kc, "del x\n%gpu_cluster stop")
    finally:
        if made:
            subprocess.run(["userdel", "ubuntu"], check=False)


HOLD = "def hold(n):\n    import cupy\n    return cupy.empty(n, dtype='u1')\n"


def test_the_newest_holder_leaving_leaves_a_share_that_can_be_allocated_in_full(
    no_plan: Any,
) -> None:
    """A holds 70% of the GPU (half in its kernel, half on its worker); B and C arrive, C leaves:
    B's share is what A does not hold, and B allocates up to its caps, kernel and worker, without
    a raw out-of-memory."""
    half = int(_whole() * 0.35)
    _, a = no_plan()
    assert (
        run(a, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start\n" + PROBE)["status"] == "ok"
    )
    held = run(
        a,
        HOLD + f"import cupy\nmine = cupy.empty({half}, dtype='u1')\n"
        f"theirs = client.submit(hold, {half})\nprint('A', theirs.result().nbytes)",
    )
    assert f"A {half}" in held["output"], held["output"]
    _, b = no_plan()
    _, c = no_plan()
    for kc in (b, c):
        assert (
            run(kc, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start\n" + PROBE)["status"]
            == "ok"
        )
    run(
        c,
        "%gpu_cluster stop\nfrom gpudask_jupyter.cluster.room import holder\n"
        "holder.this_process.release()",
    )
    out = run(
        b,
        "end = time.time() + 20\n"
        "before = holder.this_process.current_share()\n"
        "while holder.this_process.current_share() == before and time.time() < end:\n"
        "    time.sleep(0.2)\n"
        "time.sleep(2.5)  # the worker looks every second too\n"
        "share = holder.this_process.current_share()\n"
        "print('SHARE', share)\n"
        "print('K', grab(int(caps.kernel_part(share) * 0.95)))\n"
        "print('W', list(client.run(grab, int(caps.worker_part(share) * 0.95)).values())[0])",
    )["output"]
    share = _number(out, "SHARE")
    assert share < _whole() * 0.32, out  # what A does not hold, less the contexts
    assert "K ok" in out and "W ok" in out, out
    for kc in (a, b):
        run(kc, "%gpu_cluster stop")


def test_a_spread_frame_counts_in_the_workers_share(no_plan: Any) -> None:
    _, kc = no_plan()
    assert (
        run(kc, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start\n" + PROBE)["status"]
        == "ok"
    )
    out = run(
        kc,
        "share = holder.this_process.current_share(); part = caps.worker_part(share)\n"
        "import numpy as np, pandas as pd\n"
        "frame = pd.DataFrame({'x': np.ones(int(part * 0.6) // 8)})\n"
        "from gpudask_jupyter import to_gpu\n"
        "spread = to_gpu(frame, distribute=True)\n"
        "def counted():\n"
        "    from gpudask_jupyter.cluster.room.allocator import process_cap\n"
        "    return process_cap.get().held()\n"
        "print('HELD', list(client.run(counted).values())[0], int(part * 0.6))\n"
        "print('MORE', list(client.run(grab, int(part * 0.6)).values())[0])",
    )["output"]
    assert "HELD " in out, out
    held = out.split("HELD ")[1].split()
    assert int(held[0]) >= int(held[1]) * 0.95, out
    assert "MORE MemoryError" in out, out  # the block is in the worker's share
    run(kc, "%gpu_cluster stop")


def test_a_pool_under_an_elastic_share_keeps_the_cap(no_plan: Any) -> None:
    _, kc = no_plan()
    started = run(
        kc, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start --rmm-pool-size 2GiB\n" + PROBE
    )
    assert started["status"] == "ok", started["output"]
    out = run(
        kc,
        "def resource():\n"
        "    import rmm\n"
        "    r = rmm.mr.get_current_device_resource()\n"
        "    return type(r).__name__, type(r.get_upstream()).__name__, r.get_allocation_limit()\n"
        "print('R', *list(client.run(resource).values())[0])\n"
        "part = caps.worker_part(holder.this_process.current_share())\n"
        "print('OUT', list(client.run(grab, int(part * 1.1)).values())[0])",
    )["output"]
    assert "R LimitingResourceAdaptor PoolMemoryResource" in out, out
    assert "OUT MemoryError" in out, out
    run(kc, "%gpu_cluster stop")


def test_plain_cudf_in_a_cell_before_any_magic_is_placed_and_capped(no_plan: Any) -> None:
    _, kc = no_plan()
    out = run(
        kc,
        "%load_ext gpudask_jupyter\n"
        "import os, cudf, rmm\n"
        "from gpudask_jupyter.cluster.room import caps, holder\n"
        "lease = holder.this_process.current()\n"
        "print('PINNED', os.environ.get('CUDA_VISIBLE_DEVICES') == lease.gpus[0].uuid)\n"
        "print('CAP', rmm.mr.get_current_device_resource().get_allocation_limit(),"
        " caps.kernel_part(lease.gpus[0].share))",
    )["output"]
    assert "PINNED True" in out, out
    cap = out.split("CAP ")[1].split()
    assert cap[0] == cap[1], out


def test_one_students_four_kernels_divide_that_students_part(no_plan: Any) -> None:
    """One account, four notebooks each with a cluster: the room counts one student and four
    kernels, and the four shares together are what one student alone would get, not four."""
    _, first = no_plan()
    alone = run(first, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start\n" + PROBE)
    assert alone["status"] == "ok", alone["output"]
    whole = _number(
        run(first, "print('SHARE', holder.this_process.current_share())")["output"], "SHARE"
    )
    others = [no_plan()[1] for _ in range(3)]
    for kc in others:
        started = run(kc, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start\n" + PROBE)
        assert started["status"] == "ok", started["output"]
    wait = (
        "end = time.time() + 20\n"
        "while holder.this_process.current_share() > {limit} and time.time() < end:\n"
        "    time.sleep(0.2)\n"
        "print('SHARE', holder.this_process.current_share())"
    )
    shares = [
        _number(run(kc, wait.format(limit=whole // 4 + GiB))["output"], "SHARE")
        for kc in [first, *others]
    ]
    # each kernel's CUDA contexts (kernel and worker) are set aside from the whole: four
    # kernels' shares add up to at most what one alone got, and to no less than that less
    # three more kernels' contexts (2 GiB at most each)
    assert sum(shares) <= whole + GiB, shares
    assert sum(shares) >= whole - 6 * GiB, shares
    assert max(shares) - min(shares) <= GiB, shares
    room = run(first, "%gpu_cluster room")["output"]
    assert "1 student(s), 4 kernel(s)" in room, room
    assert "you: 4 kernels" in room, room
    for kc in [first, *others]:
        run(kc, "%gpu_cluster stop")
