"""%gpu_cluster on real GPUs: one worker per GPU, bound to it, with the options taking effect."""

from __future__ import annotations

import os

import pytest
from IPython.core.error import UsageError
from support import spawned_workers, this_kernel, wait_gone

from gpudask_jupyter.cluster import connect
from gpudask_jupyter.machine import gpus, nvml

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(300)]


def _context_uuid() -> dict[str, object]:
    """Runs in a worker: the UUID of the device its CUDA context is on, and its allocator."""
    import os

    import cupy
    import pynvml

    # by PCI address: CuPy's properties give the UUID as a C string, cut at its first zero byte
    cupy.cuda.runtime.setDevice(0)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByPciBusId(cupy.cuda.Device(0).pci_bus_id.encode())
    uuid = pynvml.nvmlDeviceGetUUID(handle)
    uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
    try:
        import rmm

        resource = type(rmm.mr.get_current_device_resource()).__name__
    except ImportError:
        resource = "no rmm"
    return {"uuid": uuid, "cvd": os.environ.get("CUDA_VISIBLE_DEVICES"), "resource": resource}


def _by_uuid() -> dict[str, nvml.Device]:
    return {d.uuid: d for d in nvml.devices()}


def _usable() -> list[nvml.Device]:
    """The GPUs this process may hand to workers (it may run with CUDA_VISIBLE_DEVICES set)."""
    visible = gpus.visible(nvml.devices(), os.environ.get("CUDA_VISIBLE_DEVICES"))
    return [d for d in visible if not d.is_mig]


def test_one_worker_per_gpu_each_bound_to_its_own(shell, capsys) -> None:
    devices = _usable()
    client = shell.run_line_magic("gpu_cluster", "start")
    out = capsys.readouterr().out
    assert f"GPU Dask cluster: {len(devices)} worker" in out
    assert devices[0].name in out
    seen = client.run(_context_uuid)
    uuids = [info["uuid"] for info in seen.values()]
    assert sorted(uuids) == sorted(d.uuid for d in devices)  # every GPU once, none twice
    for info in seen.values():
        device = _by_uuid()[info["uuid"]]
        assert str(info["cvd"]).split(",")[0] == str(device.index)
    assert len(spawned_workers()) == len(devices)


def test_gpus_subset_by_index_and_uuid(shell) -> None:
    devices = _usable()
    last = devices[-1]
    client = shell.run_line_magic("gpu_cluster", f"start --gpus {last.index}")
    (info,) = client.run(_context_uuid).values()
    assert info["uuid"] == last.uuid
    shell.run_line_magic("gpu_cluster", "stop")
    client = shell.run_line_magic("gpu_cluster", f"start --gpus {devices[0].uuid}")
    (info,) = client.run(_context_uuid).values()
    assert info["uuid"] == devices[0].uuid


def test_missing_gpu_index_is_refused(shell) -> None:
    count = len(nvml.devices())
    first = _usable()[0].index
    with pytest.raises(UsageError, match=f"no GPU {count + 3} on this machine"):
        shell.run_line_magic("gpu_cluster", f"start --gpus {count + 3}")
    with pytest.raises(UsageError, match="only 1 GPU"):
        shell.run_line_magic("gpu_cluster", f"start --gpus {first} --n-workers 2")
    assert spawned_workers() == []


def test_rmm_pool_takes_effect_and_shows_in_memory(shell) -> None:
    device = _usable()[0]
    before = {s.uuid: s.memory_used for s in nvml.sample()}[device.uuid]
    client = shell.run_line_magic(
        "gpu_cluster", f"start --gpus {device.index} --rmm-pool-size 4GiB"
    )
    (info,) = client.run(_context_uuid).values()
    assert info["resource"] in {"PoolMemoryResource", "TrackingResourceAdaptor"}, info
    after = {s.uuid: s.memory_used for s in nvml.sample()}[device.uuid]
    assert after - before >= 4 * 2**30


def test_rmm_async_takes_effect(shell) -> None:
    client = shell.run_line_magic("gpu_cluster", f"start --gpus {_usable()[0].index} --rmm-async")
    (info,) = client.run(_context_uuid).values()
    assert info["resource"] == "CudaAsyncMemoryResource", info


def test_status_shows_heartbeat_gpu_figures_and_scale(shell, capsys) -> None:
    devices = _usable()
    client = shell.run_line_magic("gpu_cluster", "start")
    client.run(_context_uuid)
    capsys.readouterr()
    shell.run_line_magic("gpu_cluster", "status")
    out = capsys.readouterr().out
    assert "GPU cluster at tls://127.0.0.1:" in out  # TLS, the default
    assert devices[0].name in out and "%" in out
    with pytest.raises(UsageError, match=f"this cluster has {len(devices)} GPU"):
        shell.run_line_magic("gpu_cluster", f"scale {len(devices) + 1}")
    shell.run_line_magic("gpu_cluster", "scale 1")
    assert len(client.scheduler_info()["workers"]) == 1
    shell.run_line_magic("gpu_cluster", "restart")
    assert len(client.scheduler_info()["workers"]) == 1


def _cupy_sum(n: int) -> float:
    import cupy

    return float(cupy.arange(n, dtype=cupy.float64).sum().get())


def test_each_gpu_worker_advertises_one_gpu_and_gpu_tasks_run(shell, capsys) -> None:
    devices = _usable()
    client = shell.run_line_magic("gpu_cluster", "start")
    assert client.scheduler.address.startswith("tls://")
    assert "resources" in capsys.readouterr().out  # the summary shows them
    workers = client.scheduler_info(n_workers=-1)["workers"]
    assert [w["resources"] for w in workers.values()] == [{"GPU": 1}] * len(devices)
    futures = [client.submit(_cupy_sum, 1000, resources={"GPU": 1}, pure=False) for _ in range(4)]
    assert client.gather(futures, errors="raise") == [499500.0] * 4


def test_resources_option_changes_and_adds(shell) -> None:
    device = _usable()[0]
    client = shell.run_line_magic(
        "gpu_cluster", f"start --gpus {device.index} --resources GPU=2,MEM=2e9"
    )
    (worker,) = client.scheduler_info(n_workers=-1)["workers"].values()
    assert worker["resources"] == {"GPU": 2, "MEM": 2e9}
    future = client.submit(_cupy_sum, 10, resources={"GPU": 2, "MEM": 1e9})
    assert future.result(timeout=60) == 45.0


def test_stop_frees_every_worker(shell) -> None:
    shell.run_line_magic("gpu_cluster", "start")
    workers = spawned_workers()
    assert workers
    shell.run_line_magic("gpu_cluster", "stop")
    assert wait_gone(workers) == []
    assert this_kernel().current() is None


FIRST_START = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "gpudask_jupyter")
client = ip.run_line_magic("gpu_cluster", "start")

def facts():
    import os, sys
    import cupy
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:  # forked from the fork server
        ahead = b"from multiprocessing.forkserver import main" in f.read().replace(b"\\0", b" ")
    x = cupy.arange(10, dtype=cupy.float64)
    return {"ahead": ahead, "cvd": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "seen": cupy.cuda.runtime.getDeviceCount(), "sum": float(x.sum()),
            "pci": cupy.cuda.Device(0).pci_bus_id}

seen = list(client.run(facts).values())
ip.run_line_magic("gpu_cluster", "stop")
print(json.dumps(seen))
"""


def test_a_first_start_forks_gpu_workers_from_the_fork_server() -> None:
    """In a fresh interpreter (a fresh kernel): each GPU worker is forked from the fork server,
    which imported dask-cuda and cuDF before any GPU was named, yet uses CUDA and is bound to its
    own GPU alone."""
    import json
    import subprocess
    import sys

    devices = _usable()
    # a fresh kernel's environment: an earlier cluster of this process set dask-cuda's variable
    fresh = {k: v for k, v in os.environ.items() if k not in connect.GPU_CLUSTER_ENVIRON}
    out = subprocess.run(
        [sys.executable, "-c", FIRST_START], capture_output=True, text=True, timeout=240, env=fresh
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert [w["ahead"] for w in seen] == [True] * len(devices), out.stderr[-3000:]
    assert all(w["sum"] == 45.0 for w in seen)
    by_index = {str(d.index): d for d in devices}
    firsts = [w["cvd"].split(",")[0] for w in seen]
    assert sorted(firsts) == sorted(by_index)  # every GPU once
    assert len({w["pci"] for w in seen}) == len(devices)


HIDDEN_AFTER = """
import importlib, json, os, sys
os.environ.pop("CUDA_VISIBLE_DEVICES", None)
import cupy
if sys.argv[1] == "touch":
    cupy.cuda.runtime.getDeviceCount()  # the control: CUDA initialised before the GPU is named
for name in sys.argv[2:]:
    importlib.import_module(name)
os.environ["CUDA_VISIBLE_DEVICES"] = ""  # as a worker's GPU is named: after the imports
try:
    seen = cupy.cuda.runtime.getDeviceCount()
except cupy.cuda.runtime.CUDARuntimeError:
    seen = 0
print(json.dumps({"seen": seen, "imported": [n for n in sys.argv[2:] if n in sys.modules]}))
"""


def test_what_a_gpu_worker_imports_ahead_leaves_its_gpu_to_be_named() -> None:
    """The fork server imports before any nanny names its worker's GPU in CUDA_VISIBLE_DEVICES,
    which CUDA reads once, as it initialises: none of those imports may initialise it (a
    process forked after its parent initialised CUDA cannot use it at all). Naming no GPU
    after them leaves the interpreter none; the control, a CUDA call before the naming,
    keeps every GPU, so the check can see an early initialisation."""
    import json
    import subprocess
    import sys

    def seen(how: str, *modules: str) -> dict[str, object]:
        out = subprocess.run(
            [sys.executable, "-c", HIDDEN_AFTER, how, *modules],
            capture_output=True,
            text=True,
            timeout=240,
            env={**os.environ, **connect.GPU_CLUSTER_ENVIRON},  # as they are launched
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return dict(json.loads(out.stdout.strip().splitlines()[-1]))

    ahead = seen("imports", *connect.GPU_WORKER_MODULES)
    assert ahead == {"seen": 0, "imported": list(connect.GPU_WORKER_MODULES)}
    assert seen("touch")["seen"] >= 1
