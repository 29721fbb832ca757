"""The parts of --distribute / --gather that need no cluster: layouts, segment plans, shared
memory."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from gpudask_jupyter import config
from gpudask_jupyter.convert.distribute import partition_layout, segment_plan, shared_memory
from gpudask_jupyter.convert.distribute.kernel import spread
from gpudask_jupyter.convert.distribute.worker import tasks as worker_tasks


def _frames() -> dict[str, object]:
    n = 1000
    rng = np.random.default_rng(0)
    numeric = pd.DataFrame(
        {
            "i": np.arange(n),
            "f": rng.random(n),
            "b": np.arange(n) % 3 == 0,
            "t": pd.date_range("2024-01-01", periods=n, freq="min"),
            "d": pd.to_timedelta(np.arange(n), unit="s"),
        }
    )
    mixed = numeric.assign(
        s=np.array(["x", "yy", None], dtype=object)[np.arange(n) % 3],
        c=pd.Categorical(np.array(["a", "b"])[np.arange(n) % 2]),
        n=pd.array(np.where(np.arange(n) % 5 == 0, None, np.arange(n)), dtype="Int64"),
        z=pd.date_range("2024-01-01", periods=n, freq="h", tz="Europe/Paris"),
    )
    labelled = numeric.set_index("t")
    multi = numeric.copy()
    multi.columns = pd.MultiIndex.from_tuples([("a", k) for k in numeric.columns])
    duplicated = pd.DataFrame(np.ones((10, 3)), columns=["a", "a", "b"])
    strings_index = numeric.set_index(numeric["i"].astype(str))
    strided = pd.DataFrame(np.asfortranarray(rng.random((n, 4))))
    with_attrs = numeric.copy()
    with_attrs.attrs["source"] = "test"
    return {
        "numeric": numeric,
        "mixed": mixed,
        "datetime index": labelled,
        "multiindex columns": multi,
        "duplicate labels": duplicated,
        "string index": strings_index,
        "strided": strided,
        "attrs": with_attrs,
        "series": numeric["f"].rename("named"),
        "string series": mixed["s"],
        "empty": numeric.iloc[:0],
        "sliced range": numeric.iloc[300:700],
    }


@pytest.mark.parametrize("case", list(_frames()))
def test_split_and_join_give_back_the_same_object(case: str) -> None:
    obj = _frames()[case]
    shape, arrays, rest = partition_layout.split(obj)
    # what a worker does: owned arrays filled from the bytes
    owned = partition_layout.empty_slots(shape)
    for into, array in zip(owned, arrays, strict=True):
        partition_layout.as_bytes(into)[:] = partition_layout.as_bytes(array)
    back = partition_layout.rebuild(shape, owned, rest)
    if isinstance(obj, pd.Series):
        pd.testing.assert_series_equal(back, obj)
    else:
        pd.testing.assert_frame_equal(back, obj)
    assert back.attrs == obj.attrs


def test_only_what_dtypes_describe_crosses_as_bytes() -> None:
    from gpudask_jupyter.convert.distribute.coded_columns import Coded

    frame = _frames()["mixed"]
    shape, arrays, rest = partition_layout.split(frame)
    kinds = [c.kind if isinstance(c, Coded) else c for c in shape.columns]
    # s (object strings: pandas 3 infers its str), c, n are buffers; z (a time zone) the rest
    assert kinds == [0, 1, 2, 3, 4, "strings", "categorical", "masked", None]
    strings, codes, nullable = shape.columns[5:8]
    assert [shape.slots[i].dtype.kind for i in strings.slots] == ["i", "u", "u"]  # +mask
    assert strings.nulls == frame["s"].isna().sum() and strings.first == 0
    np.testing.assert_array_equal(arrays[codes.slots[0]], frame["c"].array.codes)
    assert nullable.nulls == frame["n"].isna().sum()
    assert shape.own_slots() == frozenset(strings.slots)  # the strings' buffers do not stack
    assert list(rest.columns) == [0]  # z, by position
    assert rest.index.equals(pd.RangeIndex(len(rest)))


def test_a_slice_of_strings_crosses_from_its_first_character_and_never_writes_the_source() -> None:
    source = pd.Series(["a", None, "ccc", "dd", None, "e", "ffff", "g", "h", "ii"] * 3, dtype="str")
    before = source.copy()
    for start, stop in [(1, 7), (3, 30), (9, 10), (5, 5)]:
        piece = source.iloc[start:stop]
        shape, arrays, rest = partition_layout.split(piece)
        assert rest is None
        strings = shape.columns[0]
        chars = arrays[strings.slots[1]]
        assert bytes(chars) == "".join(piece.dropna()).encode()  # its own characters only
        pd.testing.assert_series_equal(partition_layout.rebuild(shape, arrays, rest), piece)
    pd.testing.assert_series_equal(source, before)


@pytest.mark.parametrize(
    "array",
    [
        np.arange(24.0).reshape(6, 4),
        np.asfortranarray(np.arange(24).reshape(6, 4)),
        np.arange(10, dtype=">i4"),  # not native: not bytes
        np.array(["a", None], dtype=object),
        np.zeros((0, 3)),
    ],
)
def test_arrays_split_and_join(array: np.ndarray) -> None:
    shape, arrays, rest = partition_layout.split(array)
    owned = partition_layout.empty_slots(shape)
    for into, source in zip(owned, arrays, strict=True):
        partition_layout.as_bytes(into)[:] = partition_layout.as_bytes(source)
    back = partition_layout.rebuild(shape, owned, rest)
    np.testing.assert_array_equal(back, array)
    assert back.dtype == array.dtype


def _covered(plan: list[list[segment_plan.Delivery]], sizes: dict[int, list[int]]) -> None:
    """Every byte of every slot is in exactly one piece, pieces never overlap in a segment."""
    seen = {
        (p, s): np.zeros(n, dtype=np.int8)
        for p, slots in sizes.items()
        for s, n in enumerate(slots)
    }
    for deliveries in plan:
        for delivery in deliveries:
            used = np.zeros(delivery.size, dtype=np.int8)
            for piece in delivery.pieces:
                seen[(delivery.partition, piece.slot)][
                    piece.start : piece.start + piece.nbytes
                ] += 1
                used[piece.offset : piece.offset + piece.nbytes] += 1
                assert piece.offset % segment_plan.ALIGN == 0
            assert used.max(initial=0) <= 1
    for mark in seen.values():
        assert (mark == 1).all()


def test_everything_fits_in_one_round_of_whole_partitions() -> None:
    sizes = {0: [1000, 0, 24], 1: [1000, 8, 24], 2: [0, 0]}
    plan = segment_plan.plan(sizes, {0: "a", 1: "b", 2: "a"}, budget=10_000)
    assert len(plan) == 1
    assert {d.partition for d in plan[0]} == {0, 1}  # nothing to send for partition 2
    _covered(plan, sizes)


def test_small_budget_makes_rounds_that_fit_and_share_it_between_workers() -> None:
    sizes = {0: [3_000_000, 100], 1: [2_000_000, 7], 2: [1_500_001], 3: [5]}
    owner = {0: "a", 1: "b", 2: "a", 3: "b"}
    budget = 1 << 20
    plan = segment_plan.plan(sizes, owner, budget)
    assert len(plan) > 4
    for deliveries in plan:
        assert sum(segment_plan.aligned(d.size) for d in deliveries) <= budget
        by_worker: dict[str, int] = {}
        for d in deliveries:
            by_worker[owner[d.partition]] = by_worker.get(owner[d.partition], 0) + d.size
        assert all(n <= budget // 2 for n in by_worker.values())
    assert {owner[d.partition] for d in plan[0]} == {"a", "b"}  # both workers busy at once
    _covered(plan, sizes)


def test_a_budget_too_small_for_a_useful_round_says_so() -> None:
    with pytest.raises(segment_plan.TooSmall):
        segment_plan.plan({0: [10**6], 1: [10**6]}, {0: "a", 1: "b"}, budget=100_000)
    assert segment_plan.plan({0: [0]}, {0: "a"}, budget=0) == []


def test_partitions_are_balanced() -> None:
    assert spread.partition_count(8 * 2**30, 10**8, 2, None) == 16
    assert spread.partition_count(10, 10, 4, None) == 4
    assert spread.partition_count(10**9, 3, 4, None) == 3  # never more partitions than rows
    assert spread.partition_count(10**9, 100, 4, 7) == 7
    ranges = spread.bounds(10, 4)
    assert ranges == [(0, 2), (2, 5), (5, 7), (7, 10)]


# -- shared memory -----------------------------------------------------------------------------


def test_segments_are_owner_only_named_after_their_process_and_removed(tmp_path) -> None:
    with shared_memory.Segments(str(tmp_path)) as segments:
        path = segments.create()
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode == 0o600
        name = os.path.basename(path)
        assert name.startswith(f"{shared_memory.SEGMENT_PREFIX}{shared_memory.owner_tag()}-")
        data = np.arange(1000, dtype=np.float64)
        with shared_memory.opened(path, writable=True) as fd:
            shared_memory.write_at(fd, data, 64)
        back = np.empty_like(data)
        with shared_memory.opened(path, writable=False) as fd:
            shared_memory.read_at(fd, back, 64)
        np.testing.assert_array_equal(back, data)
        with shared_memory.mapped(path, 64 + data.nbytes) as mapping:
            view = np.frombuffer(mapping, np.float64, len(data), 64)
            assert view[999] == 999.0
            del view
    assert os.listdir(tmp_path) == []


def test_segments_are_removed_when_the_block_fails(tmp_path) -> None:
    def interrupted() -> None:
        with shared_memory.Segments(str(tmp_path)) as segments:
            segments.create()
            segments.create()
            assert len(os.listdir(tmp_path)) == 2
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    assert os.listdir(tmp_path) == []


def test_stale_segments_of_dead_or_replaced_processes_are_removed(tmp_path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead_pid = int(dead.stdout)
    live = shared_memory.owner_tag()
    names = {
        "dead": f"{shared_memory.SEGMENT_PREFIX}{dead_pid}-123-ab-1",
        # the same pid, another start
        "reused pid": f"{shared_memory.SEGMENT_PREFIX}{os.getpid()}-1-ab-1",
        "live": f"{shared_memory.SEGMENT_PREFIX}{live}-ab-1",
        "not ours": "some-other-file",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"x")
    removed = shared_memory.remove_stale(str(tmp_path))
    assert sorted(removed) == sorted([names["dead"], names["reused pid"]])
    assert sorted(os.listdir(tmp_path)) == sorted([names["live"], names["not ours"]])


def test_process_start_tells_processes_apart() -> None:
    assert shared_memory.process_start(os.getpid()) is not None
    assert shared_memory.process_start(os.getpid()) != shared_memory.process_start(1) or (
        os.getpid() == 1
    )
    assert shared_memory.process_start(2**22 + 12345) is None


def test_budget_follows_the_option(tmp_path) -> None:
    free = shared_memory.budget(str(tmp_path))
    assert free > 0
    config.set_override("distribute-shm-limit", "1MiB")
    try:
        assert shared_memory.budget(str(tmp_path)) == min(free, 2**20)
    finally:
        config.set_override("distribute-shm-limit", None)


def test_unusable_shared_memory_says_why(tmp_path) -> None:
    assert (
        shared_memory.usable(str(tmp_path / "missing")) == f"{tmp_path / 'missing'} does not exist"
    )
    assert shared_memory.usable(str(tmp_path)) is None


def test_probe_reads_the_token_only_with_the_right_file(tmp_path) -> None:
    token = tmp_path / "token"
    token.write_bytes(b"secret")
    assert worker_tasks.probe(str(token), "secret")["local"] is True
    assert worker_tasks.probe(str(token), "other")["local"] is False
    assert worker_tasks.probe(str(tmp_path / "missing"), "secret")["local"] is False
    assert worker_tasks.probe("", "secret")["local"] is False


def test_segments_are_written_many_files_at_once_every_chunk_once() -> None:
    """Writes into one tmpfs file are serialised by its lock: the threads must each be on a
    different file, and the first files complete first."""
    from gpudask_jupyter.convert.distribute.kernel import spread
    from gpudask_jupyter.convert.distribute.segment_plan import Delivery, Piece

    chunk = spread.WRITE_CHUNK
    deliveries = [
        Delivery(p, (Piece(0, 0, 3 * chunk, 0), Piece(1, 0, chunk // 2, 3 * chunk)))
        for p in range(5)
    ]
    order = list(spread.write_order(deliveries, width=2))
    expected = {(i, s, lo) for i in range(5) for s, n in ((0, 3 * chunk), (1, chunk // 2))
                for lo in range(0, n, chunk)}  # fmt: skip
    assert {(i, piece.slot, lo) for i, piece, lo in order} == expected
    assert len(order) == len(expected)
    assert [i for i, _, _ in order[:2]] == [0, 1]  # two threads, two files
    assert [i for i, _, _ in order[:8]] == [0, 1] * 4  # the first window, in turn
    assert {i for i, _, _ in order[-4:]} == {4}  # the last window holds one segment
