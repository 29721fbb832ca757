"""--distribute / --gather on real GPU workers: cuDF / CuPy partitions, each on its worker's GPU.

Run on a machine with GPUs (two or more shows the spreading): ``pytest -m gpu
tests/gpu/test_distribute_gpu.py``. Sizes stay at a few hundred MiB.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from gpudask_jupyter import config, to_cpu, to_gpu
from gpudask_jupyter.convert.distribute import device_blocks, shared_memory
from gpudask_jupyter.convert.distribute.kernel.variables import distribute_names, gather_names
from gpudask_jupyter.errors import ConversionError

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(600)]

MiB = 2**20


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    with (
        LocalCUDACluster(host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    yield
    config.set_override("distribute-shm-limit", None)
    config.set_override("distribute-cuda-ipc", None)
    mine = f"{shared_memory.SEGMENT_PREFIX}{os.getpid()}-"
    assert [n for n in shared_memory.ours() if n.startswith(mine)] == []


def _frame(nbytes: int) -> pd.DataFrame:
    rows = nbytes // 32
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "key": np.arange(rows) % 17,
            "x": rng.random(rows),
            "when": pd.date_range("2024-01-01", periods=rows, freq="s"),
            "n": rng.integers(0, 100, rows).astype(np.int64),
        }
    )


def _device_of(part: Any) -> str:
    """Runs in a worker: the PCI bus of the GPU holding a partition's first column."""
    import cupy

    column = part.iloc[:, 0] if hasattr(part, "iloc") else part
    values = cupy.asarray(column.values if hasattr(column, "values") else column)
    return str(cupy.cuda.Device(values.device.id).pci_bus_id)


def _own_bus() -> str:
    """Runs in a worker: the PCI bus of its own GPU."""
    import cupy

    return str(cupy.cuda.Device(0).pci_bus_id)


def _free(client: Any) -> dict[str, int]:
    def free() -> int:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        return int(cupy.cuda.runtime.memGetInfo()[0])

    found: dict[str, int] = client.run(free)
    return found


def _held(client: Any) -> int:
    gc.collect()
    deadline = time.monotonic() + 10
    while sum(len(k) for k in client.has_what().values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return sum(len(k) for k in client.has_what().values())


@pytest.mark.parametrize("route", ["CUDA IPC", "shared memory"])
def test_frame_spreads_over_every_gpu(client, route, monkeypatch) -> None:
    import dask_cudf
    from distributed import futures_of

    if route == "shared memory":  # the CUDA IPC route switched off
        config.set_override("distribute-cuda-ipc", False)
    df = _frame(256 * MiB)
    ns = {"df": df}
    report, unavailable = distribute_names(ns, ["df"], npartitions=4)
    assert unavailable == []
    assert report.moved[0].label == "pandas → Dask DataFrame (cuDF)"
    assert report.moved[0].path == route
    ddf = ns["df"]
    assert isinstance(ddf, dask_cudf.DataFrame)
    futures = futures_of(ddf)
    holders = client.who_has(futures)
    assert len({w for (w,) in holders.values()}) == len(client.scheduler_info()["workers"])
    buses = client.gather(
        [client.submit(_device_of, f, workers=list(holders[f.key])) for f in futures]
    )
    own = client.run(_own_bus)
    for future, bus in zip(futures, buses, strict=True):
        assert bus == own[holders[future.key][0]]  # on its worker's own GPU
    got = ddf.groupby("key").x.mean().compute().to_pandas().sort_index()
    pd.testing.assert_series_equal(got, df.groupby("key").x.mean(), check_exact=False)
    back, _ = gather_names(ns, ["df"])
    assert back.moved[0].path == route
    pd.testing.assert_frame_equal(ns["df"], df)


def _every_kind(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    x = rng.random(rows)
    x[::7] = np.nan
    when = pd.Series(pd.date_range("2024-01-01", periods=rows, freq="min"))
    when[::11] = pd.NaT
    text = pd.Series([f"é{i % 13}" if i % 5 else None for i in range(rows)], dtype="str")
    return pd.DataFrame(
        {
            "i": np.arange(rows, dtype=np.int64),
            "x": x,
            "f": rng.random(rows).astype(np.float32),
            "b": np.arange(rows) % 3 == 0,
            "u": (np.arange(rows) % 251).astype(np.uint8),
            "when": when,
            "dt": pd.to_timedelta(np.arange(rows), unit="ms").astype("timedelta64[ms]"),
            "text": text,
            "cat": pd.Categorical(np.arange(rows) % 4, categories=[0, 1, 2, 3, 9]),
            "city": pd.Categorical(
                np.array(["Oslo", None, "Lyon"], dtype=object)[np.arange(rows) % 3]
            ),
            "count": pd.array(
                np.where(np.arange(rows) % 7 == 0, None, np.arange(rows)), dtype="Int64"
            ),
            "flag": pd.array(
                np.where(np.arange(rows) % 5 == 0, None, np.arange(rows) % 2 == 0), dtype="boolean"
            ),
        },
        index=pd.Index(np.arange(rows) * 3, name="id"),
    )


def _partitions(collection: Any) -> list[Any]:
    return [collection.get_partition(i).compute() for i in range(collection.npartitions)]


@pytest.mark.parametrize("shape", ["frame", "series", "range index"])
def test_every_partition_equals_cudf_from_pandas_through_ipc(client, shape) -> None:
    import cudf

    df = _every_kind(200_000)
    obj: Any = {
        "frame": df,
        "series": df["when"].rename("w"),
        "range index": df.reset_index(drop=True)[["x", "when", "i"]],
    }[shape]
    obj.attrs = {"source": "test"}
    ns = {"obj": obj}
    report, _ = distribute_names(ns, ["obj"], npartitions=5)
    assert report.moved[0].path == "CUDA IPC", report.notes  # strings too: no scatter
    start = 0
    for part in _partitions(ns["obj"]):
        expected = cudf.from_pandas(obj.iloc[start : start + len(part)])
        start += len(part)
        if shape == "series":
            cudf.testing.assert_series_equal(part, expected)
        else:
            cudf.testing.assert_frame_equal(part, expected)
    assert start == len(obj)
    back, _ = gather_names(ns, ["obj"])
    assert back.moved[0].path == "CUDA IPC", back.notes  # strings, codes, masks: no client
    if shape == "series":
        pd.testing.assert_series_equal(ns["obj"], obj)
    else:
        pd.testing.assert_frame_equal(ns["obj"], obj)


def test_strings_categoricals_and_nullable_columns_through_shared_memory(client) -> None:
    import cudf

    config.set_override("distribute-cuda-ipc", False)
    df = _every_kind(150_001)
    ns = {"df": df}
    report, _ = distribute_names(ns, ["df"], npartitions=3)
    assert report.moved[0].path == "shared memory", report.notes
    start = 0
    for part in _partitions(ns["df"]):
        cudf.testing.assert_frame_equal(part, cudf.from_pandas(df.iloc[start : start + len(part)]))
        start += len(part)
    back, _ = gather_names(ns, ["df"])
    assert back.moved[0].path == "shared memory", back.notes
    pd.testing.assert_frame_equal(ns["df"], df)


def test_arrays_of_each_dtype_through_ipc(client) -> None:
    import cupy

    for arr in [
        np.random.default_rng(6).random((1_000_000, 3)).astype(np.float32),
        np.arange(3_000_001, dtype=np.int16),
        np.asfortranarray(np.random.default_rng(7).random((500_000, 4))),
    ]:
        ns = {"arr": arr}
        report, _ = distribute_names(ns, ["arr"], npartitions=3)
        assert report.moved[0].path == "CUDA IPC"
        parts = [ns["arr"].blocks[i].compute() for i in range(ns["arr"].numblocks[0])]
        assert all(isinstance(p, cupy.ndarray) for p in parts)
        np.testing.assert_array_equal(cupy.concatenate(parts).get(), arr)
        back, _ = gather_names(ns, ["arr"])
        assert back.moved[0].path == "CUDA IPC"
        np.testing.assert_array_equal(ns["arr"], arr)


def test_memory_the_kernel_cannot_open_goes_through_shared_memory(client, monkeypatch) -> None:
    def refuse(handle: bytes, device: int, worker: str) -> Any:
        raise device_blocks.NotOpened(worker, RuntimeError("cudaErrorMapBufferObjectFailed"))

    before = _free(client)
    monkeypatch.setattr(device_blocks, "opened", refuse)
    df = _frame(128 * MiB)
    ns = {"df": df}
    report, _ = distribute_names(ns, ["df"])
    assert report.moved[0].path == "shared memory"
    pd.testing.assert_frame_equal(ns["df"].compute().to_pandas(), df)
    ddf = ns["df"]
    back, _ = gather_names(ns, ["df"])  # the blocks packed for the kernel are not opened either
    assert back.moved[0].path == "client"
    pd.testing.assert_frame_equal(ns["df"], df)
    del ns, ddf
    assert _held(client) == 0
    after = _free(client)
    for worker, free in before.items():  # the blocks given up were freed
        assert after[worker] >= free - 64 * MiB, (worker, free, after[worker])


def test_gather_of_a_collection_dask_made_through_ipc(client) -> None:
    import dask.dataframe as dd

    df = _every_kind(300_000).reset_index()
    ddf = dd.from_pandas(df, npartitions=6).to_backend("cudf").persist()
    ns = {"ddf": ddf}
    back, _ = gather_names(ns, ["ddf"])
    assert back.moved[0].path.startswith("CUDA IPC"), back.moved[0].path
    pd.testing.assert_frame_equal(ns["ddf"], ddf.compute().to_pandas())


def test_array_becomes_cupy_backed_and_comes_back(client) -> None:
    import cupy

    arr = np.random.default_rng(4).random((8 * MiB, 4))  # 256 MiB
    darr = to_gpu(arr, distribute=True)
    assert isinstance(darr._meta, cupy.ndarray)
    np.testing.assert_allclose(darr.sum(axis=0).compute().get(), arr.sum(axis=0))
    np.testing.assert_array_equal(to_cpu(darr, gather=True), arr)


def test_small_shared_memory_on_gpus(client, monkeypatch) -> None:
    monkeypatch.setattr(device_blocks, "kernel_devices", dict)
    config.set_override("distribute-shm-limit", "8MiB")
    df = _frame(96 * MiB).assign(s=lambda f: f.key.astype(str))
    ns = {"df": df}
    report, _ = distribute_names(ns, ["df"])
    assert "rounds" in report.moved[0].path
    pd.testing.assert_frame_equal(ns["df"].compute().to_pandas(), df)
    gather_names(ns, ["df"])
    pd.testing.assert_frame_equal(ns["df"], df)


def test_out_of_gpu_memory_on_one_worker_releases_everything(client) -> None:
    # client.run hands the worker to a function that takes ``dask_worker`` (get_worker() works
    # only inside tasks)
    def hog(leave: int, dask_worker: Any = None) -> None:
        import cupy

        free = int(cupy.cuda.runtime.memGetInfo()[0])
        dask_worker.gpudask_test_hog = cupy.empty(max(0, free - leave), dtype="u1")

    def unhog(dask_worker: Any = None) -> None:
        import cupy

        dask_worker.gpudask_test_hog = None
        cupy.get_default_memory_pool().free_all_blocks()

    before = _free(client)
    victim = sorted(before)[0]
    client.run(hog, 64 * MiB, workers=[victim])
    df = _frame(512 * MiB)
    ns = {"df": df}
    try:
        with pytest.raises(ConversionError) as failure:
            distribute_names(ns, ["df"])
    finally:
        client.run(unhog, workers=[victim])
    message = str(failure.value)
    assert message.startswith(f"df: on worker {victim}: out of GPU memory")
    assert "nothing stayed on the workers" in message
    assert ns["df"] is df
    assert _held(client) == 0
    after = _free(client)
    for worker, free in before.items():  # every GPU has its memory back (± pinned pools)
        assert after[worker] >= free - 64 * MiB, (worker, free, after[worker])


def test_a_block_that_cannot_be_made_or_opened_says_why() -> None:
    import cupy

    from gpudask_jupyter.convert.distribute import device_packing

    refused = device_blocks.allocate(2**60)  # more than any GPU has
    assert isinstance(refused, device_blocks.Unavailable)
    assert "out of GPU memory" in refused.why
    assert device_blocks.exported(refused) == refused.why
    packed = device_packing.pack(cupy.arange(1000, dtype=cupy.float32))
    assert isinstance(packed, device_packing.Packed)
    layout, rest, handle = device_packing.unpacked(packed)
    assert layout.kind == "array" and rest is None and isinstance(handle, bytes)
    # this process exported it: CUDA refuses to open it here, which the kernel takes as "not
    # this way" for that worker
    with pytest.raises(device_blocks.NotOpened), device_blocks.opened(handle, 0, "itself"):
        pass


def test_a_partition_lost_with_its_gpu_worker_fails_at_once_in_words(client) -> None:
    """The CUDA IPC route: a partition built on its worker's GPU memory cannot be rebuilt once
    that worker is gone; computing the collection fails within seconds, naming it."""
    import signal

    ns = {"df": _frame(64 * MiB)}
    distribute_names(ns, ["df"], client=client, npartitions=8)
    victim = sorted(client.run(os.getpid).items())[0][1]
    workers = len(client.scheduler_info()["workers"])
    os.kill(victim, signal.SIGKILL)
    started = time.monotonic()
    with pytest.raises(Exception, match=r"df: \d of 8 partitions were lost") as failed:
        ns["df"].x.sum().compute()
    assert time.monotonic() - started < 15
    assert "Spread df again" in str(failed.value)
    del ns, failed
    gc.collect()
    client.wait_for_workers(workers, timeout=120)  # the nanny starts a new worker
