"""%%to_gpu / %%to_cpu on a real GPU: equal to cuDF's and CuPy's own conversions, both paths.

Every case runs twice: with the default transfer threshold (small data takes the library's own
copy) and with a threshold of one byte, so that every numeric column, index and mask of even the
small cases goes through the pinned pipeline. Large device→host results are checked with every
kind of destination: fresh mappings on huge or 4 KiB pages, faulted in ahead or not, and
``numpy.empty`` as before.
"""

from __future__ import annotations

import contextlib
import mmap
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from gpudask_jupyter import config, to_cpu, to_gpu
from gpudask_jupyter.convert.pinned import host_memory, staging

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(600)]

cudf = pytest.importorskip("cudf")
cupy = pytest.importorskip("cupy")


@pytest.fixture(params=["library", "pinned"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with contextlib.ExitStack() as stack:
        if request.param == "pinned":
            config.set_override("transfer-threshold", 1)
            # a batch is sent early once its temporary copies pass this: make that happen mid-frame
            monkeypatch.setattr(staging.Batch, "TEMPORARY_LIMIT", 2 * 8 * 1000)
            # every device→host destination, however small, is a fresh mapping faulted in ahead
            stack.enter_context(host_memory.using(min_bytes=1))
        try:
            yield request.param
        finally:
            config.clear_overrides()


#: strings as they come: empty, missing, non-ASCII, long
TEXT = np.array(["", None, "héllo wörld", "日本語テキスト", "🚀 émoji", "x" * 500, "plain"], object)


def frames() -> dict[str, object]:
    rng = np.random.default_rng(0)
    n = 1000
    floats = rng.standard_normal(n)
    floats[::7] = np.nan
    ints = pd.array(rng.integers(0, 100, n), dtype="Int64")
    ints[::5] = pd.NA
    nullable_float = pd.array(rng.standard_normal(n), dtype="Float64")
    nullable_float[::3] = pd.NA
    booleans = pd.array(rng.integers(0, 2, n).astype(bool), dtype="boolean")
    booleans[::4] = pd.NA
    times = pd.Series(pd.date_range("2026-01-01", periods=n, freq="min"))
    times[::9] = pd.NaT
    span = pd.Series(pd.to_timedelta(rng.integers(0, 10**6, n), unit="ms"))
    span[::11] = pd.NaT
    mixed = pd.DataFrame(
        {
            "i8": rng.integers(-5, 5, n, dtype=np.int8),
            "i64": rng.integers(0, 10**12, n),
            "u32": rng.integers(0, 2**31, n).astype(np.uint32),
            "f32": rng.standard_normal(n).astype(np.float32),
            "f64": floats,
            # a sum that is NaN without a NaN, and one that overflows to inf: no NaN either way
            "f64_infinities": np.where(np.arange(n) % 2, np.inf, -np.inf),
            "f32_overflowing": np.full(n, 3e38, dtype=np.float32),
            "b": rng.integers(0, 2, n).astype(bool),
            "Int64": ints,
            "Float64": nullable_float,
            "boolean": booleans,
            "dt": times,
            "dt_s": times.astype("datetime64[s]"),
            "dt_no_nat": pd.Series(pd.date_range("1677-09-22", periods=n, freq="D")),
            "td": span,
            "tz": pd.date_range("2026-03-01", periods=n, freq="h", tz="UTC"),
            "cat": pd.Categorical(rng.choice(["x", "y", "z"], n)),
            "s": pd.Series(rng.choice(["alpha", "beta", None], n), dtype="str"),
            "text": pd.Series(rng.choice(TEXT, n), dtype="str"),
            "cat_unused": pd.Categorical(
                rng.choice(["x", "y", None], n), categories=["x", "y", "never"]
            ),
            "cat_int_ordered": pd.Categorical(
                rng.choice([10, 20, 30], n), categories=[30, 20, 10, 40], ordered=True
            ),
            "cat_many": pd.Categorical([f"c{i % 300}" for i in range(n)]),  # int16 codes
        },
        index=pd.Index(rng.permutation(n) * 3, name="key"),
    )
    mixed.attrs["source"] = "test"
    multi = pd.DataFrame(
        rng.standard_normal((n, 4)),
        columns=pd.MultiIndex.from_product([["a", "b"], ["x", "y"]], names=["l0", "l1"]),
        index=pd.MultiIndex.from_arrays([np.arange(n) % 10, np.arange(n)], names=["g", "i"]),
    )
    return {
        "mixed": mixed,
        "multi": multi,
        "float_index": pd.DataFrame({"v": np.arange(n)}, index=np.linspace(0, 1, n)),
        "datetime_index": pd.DataFrame({"v": np.arange(n)}, index=pd.date_range("2026", periods=n)),
        # columns of a C-ordered block are strided: each takes a contiguous temporary copy
        "strided": pd.DataFrame(
            np.where(rng.random((n, 6)) < 0.1, np.nan, rng.standard_normal((n, 6))),
            columns=[f"c{i}" for i in range(6)],
            copy=False,
        ),
        "string_index": pd.DataFrame(
            {"v": np.arange(n)}, index=pd.Index([f"k{i}" for i in range(n)], dtype="str")
        ),
        # a slice: offsets past 0, validity bits from a byte (ours) or mid-byte (cuDF's path)
        "strings_sliced_at_8": pd.DataFrame({"t": pd.Series(rng.choice(TEXT, n), dtype="str")})[8:],
        "strings_sliced_at_3": pd.DataFrame({"t": pd.Series(rng.choice(TEXT, n), dtype="str")})[3:],
        # pd.concat keeps each part's Arrow chunk: several chunks, one column
        "strings_concatenated": pd.concat(
            [pd.DataFrame({"t": pd.Series(rng.choice(TEXT, k), dtype="str")}) for k in (9, 99, 7)],
            ignore_index=True,
        ),
        "strings_all_null": pd.DataFrame({"t": pd.Series([None] * n, dtype="str")}),
        "strings_all_empty": pd.DataFrame({"t": pd.Series([""] * n, dtype="str")}),
        # Python objects: cuDF's own path, and back as objects (not inferred as strings)
        "object_strings": pd.DataFrame({"o": pd.Series(rng.choice(TEXT, n), dtype=object)}),
        "categorical_series": pd.Series(pd.Categorical(rng.choice(["a", None, "b"], n)), name="c"),
        "series": pd.Series(floats, name="s", index=pd.RangeIndex(5, 5 + n)),
        "series_Int64": pd.Series(ints, name=("tuple", "name")),
        "index": pd.Index(np.arange(n) * 2.5, name="ix"),
        "empty": pd.DataFrame(),
        "empty_columns": pd.DataFrame(
            {"a": pd.Series([], dtype="int64"), "b": pd.Series([], dtype="str")}
        ),
    }


@pytest.mark.parametrize("case", list(frames()))
def test_pandas_equals_from_pandas_and_round_trips(case: str, path: str) -> None:
    original = frames()[case]
    ours = to_gpu(original)
    theirs = cudf.from_pandas(original)
    assert type(ours) is type(theirs)
    if isinstance(theirs, cudf.DataFrame):
        # cudf.testing cannot compare categorical columns (it treats their categories as an
        # Index); those are compared on the host
        cats = [c for c, t in theirs.dtypes.items() if isinstance(t, cudf.CategoricalDtype)]
        cudf.testing.assert_frame_equal(
            ours.drop(columns=cats), theirs.drop(columns=cats), check_exact=True
        )
        for c in cats:
            pd.testing.assert_series_equal(ours[c].to_pandas(), theirs[c].to_pandas())
        assert ours.attrs == theirs.attrs
    elif isinstance(theirs, cudf.Series) and isinstance(theirs.dtype, cudf.CategoricalDtype):
        pd.testing.assert_series_equal(ours.to_pandas(), theirs.to_pandas())
    elif isinstance(theirs, cudf.Series):
        cudf.testing.assert_series_equal(ours, theirs, check_exact=True)
    else:
        cudf.testing.assert_index_equal(ours, theirs, exact=True)
    back = to_cpu(ours)
    expected = theirs.to_pandas()
    if isinstance(original, pd.DataFrame):
        pd.testing.assert_frame_equal(back, expected)
        assert back.attrs == original.attrs
    elif isinstance(original, pd.Series):
        pd.testing.assert_series_equal(back, expected)
    else:
        pd.testing.assert_index_equal(back, expected)


def arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    base = rng.standard_normal((300, 200))
    return {
        "f64": base,
        "f32_fortran": np.asfortranarray(base.astype(np.float32)),
        "non_contiguous": base[::3, 1::2],
        "transposed_view": base.T[::2],
        "zero_d": np.array(3.5),
        "bool": base > 0,
        "int16": rng.integers(-100, 100, 5000).astype(np.int16),
        "uint64": rng.integers(0, 2**62, 5000).astype(np.uint64),
        "complex": base[:10] + 1j * base[10:20],
        "big_endian": np.arange(1000, dtype=">i4"),
        "empty": np.empty((0, 5)),
    }


@pytest.mark.parametrize("case", list(arrays()))
def test_numpy_equals_cupy_asarray_and_round_trips(case: str, path: str) -> None:
    original = arrays()[case]
    ours = to_gpu(original)
    theirs = cupy.asarray(original.astype(original.dtype.newbyteorder("="), copy=False))
    assert isinstance(ours, cupy.ndarray)
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    assert bool(cupy.array_equal(ours, theirs))
    back = to_cpu(ours)
    np.testing.assert_array_equal(back, theirs.get())
    np.testing.assert_array_equal(back, original)


def test_large_frame_takes_the_pinned_path_and_pinned_memory_is_bounded(shell, capsys) -> None:
    shell.user_ns["np"], shell.user_ns["pd"] = np, pd
    shell.run_cell_magic(
        "to_gpu",
        "",
        "big = pd.DataFrame({'a': np.arange(2**24), 'b': np.ones(2**24)})\n"
        "arr = np.ones((4096, 4096))",
    )
    out = capsys.readouterr().out
    assert "pinned" in out and "pandas → cuDF" in out and "NumPy → CuPy" in out
    big = shell.user_ns["big"]
    assert isinstance(big, cudf.DataFrame)
    # many pieces per column, over every copy thread: every byte arrived where it belongs
    np.testing.assert_array_equal(cupy.asnumpy(big["a"].values), np.arange(2**24))
    assert bool((big["b"].values == 1).all()) and bool((shell.user_ns["arr"] == 1).all())
    assert 0 < staging.pinned_bytes() <= config.get("pinned-buffer")
    shell.run_cell_magic("to_cpu", "-q", "big2 = big\narr2 = arr")
    big2 = shell.user_ns["big2"]
    assert isinstance(big2, pd.DataFrame)
    np.testing.assert_array_equal(big2["a"].to_numpy(), np.arange(2**24))
    assert (big2["b"].to_numpy() == 1).all() and (shell.user_ns["arr2"] == 1).all()
    shell.run_line_magic("unload_ext", "gpudask_jupyter")
    assert staging.pinned_bytes() == 0
    shell.run_line_magic("load_ext", "gpudask_jupyter")


def _used() -> int:
    free, total = cupy.cuda.runtime.memGetInfo()
    return int(total - free)


def test_object_larger_than_free_memory_fails_cleanly(shell) -> None:
    from IPython.core.error import UsageError

    cupy.zeros(1)  # the CUDA context exists before we measure
    cupy.get_default_memory_pool().free_all_blocks()
    free, _ = cupy.cuda.runtime.memGetInfo()
    filler = cupy.empty(free - 3 * 2**30, dtype=np.uint8)  # leave 3 GiB free
    try:
        cupy.get_default_memory_pool().free_all_blocks()
        before = _used()
        shell.user_ns["np"] = np
        cell = "small = np.ones(2**27)\nhuge = np.ones(2**30)"  # 1 GiB fits, 8 GiB does not
        with pytest.raises(UsageError) as info:
            shell.run_cell_magic("to_gpu", "", cell)
        message = str(info.value)
        assert message.startswith("huge: out of GPU memory"), message
        assert "--exclude huge" in message
        assert isinstance(shell.user_ns["small"], np.ndarray)
        assert isinstance(shell.user_ns["huge"], np.ndarray)
        assert abs(_used() - before) < 64 * 2**20  # the 1 GiB of `small` was given back
    finally:
        del filler
        cupy.get_default_memory_pool().free_all_blocks()


def test_strings_beyond_2_gib_cross_with_64_bit_offsets_both_ways(path: str) -> None:
    """2.3 GB of characters: more than 32-bit offsets can address."""
    piece = "ab€" * (2**20 // 5)  # ~1 MiB of UTF-8
    rows = 2300
    source = pd.Series([piece if i % 97 else None for i in range(rows)], dtype="str", name="big")
    ours = to_gpu(source)
    theirs = cudf.from_pandas(source)
    cudf.testing.assert_series_equal(ours, theirs)
    del theirs
    cupy.get_default_memory_pool().free_all_blocks()
    back = to_cpu(ours)
    pd.testing.assert_series_equal(back, source)
    assert back.dtype == source.dtype


def test_to_cpu_of_columns_cudf_itself_made_equals_to_pandas(path: str) -> None:
    """Columns this package did not build: slices (the characters' span larger than used, or an
    offset into the column), results of cuDF's string functions, categoricals cuDF made."""
    rng = np.random.default_rng(6)
    source = pd.Series(rng.choice(TEXT, 5000), dtype="str", name="t")
    strings = cudf.from_pandas(source)
    made = {
        "upper": strings.str.upper(),
        "head": strings.iloc[:1234],
        "tail": strings.iloc[3:],
        "middle": strings.iloc[17:4001],
        "categorical": strings.astype("category"),
        "frame": cudf.DataFrame(
            {"a": strings.str.lower(), "b": strings.iloc[::-1].reset_index(drop=True)}
        ),
    }
    for name, obj in made.items():
        expected = obj.to_pandas()
        back = to_cpu(obj)
        if isinstance(expected, pd.DataFrame):
            pd.testing.assert_frame_equal(back, expected, obj=name)
        else:
            pd.testing.assert_series_equal(back, expected, obj=name)


def test_string_and_categorical_columns_take_the_pinned_path_and_object_ones_are_named(
    shell, capsys
) -> None:
    rng = np.random.default_rng(5)
    n = 2**22
    shell.user_ns["frame"] = pd.DataFrame(
        {
            "s": pd.Series(rng.choice(TEXT, n), dtype="str"),
            "c": pd.Categorical(rng.choice(["x", "y"], n)),
        }
    )
    shell.user_ns["objects"] = pd.DataFrame({"o": pd.Series(rng.choice(TEXT, n), dtype=object)})
    shell.run_cell_magic("to_gpu", "", "a = frame\nb = objects")
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "pinned" in lines["a"], out
    assert "pinned" not in lines["b"], out
    assert "b: column 'o' holds Python objects" in out and ".astype('str')" in out
    pd.testing.assert_frame_equal(shell.user_ns["a"].to_pandas(), shell.user_ns["frame"])
    shell.run_cell_magic("to_cpu", "", "back = a")
    out = capsys.readouterr().out
    assert "pinned" in out, out
    pd.testing.assert_frame_equal(shell.user_ns["back"], shell.user_ns["frame"])


def test_mixed_object_column_fails_with_column_name(shell, path: str) -> None:
    """With ``pinned``, column 'a' is in flight on the pinned path when 'c' fails."""
    from IPython.core.error import UsageError

    shell.user_ns["pd"] = pd
    with pytest.raises(UsageError, match=r"df: column 'c' holds mixed Python objects"):
        shell.run_cell_magic("to_gpu", "", "df = pd.DataFrame({'a': [1, 2], 'c': [1, 'x']})")
    assert isinstance(shell.user_ns["df"], pd.DataFrame)


def test_dask_collections_are_converted_lazily(shell) -> None:
    dd = pytest.importorskip("dask.dataframe")
    da = pytest.importorskip("dask.array")
    pdf = pd.DataFrame({"a": np.arange(100), "b": np.linspace(0, 1, 100)})
    ddf = dd.from_pandas(pdf, npartitions=4)
    darr = da.from_array(np.arange(1000.0).reshape(100, 10), chunks=(25, 10))
    gddf, gdarr = to_gpu(ddf), to_gpu(darr)
    assert type(gddf._meta).__module__.startswith("cudf")
    assert type(gdarr._meta).__module__.startswith("cupy")
    cudf.testing.assert_eq(gddf.compute(), cudf.from_pandas(pdf))
    assert bool(cupy.array_equal(gdarr.compute(), cupy.asarray(darr.compute())))
    back = to_cpu(gddf)
    pd.testing.assert_frame_equal(back.compute(), pdf)
    np.testing.assert_array_equal(to_cpu(gdarr).compute(), darr.compute())


def test_cudf_pandas_proxies_are_not_converted_twice(tmp_path) -> None:
    script = textwrap.dedent(
        """
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "cudf.pandas")
        ip.run_line_magic("load_ext", "gpudask_jupyter")
        ip.run_cell("import pandas as pd")
        ip.run_cell_magic("to_gpu", "", "df = pd.DataFrame({'a': range(10)})")
        df = ip.user_ns["df"]
        import cudf.pandas
        assert cudf.pandas.is_proxy_object(df), type(df)
        assert int(df["a"].sum()) == 45
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert "cudf.pandas already decides where it lives" in out.stdout
    assert out.stdout.strip().endswith("ok")


# -- device→host into fresh memory: huge pages, faulted in ahead of the copy ---------------------

DESTINATIONS = [
    {"pages": "huge", "prefault": False},  # the default
    {"pages": "huge", "prefault": True},
    {"pages": "small", "prefault": True},
    {"pages": "numpy", "prefault": False},  # as before huge pages
]


def _mapping_of(array: object) -> mmap.mmap | None:
    base = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return base


def _fresh(policy: dict[str, object]) -> bool:
    """Whether destinations of 256 MiB are mappings of their own under ``policy``."""
    if policy["pages"] == "numpy":
        return False
    return policy["pages"] == "small" or host_memory.huge_pages_available()


@pytest.mark.parametrize("policy", DESTINATIONS, ids=lambda p: f"{p['pages']}-{p['prefault']}")
def test_to_cpu_of_a_large_array_into_fresh_memory_equals_get(
    shell, policy: dict[str, object]
) -> None:
    n = 256 * 2**20 // 8
    dev = cupy.random.default_rng(3).standard_normal((n // 1024, 1024))
    expected = dev.get()
    fortran = cupy.asfortranarray(dev[:, :512])
    with host_memory.using(**policy):
        shell.user_ns["dev"], shell.user_ns["fdev"] = dev, fortran
        shell.run_cell_magic("to_cpu", "-q", "out = dev\nfout = fdev")
    out, fout = shell.user_ns["out"], shell.user_ns["fout"]
    assert type(out) is np.ndarray and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(fout, expected[:, :512])
    assert out.flags.c_contiguous and fout.flags.f_contiguous
    assert (_mapping_of(out) is not None) is _fresh(policy)
    if _fresh(policy):
        assert out.ctypes.data % host_memory.HUGE_PAGE == 0
    del shell.user_ns["dev"], shell.user_ns["fdev"], dev, fortran
    cupy.get_default_memory_pool().free_all_blocks()
    reuse = cupy.full((n,), -1.0)  # the freed device memory, written over
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(out, expected)  # the host array owes nothing to the device
    out[::1000] = 7.0  # ordinary, writeable memory
    assert (out[::1000] == 7.0).all() and out[1, 1] == expected[1, 1]
    view = out[-5:]
    del out, shell.user_ns["out"], reuse
    np.testing.assert_array_equal(view, expected[-5:])  # a view keeps the mapping alive


@pytest.mark.parametrize("policy", DESTINATIONS, ids=lambda p: f"{p['pages']}-{p['prefault']}")
def test_to_cpu_of_a_large_frame_into_fresh_memory_equals_to_pandas(
    policy: dict[str, object],
) -> None:
    n = 2**25  # 256 MiB per 8-byte column
    rng = np.random.default_rng(4)
    floats = rng.standard_normal(n)
    floats[::7] = np.nan  # nulls on the device, NaN on the host
    source = pd.DataFrame(
        {
            "f": floats,
            "i": np.arange(n),
            "t": pd.Series(rng.integers(0, 2**40, n)).astype("datetime64[ns]"),
            "f32": rng.standard_normal(n).astype(np.float32),
        }
    )
    frame = cudf.from_pandas(source)
    del source, floats
    expected = frame.to_pandas()
    with host_memory.using(**policy):
        ours = to_cpu(frame)
    pd.testing.assert_frame_equal(ours, expected)
    for column in ("f", "i", "t"):
        assert (_mapping_of(ours[column].to_numpy()) is not None) is _fresh(policy), column
    del frame
    cupy.get_default_memory_pool().free_all_blocks()
    pd.testing.assert_frame_equal(ours, expected)
    ours.loc[3, "f"] = 1.5  # a frame over these arrays takes writes as any other
    ours.iloc[4, 1] = -1
    assert ours.loc[3, "f"] == 1.5 and ours.iloc[4, 1] == -1
    assert ours.iloc[5, 1] == expected.iloc[5, 1]


def test_the_installed_cudf_offers_every_call_of_the_fast_paths() -> None:
    """On the release the GPU tier runs, strings and categoricals take the fast paths: a new
    RAPIDS release that lacks one of their calls fails here, not silently in the timings."""
    from gpudask_jupyter.compat.cudf import builds_from_plc, fast_path_lacks, forget_probe

    forget_probe()
    assert fast_path_lacks() == ()
    assert builds_from_plc() or cudf.get_option("spill")
