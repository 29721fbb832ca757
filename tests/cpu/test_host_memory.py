"""The allocator of %%to_cpu destinations and the fault-ahead, on the CPU.

What the kernel did is read back from ``/proc/self/smaps``: whether the mapping was advised huge
pages (``hg`` among its flags), whether it got them (``AnonHugePages``), how much of it is
resident (``Rss``), and whether it is still mapped at all.
"""

from __future__ import annotations

import gc
import logging
import mmap
import pickle
import re
import sys
import weakref
from typing import Any

import numpy as np
import pandas as pd
import pytest

from gpudask_jupyter.convert.pinned import host_memory
from gpudask_jupyter.convert.pinned.host_memory import HUGE_PAGE, empty, map_fresh, prefault

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux memory")

MiB = 2**20


def vma(address: int) -> dict[str, str] | None:
    """The ``/proc/self/smaps`` entry of the mapping that holds ``address`` (None: unmapped)."""
    found: dict[str, str] | None = None
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
            if head:
                if found is not None:
                    return found
                if int(head[1], 16) <= address < int(head[2], 16):
                    found = {"range": head[0]}
            elif found is not None and ":" in line:
                key, value = line.split(":", 1)
                found[key] = value.strip()
    return found


def kib(entry: dict[str, str], key: str) -> int:
    return int(entry[key].split()[0])


def mapping_of(array: Any) -> mmap.mmap | None:
    base = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None) if not isinstance(base, memoryview) else base.obj
    return base


@pytest.fixture
def small_threshold() -> Any:
    with host_memory.using(min_bytes=4 * MiB) as policy:
        yield policy


def test_large_arrays_get_a_2_mib_aligned_mapping_of_their_own_small_ones_numpy_empty() -> None:
    small = empty((MiB,), np.float64)  # 8 MiB: below the 32 MiB where malloc may reuse memory
    assert mapping_of(small) is None and small.flags.owndata
    for order in ("C", "F"):
        big = empty((2048, 3000), np.float64, order)
        mapping = mapping_of(big)
        huge = host_memory.huge_pages_available()
        assert (mapping is not None) is huge
        assert big.ctypes.data % HUGE_PAGE == 0 or not huge
        assert big.shape == (2048, 3000) and big.dtype == np.float64
        assert big.flags.writeable and big.flags.aligned
        assert big.flags.c_contiguous if order == "C" else big.flags.f_contiguous
    obj = empty((40 * MiB,), object)  # object arrays stay numpy's: they hold references
    assert mapping_of(obj) is None and obj[0] is None


def test_a_huge_page_destination_is_advised_and_gets_huge_pages(small_threshold: Any) -> None:
    if not host_memory.huge_pages_available():
        pytest.skip(f"transparent huge pages are {host_memory.huge_pages_setting()} here")
    array = empty((6 * MiB + 123,), np.uint8)
    assert mapping_of(array) is not None
    array[:] = 7
    entry = vma(array.ctypes.data)
    assert entry is not None
    assert "hg" in entry["VmFlags"].split()  # the madvise was applied to the whole huge pages
    assert kib(entry, "AnonHugePages") >= 2048  # and the kernel used them
    with host_memory.using(pages="small"):
        plain = empty((6 * MiB,), np.uint8)
    plain[:] = 7
    entry = vma(plain.ctypes.data)
    assert entry is not None and kib(entry, "AnonHugePages") == 0
    assert "nh" in entry["VmFlags"].split()


def test_without_transparent_huge_pages_it_falls_back_to_numpy_and_says_so(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    setting = tmp_path / "enabled"
    setting.write_text("always madvise [never]\n")
    monkeypatch.setattr(host_memory, "THP_SETTING", str(setting))
    host_memory.huge_pages_available.cache_clear()
    try:
        with caplog.at_level(logging.DEBUG, logger=host_memory.__name__):
            array = empty((40 * MiB,), np.uint8)
        assert host_memory.huge_pages_setting() == "never"
        assert mapping_of(array) is None and array.flags.owndata
        assert "transparent huge pages are never" in caplog.text
        with host_memory.using(pages="small"):  # asked for explicitly, it still maps
            assert mapping_of(empty((40 * MiB,), np.uint8)) is not None
    finally:
        host_memory.huge_pages_available.cache_clear()
    monkeypatch.setattr(host_memory, "THP_SETTING", str(tmp_path / "absent"))
    assert host_memory.huge_pages_setting() == "unavailable"


def test_the_mapping_lives_while_any_view_does_and_is_unmapped_after(
    small_threshold: Any,
) -> None:
    with host_memory.using(pages="small"):  # a mapping whatever the host's huge page setting
        array = empty((2000, 1000), np.float64)
    address = array.ctypes.data
    mapping = mapping_of(array)
    assert mapping is not None
    alive = weakref.ref(mapping)
    mapped = vma(address)
    assert mapped is not None
    del mapping
    view = array[1500:, ::2]
    del array
    gc.collect()
    assert alive() is not None and vma(address) is not None
    view[:] = 2.5  # still ordinary, writeable memory
    assert float(view.sum()) == 2.5 * view.size
    del view
    gc.collect()
    assert alive() is None
    entry = vma(address)
    assert entry is None or entry["range"] != mapped["range"]  # unmapped (or mapped anew)


def test_destinations_behave_as_ordinary_arrays(small_threshold: Any) -> None:
    with host_memory.using(pages="small"):
        array = empty((1 << 20,), np.float64)
    array[:] = np.arange(array.size)
    assert mapping_of(array) is not None
    copy = pickle.loads(pickle.dumps(array))
    np.testing.assert_array_equal(copy, array)
    assert copy.flags.writeable and not np.shares_memory(copy, array)
    assert np.shares_memory(array, array[10:20]) and not np.shares_memory(array[:10], array[10:])
    frame = pd.DataFrame({"v": array}, copy=False)
    assert np.shares_memory(frame["v"].to_numpy(), array)
    series = pd.Series(array, copy=False)
    assert np.shares_memory(series.to_numpy(), array)
    array[0] = -1.0
    assert series.iloc[0] == -1.0  # the same memory, as with any array handed over copy=False


def test_prefault_makes_a_range_resident_without_changing_a_byte() -> None:
    if not host_memory.prefault_available():
        pytest.skip("MADV_POPULATE_WRITE needs Linux 5.14")
    mapping, offset = map_fresh(16 * MiB, huge=False)
    array = np.frombuffer(mapping, dtype=np.uint8, count=16 * MiB, offset=offset)
    address = array.ctypes.data
    array[:5] = [1, 2, 3, 4, 5]  # one page resident, with data on it
    before = kib(vma(address) or {}, "Rss")
    assert before < 1024
    with host_memory.using(prefault=False):  # the default: the copy faults the pages in
        prefault(address + 100, 8 * MiB)
    assert kib(vma(address) or {}, "Rss") == before
    with host_memory.using(prefault=True):
        prefault(address + 100, 8 * MiB)
    assert kib(vma(address) or {}, "Rss") >= 8 * 1024
    assert array[:5].tolist() == [1, 2, 3, 4, 5]
    assert not array[5:].any()
    prefault(address, 0)  # nothing to do
    del array
    mapping.close()


def test_prefault_is_a_no_op_where_the_kernel_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_memory, "_populate", lambda: None)
    data = np.ones(10)
    prefault(data.ctypes.data, data.nbytes)
    assert (data == 1).all()
