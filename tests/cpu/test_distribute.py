"""--distribute and --gather on a real CPU cluster: pandas / NumPy partitions, real processes.

The routes are the GPU ones: shared memory (in one round or several), Dask's scatter, the
transaction that releases everything placed when anything fails. Only the last step, the copy to
a GPU, differs (tests/gpu/test_distribute_gpu.py).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import psutil
import pytest
from support import cpu_cluster_client, held_keys

from gpudask_jupyter import config, to_cpu, to_gpu
from gpudask_jupyter.convert.distribute import shared_memory
from gpudask_jupyter.convert.distribute.kernel import cluster_view
from gpudask_jupyter.convert.distribute.kernel.variables import distribute_names, gather_names
from gpudask_jupyter.errors import ConversionError, NoGpuError

pytestmark = pytest.mark.filterwarnings(
    "ignore::gpudask_jupyter.convert.GpuUnavailableWarning"  # CPU workers: said once, on purpose
)

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")


def _ours(data_only: bool = False) -> list[str]:
    """Segments made by this process (``data_only``: not the workers' token file)."""
    mine = f"{shared_memory.SEGMENT_PREFIX}{os.getpid()}-"
    found = [n for n in shared_memory.ours() if n.startswith(mine)]
    return [n for n in found if not n.endswith(".probe")] if data_only else found


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    # a worker paused by a test stays paused: memory does not resume it
    with cpu_cluster_client(**{"distributed.worker.memory.pause": False}) as client:
        yield client


@pytest.fixture(autouse=True)
def clean(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    config.set_override("distribute-shm-limit", None)
    assert _ours() == []


def _frame(n: int = 200_000) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {
            "key": np.arange(n) % 13,
            "x": rng.random(n),
            "y": rng.integers(0, 1000, n),
            "when": pd.date_range("2024-01-01", periods=n, freq="s"),
        }
    )


def test_frame_becomes_a_persisted_collection_balanced_over_the_workers(client) -> None:
    df = _frame()
    ddf = to_gpu(df, distribute=True, client=client, npartitions=6)
    assert isinstance(ddf, dd.DataFrame)
    assert ddf.npartitions == 6 and ddf.known_divisions
    from distributed import futures_of

    holders = client.who_has(futures_of(ddf))
    assert all(len(workers) == 1 for workers in holders.values())  # each held by one worker
    counts: dict[str, int] = {}
    for (worker,) in holders.values():
        counts[worker] = counts.get(worker, 0) + 1
    assert sorted(counts.values()) == [3, 3]
    got = ddf.groupby("key").x.mean().compute().sort_index()
    pd.testing.assert_series_equal(got, df.groupby("key").x.mean(), check_exact=False)
    pd.testing.assert_frame_equal(ddf.compute(), df)
    del ddf
    assert held_keys(client) == 0


def test_default_client_and_no_cluster(client) -> None:
    ddf = to_gpu(_frame(1000), distribute=True)  # distributed.default_client()
    assert ddf.npartitions == 2  # one per worker for a small frame
    code = (
        "import pandas as pd\n"
        "from gpudask_jupyter import to_cpu, to_gpu\n"
        "df = pd.DataFrame({'a': [1]})\n"
        "assert to_cpu(df, gather=True) is df and to_gpu(3, distribute=True) == 3\n"
        "to_gpu(df, distribute=True)\n"
    )
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode != 0
    assert (
        "ClusterError: %%to_gpu --distribute needs a Dask cluster and there is none: " in run.stderr
    )
    assert run.stderr.rstrip().endswith("start or attach a cluster first: %gpu_cluster start")


def test_array_and_series(client) -> None:
    arr = np.random.default_rng(2).random((100_001, 3))
    darr = to_gpu(arr, distribute=True, client=client, npartitions=4)
    assert isinstance(darr, da.Array)
    assert darr.chunks[0] == (25000, 25000, 25000, 25001) and darr.chunks[1] == (3,)
    np.testing.assert_allclose(darr.sum(axis=0).compute(), arr.sum(axis=0))
    np.testing.assert_array_equal(darr.compute(), arr)
    flat = np.arange(10_001, dtype=np.int16)
    np.testing.assert_array_equal(to_gpu(flat, distribute=True, client=client).compute(), flat)
    series = _frame()["x"].rename("named")
    dseries = to_gpu(series, distribute=True, client=client)
    pd.testing.assert_series_equal(dseries.compute(), series)
    named = _frame(20_000).rename_axis("row")  # a RangeIndex with a name keeps it both ways
    dnamed = to_gpu(named, distribute=True, client=client, npartitions=3)
    assert dnamed.get_partition(1).compute().index.name == "row"
    back = to_cpu(dnamed, gather=True, client=client)
    assert isinstance(back.index, pd.RangeIndex)
    pd.testing.assert_frame_equal(back, named)


def test_columns_that_are_not_fixed_width_travel_alongside(client) -> None:
    df = _frame(10_000).assign(s=lambda f: f.key.astype(str), c=lambda f: pd.Categorical(f.key % 2))
    df = df.set_index(df.s.rename("idx"))
    ns = {"df": df}
    report, _ = distribute_names(ns, ["df"], client=client)
    assert report.moved[0].path == "shared memory + scatter"
    pd.testing.assert_frame_equal(ns["df"].compute(), df)
    back, _ = gather_names(ns, ["df"], client=client)
    pd.testing.assert_frame_equal(ns["df"], df)
    assert back.moved[0].path == "shared memory + client"


def _table(n: int = 100_000) -> pd.DataFrame:
    """What tables people load hold: strings with nulls, categoricals, nullable columns."""
    rng = np.random.default_rng(3)
    words = np.array(["", "a", "bé", "ccc", "日本語", "x" * 40], dtype=object)
    text = pd.Series(words[rng.integers(0, len(words), n)], dtype="str")
    return pd.DataFrame(
        {
            "x": rng.random(n),
            "name": text.where(rng.random(n) > 0.01),
            "code": pd.Series(words[np.arange(n) % 3], dtype="str"),  # no nulls
            "city": pd.Categorical(
                np.array(["Oslo", "Lyon", None], dtype=object)[np.arange(n) % 3]
            ),
            "count": pd.array(np.where(np.arange(n) % 7 == 0, None, np.arange(n)), dtype="Int64"),
            "flag": pd.array(
                np.where(np.arange(n) % 5 == 0, None, np.arange(n) % 2 == 0), dtype="boolean"
            ),
            "share": pd.array(
                np.where(np.arange(n) % 11 == 0, None, rng.random(n)), dtype="Float64"
            ),
            "when": pd.date_range("2024-01-01", periods=n, freq="s"),
        }
    )


def test_strings_categoricals_and_nullable_columns_cross_shared_memory_both_ways(client) -> None:
    df = _table()
    ns = {"df": df}
    report, _ = distribute_names(ns, ["df"], client=client, npartitions=7)  # odd row counts
    assert report.moved[0].path == "shared memory", report.notes
    assert len(report.notes) == 1  # where the partitions went; nothing crossed by scatter
    for i in range(7):  # each partition is the rows it holds, dtypes included
        pd.testing.assert_frame_equal(
            ns["df"].get_partition(i).compute(),
            df.iloc[ns["df"].divisions[i] : ns["df"].divisions[i + 1] + (i == 6)],
        )
    pd.testing.assert_frame_equal(ns["df"].compute(), df)
    back, _ = gather_names(ns, ["df"], client=client)
    assert back.moved[0].path == "shared memory"
    pd.testing.assert_frame_equal(ns["df"], df)
    assert ns["df"]["name"].array.__arrow_array__().num_chunks == 7  # the partitions' chunks


def test_the_note_names_each_column_that_dask_moves_and_why(client) -> None:
    from decimal import Decimal

    df = _table(1000).assign(
        zoned=pd.date_range("2024-01-01", periods=1000, freq="h", tz="Europe/Oslo"),
        price=[Decimal(i) for i in range(1000)],
    )
    ns = {"df": df}
    report, _ = distribute_names(ns, ["df"], client=client)
    assert report.moved[0].path == "shared memory + scatter"
    assert report.notes[1] == (
        "df: 'zoned' (a time zone), 'price' (Python objects (dtype object)) crossed by Dask's "
        "scatter; every other column as raw buffers"
    )
    pd.testing.assert_frame_equal(ns["df"].compute(), df)
    back, _ = gather_names(ns, ["df"], client=client)
    pd.testing.assert_frame_equal(ns["df"], df)
    assert back.notes[1].startswith("df: 'zoned' (a time zone), 'price' (Python objects")


def test_small_shared_memory_works_in_rounds(client) -> None:
    config.set_override("distribute-shm-limit", "256KiB")
    df = _frame()
    ns = {"df": df, "arr": np.arange(300_000, dtype=np.int32).reshape(-1, 3)}
    report, _ = distribute_names(ns, ["df", "arr"], client=client, npartitions=3)
    paths = {m.name: m.path for m in report.moved}
    assert paths["df"].startswith("shared memory, ") and paths["df"].endswith(" rounds")
    assert int(paths["df"].split(", ")[1].split()[0]) > 10
    pd.testing.assert_frame_equal(ns["df"].compute(), df)
    back, _ = gather_names(ns, ["df", "arr"], client=client)
    pd.testing.assert_frame_equal(ns["df"], df)
    np.testing.assert_array_equal(ns["arr"], np.arange(300_000, dtype=np.int32).reshape(-1, 3))
    assert "rounds" in back.moved[0].path
    assert "distribute-shm" not in str(report.table())


def test_shared_memory_too_small_takes_dask_scatter(client) -> None:
    config.set_override("distribute-shm-limit", "1KiB")
    df = _frame(50_000)
    ns = {"df": df}
    report, _ = distribute_names(ns, ["df"], client=client)
    assert report.moved[0].path == "scatter"
    assert "scatter: shared memory too small" in report.notes[0]
    pd.testing.assert_frame_equal(ns["df"].compute(), df)
    gather_names(ns, ["df"], client=client)
    pd.testing.assert_frame_equal(ns["df"], df)


def test_workers_elsewhere_take_dask_scatter(client, monkeypatch) -> None:
    survey = cluster_view.survey

    def elsewhere(*args: Any) -> list[cluster_view.WorkerView]:
        return [dataclasses.replace(v, local=False) for v in survey(*args)]

    monkeypatch.setattr(cluster_view, "survey", elsewhere)
    df = _frame(50_000)
    ns = {"df": df}
    report, _ = distribute_names(ns, ["df"], client=client)
    assert report.moved[0].path == "scatter"
    assert "(scatter: worker elsewhere)" in report.notes[0]
    pd.testing.assert_frame_equal(ns["df"].compute(), df)
    back, _ = gather_names(ns, ["df"], client=client)
    assert back.moved[0].path == "client"
    pd.testing.assert_frame_equal(ns["df"], df)


def test_gather_of_lazy_and_irregular_collections(client) -> None:
    df = _frame(30_000)
    lazy = dd.from_pandas(df, npartitions=5)
    assert to_cpu(lazy) is lazy  # plain to_cpu keeps its meaning: pandas-backed stays lazy
    pd.testing.assert_frame_equal(to_cpu(lazy, gather=True, client=client), df)
    filtered = lazy[lazy.key > 3]  # partitions of unequal length, index with gaps
    pd.testing.assert_frame_equal(to_cpu(filtered, gather=True, client=client), df[df.key > 3])
    index = to_cpu(lazy.index, gather=True, client=client)
    pd.testing.assert_index_equal(index, df.index)
    gathered = to_cpu(lazy, gather=True, client=client)  # ranges that follow each other
    assert isinstance(gathered.index, pd.RangeIndex)
    restarted = lazy.map_partitions(lambda p: p.reset_index(drop=True))  # 0.. in each one
    expected = pd.concat([p.compute() for p in restarted.partitions])
    pd.testing.assert_frame_equal(to_cpu(restarted, gather=True, client=client), expected)
    grid = da.from_array(np.arange(60.0).reshape(6, 10), chunks=(2, 5))  # blocks across columns
    np.testing.assert_array_equal(to_cpu(grid, gather=True, client=client), grid.compute())
    ints = lazy.y.map_partitions(lambda s: s.astype("float64") if s.iloc[0] % 2 else s)
    pd.testing.assert_series_equal(
        to_cpu(ints, gather=True, client=client),
        pd.concat([p.compute() for p in ints.partitions]),
    )


def test_aliases_other_objects_and_dask_collections(client) -> None:
    df = _frame(5000)
    lazy = dd.from_pandas(df, npartitions=3)
    ns = {"a": df, "b": df, "n": 3, "lazy": lazy}
    report, _ = distribute_names(ns, ["a", "b", "n", "lazy"], client=client)
    assert ns["a"] is ns["b"] and ns["n"] == 3
    assert report.skipped == [("n", "int")]
    assert report.moved[-1].path == "persist"
    pd.testing.assert_frame_equal(ns["lazy"].compute(), df)


def test_empty_frames_and_arrays(client) -> None:
    empty = _frame(0)
    pd.testing.assert_frame_equal(to_gpu(empty, distribute=True).compute(), empty)
    nothing = np.zeros((0, 3))
    np.testing.assert_array_equal(to_gpu(nothing, distribute=True).compute(), nothing)


def test_a_failed_gather_leaves_the_collection_alone(client, monkeypatch) -> None:
    from gpudask_jupyter.convert.distribute.kernel import gathering

    arr = np.arange(40_000.0).reshape(-1, 4)
    darr = to_gpu(arr, distribute=True)  # its futures' keys are the collection's own
    ddf = to_gpu(_frame(20_000), distribute=True)

    def fails(*args: Any) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gathering, "_through_segments", fails)
    ns = {"darr": darr, "ddf": ddf}
    with pytest.raises(ConversionError, match=r"darr: OSError: .*No space left on device"):
        gather_names(ns, ["darr", "ddf"])
    assert ns["darr"] is darr and ns["ddf"] is ddf
    np.testing.assert_array_equal(darr.compute(), arr)  # nothing of the user's was cancelled
    monkeypatch.undo()
    np.testing.assert_array_equal(to_cpu(darr, gather=True), arr)
    del ns, darr, ddf
    assert held_keys(client) == 0


def test_a_worker_paused_for_lack_of_memory_fails_the_transfer(client, monkeypatch) -> None:
    pause = _pause
    monkeypatch.setattr(cluster_view, "PAUSE_GRACE", 1.0)
    victim = sorted(client.scheduler_info()["workers"])[0]
    client.run(pause, paused=True, workers=[victim])
    try:
        ns = {"df": _frame(10_000)}
        with pytest.raises(ConversionError, match=f"df: worker {victim} has been paused"):
            distribute_names(ns, ["df"], client=client)
        assert isinstance(ns["df"], pd.DataFrame)
    finally:
        client.run(pause, paused=False, workers=[victim])
    assert held_keys(client) == 0


def test_cpu_workers_say_why_there_is_no_gpu(client) -> None:
    ns = {"df": _frame(100)}
    report, unavailable = distribute_names(ns, ["df"], client=client)
    (why,) = unavailable
    assert why.startswith("worker tcp://")
    assert "is not installed" in why or "no NVIDIA driver" in why
    assert report.moved[0].label == "pandas → Dask DataFrame (pandas)"
    ns = {"df": _frame(100)}
    with pytest.raises(NoGpuError, match="df cannot go to the workers' GPUs"):
        distribute_names(ns, ["df"], client=client, require_gpu=True)
    assert isinstance(ns["df"], pd.DataFrame)
    assert held_keys(client) == 0


def test_a_failure_releases_what_was_placed_and_rebinds_nothing(client, monkeypatch) -> None:
    from gpudask_jupyter.convert.distribute.kernel import variables

    real = variables._Transaction.spread
    calls = []

    def second_fails(self: Any, name: str, *args: Any) -> Any:
        calls.append(name)
        if len(calls) == 2:
            raise ValueError("boom")
        return real(self, name, *args)

    monkeypatch.setattr(variables._Transaction, "spread", second_fails)
    first, second = _frame(50_000), np.arange(10.0)
    ns = {"first": first, "second": second}
    said = "second: it could not be converted: the library says 'boom'"
    with pytest.raises(ConversionError, match=said):
        distribute_names(ns, ["first", "second"], client=client)
    assert ns["first"] is first and ns["second"] is second
    assert held_keys(client) == 0


def _slow_transfer(client: Any) -> tuple[dict[str, Any], threading.Event]:
    """A transfer of many small rounds, and an event set once its segments exist."""
    config.set_override("distribute-shm-limit", "128KiB")
    started = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + 60
        while not _ours(data_only=True) and time.monotonic() < deadline:
            time.sleep(0.005)
        started.set()

    threading.Thread(target=watch, daemon=True).start()
    return {"df": _frame(2_000_000)}, started


def test_a_worker_killed_during_the_transfer_leaves_nothing(client) -> None:
    ns, started = _slow_transfer(client)
    original = ns["df"]
    pids = client.run(os.getpid)
    victim, pid = sorted(pids.items())[0]

    def kill() -> None:
        started.wait(60)
        psutil.Process(pid).kill()

    threading.Thread(target=kill, daemon=True).start()
    with pytest.raises(ConversionError) as failure:
        distribute_names(ns, ["df"], client=client)
    assert str(failure.value) == (
        f"df: worker {victim} left the cluster during the transfer (it died, was killed, or ran "
        "out of memory); nothing stayed on the workers; run the cell again once the cluster "
        "is whole"
    )
    assert ns["df"] is original
    client.wait_for_workers(2, timeout=60)  # the nanny starts a new worker
    assert held_keys(client) == 0


@pytest.fixture
def gate(monkeypatch) -> Iterator[threading.Event]:
    """The transfer stops after its first partition has arrived and waits there (as a slow
    network would) until it is interrupted: an event says it got there."""
    real = cluster_view.completed
    reached = threading.Event()

    def completed(*args: Any, **kwargs: Any) -> Any:
        for future in real(*args, **kwargs):
            yield future
            reached.set()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # the interrupt lands between two short waits
                time.sleep(0.05)
            raise AssertionError("the transfer waited 120 s and no interrupt came")

    monkeypatch.setattr(cluster_view, "completed", completed)
    for module in ("spread", "gathering"):
        where = f"gpudask_jupyter.convert.distribute.kernel.{module}"
        monkeypatch.setattr(f"{where}.completed", completed)
    return reached


class _SwallowsCtrlC:
    """Presses Ctrl-C from its finaliser: the interrupt is handled there, inside ``__del__``,
    where Python reports it as ignored and drops it, as it does when the garbage collector
    happens to run a finaliser at the moment a real SIGINT arrives."""

    def __del__(self) -> None:
        import _thread

        _thread.interrupt_main()
        for _ in range(1000):  # the handler runs at one of these jumps, still in __del__
            pass


def _interrupt_when(event: threading.Event) -> None:
    def interrupt() -> None:
        assert event.wait(120), "the transfer never began"
        import _thread

        _thread.interrupt_main()

    threading.Thread(target=interrupt, daemon=True).start()


@pytest.mark.parametrize("attempt", range(3))
def test_ctrl_c_during_the_transfer_leaves_nothing(client, gate, attempt) -> None:
    config.set_override("distribute-shm-limit", "128KiB")  # many rounds, each its own segments
    ns = {"df": _frame(400_000)}
    original = ns["df"]
    _interrupt_when(gate)
    with pytest.raises(KeyboardInterrupt):
        distribute_names(ns, ["df"], client=client)
    assert ns["df"] is original
    assert held_keys(client) == 0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("what", ["distribute", "gather"])
def test_ctrl_c_swallowed_by_a_finaliser_still_undoes_everything(client, monkeypatch, what) -> None:
    """The interrupt lands in a finaliser the main thread runs while it waits for the workers;
    Python drops it there, and the command must still end as interrupted, nothing rebound."""
    real = cluster_view.completed
    pressed: list[bool] = []

    def completed(*args: Any, **kwargs: Any) -> Any:
        for future in real(*args, **kwargs):
            if not pressed:
                pressed.append(True)
                _SwallowsCtrlC()  # dropped at once: its finaliser runs here, on the main thread
            yield future

    monkeypatch.setattr(cluster_view, "completed", completed)
    for module in ("spread", "gathering"):
        where = f"gpudask_jupyter.convert.distribute.kernel.{module}"
        monkeypatch.setattr(f"{where}.completed", completed)
    original = _frame(50_000)
    if what == "distribute":
        ns: dict[str, Any] = {"df": original}
        with pytest.raises(KeyboardInterrupt):
            distribute_names(ns, ["df"], client=client)
        assert ns["df"] is original
    else:
        lazy = dd.from_pandas(original, npartitions=4)
        ns = {"lazy": lazy}
        with pytest.raises(KeyboardInterrupt):
            gather_names(ns, ["lazy"], client=client)
        assert ns["lazy"] is lazy
    assert pressed, "the finaliser never ran during the command"
    assert held_keys(client) == 0


KILLED_KERNEL = """
import sys, numpy as np, pandas as pd
from distributed import Client
from gpudask_jupyter import config
from gpudask_jupyter.convert.distribute.kernel.variables import distribute_names
config.set_override("distribute-shm-limit", "128KiB")
client = Client(sys.argv[1], set_as_default=False)
n = 4_000_000
ns = {"df": pd.DataFrame({"x": np.arange(n), "y": np.arange(n) * 0.5})}
print("start", flush=True)
distribute_names(ns, ["df"], client=client)
"""


def _pause(dask_worker: Any, paused: bool) -> None:
    from distributed.core import Status

    dask_worker.status = Status.paused if paused else Status.running


def test_segments_of_a_killed_kernel_are_removed_at_the_next_use(client, tmp_path) -> None:
    import subprocess
    import sys

    script = tmp_path / "kernel.py"
    script.write_text(KILLED_KERNEL)
    # a paused worker does not read its segments: with every worker paused, each segment the
    # kernel wrote is still there when it dies (with one running, the segment seen could be one
    # that worker read and the kernel removed before the kill)
    client.run(_pause, paused=True)
    kernel = subprocess.Popen(
        [sys.executable, str(script), client.scheduler.address], stdout=subprocess.PIPE
    )
    prefix = f"{shared_memory.SEGMENT_PREFIX}{kernel.pid}-"

    def left() -> list[str]:
        return [n for n in shared_memory.ours() if n.startswith(prefix) and ".probe" not in n]

    try:
        deadline = time.monotonic() + 120
        while not left():
            assert kernel.poll() is None and time.monotonic() < deadline, "no transfer seen"
            time.sleep(0.005)
    finally:
        kernel.kill()
        kernel.wait()
        client.run(_pause, paused=False)
    assert left()  # left behind by the killed kernel
    to_gpu(_frame(1000), distribute=True, client=client)  # the next use
    assert not [n for n in shared_memory.ours() if n.startswith(prefix)]
    assert held_keys(client) == 0  # the dead client's partitions went with it


def test_a_stopped_worker_fails_the_transfer_within_the_worker_timeout(client) -> None:
    """SIGSTOP: the worker stays in the cluster (its heartbeats stop), so only the timeout can
    end the wait; it names the worker and the option."""
    import signal

    config.set_override("worker-timeout", 2.0)
    ns, started = _slow_transfer(client)
    original = ns["df"]
    victim, pid = sorted(client.run(os.getpid).items())[0]

    def stop() -> None:
        started.wait(60)
        os.kill(pid, signal.SIGSTOP)

    threading.Thread(target=stop, daemon=True).start()
    began = time.monotonic()
    try:
        with pytest.raises(ConversionError, match=f"worker {victim} has not answered for 2 s"):
            distribute_names(ns, ["df"], client=client)
        assert time.monotonic() - began < 20
        assert ns["df"] is original
    finally:
        os.kill(pid, signal.SIGCONT)
        config.set_override("worker-timeout", None)
    assert held_keys(client) == 0


def test_a_worker_stopped_before_the_call_is_waited_for_at_most_the_timeout(client) -> None:
    import signal

    config.set_override("worker-timeout", 1.0)
    _, pid = sorted(client.run(os.getpid).items())[0]
    os.kill(pid, signal.SIGSTOP)
    try:
        began = time.monotonic()
        with pytest.raises(Exception, match=r"within 1 s \(the worker-timeout option\)"):
            distribute_names({"df": _frame(100)}, ["df"], client=client)
        assert time.monotonic() - began < 10
    finally:
        os.kill(pid, signal.SIGCONT)
        config.set_override("worker-timeout", None)
    assert held_keys(client) == 0


def _held_until(running: str, release: str) -> Any:
    def held(part: pd.DataFrame) -> pd.DataFrame:
        from distributed import Event

        Event(running).set()
        Event(release).wait(120)
        return part

    return held


@pytest.mark.parametrize("attempt", range(3))
def test_ctrl_c_during_a_gather_leaves_no_key_even_while_its_traceback_is_kept(
    client, attempt
) -> None:
    from distributed import Event

    running, release = f"running-{os.getpid()}-{attempt}", f"release-{os.getpid()}-{attempt}"
    frame = _frame(8_000)
    lazy = dd.from_pandas(frame, npartitions=8).map_partitions(
        _held_until(running, release), meta=frame.iloc[:0]
    )
    ns = {"lazy": lazy}
    begun = threading.Event()

    def watch() -> None:  # the gather is running once a partition's task is
        if Event(running, client=client).wait(120):
            begun.set()

    threading.Thread(target=watch, daemon=True).start()
    _interrupt_when(begun)
    try:
        with pytest.raises(KeyboardInterrupt) as interrupted:
            gather_names(ns, ["lazy"], client=client)
    finally:
        Event(release, client=client).set()
    kept = interrupted.value  # what IPython keeps as the last traceback
    assert ns["lazy"] is lazy
    assert held_keys(client) == 0
    del kept


def test_a_big_endian_column_comes_back_as_it_went(client) -> None:
    frame = pd.DataFrame(
        {"big": np.arange(1000, dtype=">f8"), "native": np.arange(1000, dtype="<i8")}
    )
    ns = {"df": frame}
    distribute_names(ns, ["df"], client=client)
    gather_names(ns, ["df"], client=client)
    back = ns["df"]
    assert back["big"].dtype == np.dtype(">f8")
    pd.testing.assert_frame_equal(back, frame)
    series = {"s": frame["big"]}
    distribute_names(series, ["s"], client=client)
    gather_names(series, ["s"], client=client)
    pd.testing.assert_series_equal(series["s"], frame["big"])
    assert held_keys(client) == 0
