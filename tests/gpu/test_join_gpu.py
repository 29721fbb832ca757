"""``%gpu_cluster join`` on real GPUs: a scheduler in another process gets one worker per GPU of
this machine, each bound to the GPU it is named after, that runs CuPy tasks asking for a GPU;
``leave`` leaves no process."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from support import DaskProcesses, spawned_workers, this_kernel, wait_gone

from gpudask_jupyter.cluster import worker_probe
from gpudask_jupyter.cluster.kinds import Joined
from gpudask_jupyter.machine import gpus, nvml

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(300)]


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[DaskProcesses]:
    """A CPU ``dask scheduler`` without workers of its own, in another process."""
    processes = DaskProcesses(tmp_path, workers=0)
    try:
        yield processes
    finally:
        processes.close()


@pytest.fixture(autouse=True)
def functions_by_value() -> Iterator[None]:
    """The scheduler unpickles the tasks it is sent and cannot import this module."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _device_uuid() -> Callable[[], str]:
    """What runs on a worker, as a local function: plain pickle refuses it, so distributed sends
    it by value (a module-level one would go by reference, and the worker cannot import this
    test module)."""

    def device_uuid() -> str:
        """Runs on a worker: the UUID of the GPU its CUDA device 0 is, by PCI address, after a CuPy
        computation on it."""
        import cupy
        import pynvml

        assert float(cupy.arange(1000, dtype=cupy.float64).sum().get()) == 499500.0
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByPciBusId(cupy.cuda.Device(0).pci_bus_id.encode())
        uuid = pynvml.nvmlDeviceGetUUID(handle)
        return uuid.decode() if isinstance(uuid, bytes) else str(uuid)

    return device_uuid


def _rmm_resource() -> str:
    import rmm

    return type(rmm.mr.get_current_device_resource()).__name__


def _usable() -> list[nvml.Device]:
    visible = gpus.visible(nvml.devices(), os.environ.get("CUDA_VISIBLE_DEVICES"))
    return [d for d in visible if not d.is_mig]


def _children() -> list[psutil.Process]:
    return [p for p in spawned_workers() if p.ppid() == os.getpid()]


def test_one_worker_per_gpu_bound_to_the_gpu_it_is_named_after(
    shell, scheduler: DaskProcesses, capsys
) -> None:
    devices = {d.label: d for d in _usable()}
    client = shell.run_line_magic("gpu_cluster", f"join {scheduler.address}")
    assert f"{len(devices)} worker" in capsys.readouterr().out
    session = this_kernel().current()
    assert session is not None and isinstance(session.kind, Joined)
    ours = session.kind.workers.addresses()
    assert len(ours) == len(devices)
    workers = client.scheduler_info(n_workers=-1)["workers"]
    named = {a: devices[workers[a]["name"].rpartition("-gpu")[2]] for a in ours}
    assert sorted(d.uuid for d in named.values()) == sorted(d.uuid for d in devices.values())
    bound = client.run(worker_probe.bound_gpu, workers=ours)
    for address, device in named.items():
        assert workers[address]["resources"] == {"GPU": 1}
        assert bound[address]["gpu"]["uuid"] == device.uuid
        task = client.submit(_device_uuid(), resources={"GPU": 1}, workers=[address], pure=False)
        assert task.result(timeout=120) == device.uuid
    pids = [info["pid"] for info in bound.values()]
    assert sorted(pids) == sorted(p.pid for p in _children())
    shell.run_line_magic("gpu_cluster", "leave")
    assert wait_gone([psutil.Process(p) for p in pids if psutil.pid_exists(p)]) == []
    assert _children() == [] and this_kernel().current() is None


def test_one_gpu_by_uuid_with_an_rmm_pool(shell, scheduler: DaskProcesses) -> None:
    device = _usable()[-1]
    client = shell.run_line_magic(
        "gpu_cluster", f"join {scheduler.address} --gpus {device.uuid} --rmm-pool-size 1GiB"
    )
    (address,) = client.scheduler_info(n_workers=-1)["workers"]
    future = client.submit(_device_uuid(), resources={"GPU": 1}, pure=False)
    assert future.result(timeout=120) == device.uuid
    resource = client.run(_rmm_resource, workers=[address])[address]
    assert resource in {"PoolMemoryResource", "TrackingResourceAdaptor"}, resource
    workers = _children()
    assert len(workers) == 1
    shell.run_line_magic("gpu_cluster", "stop")
    assert wait_gone(workers) == []
