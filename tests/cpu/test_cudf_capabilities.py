"""The fast string and categorical paths follow what the installed cuDF offers, not its release.

``compat.cudf.builds_from_plc`` probes once a process for every call those paths make into
cuDF's column internals and pylibcudf. Here it runs on the stand-ins of ``tests/fake_gpu``
(``cudf`` and ``pylibcudf``, at a release this package was never checked on): with all they
offer the fast paths are taken; with one piece taken away, or a signature that no longer fits,
they are not, one warning names what is missing, and the callers take cuDF's own path. The GPU
tier runs the same paths on the real cuDF (tests/gpu).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from gpudask_jupyter.compat import cudf as compat_cudf
from gpudask_jupyter.compat import probing
from gpudask_jupyter.convert import arrow_columns
from gpudask_jupyter.convert.distribute import coded_columns, device_blocks, device_packing

FAKE = Path(__file__).parents[1] / "fake_gpu"
LOGGER = compat_cudf.log.name
COLUMN = "pylibcudf.Column(data_type, size, data, mask, null_count, offset, children)"


def _ours(name: str) -> bool:
    return name.split(".")[0] in ("cudf", "pylibcudf")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """(cudf, pylibcudf): the stand-ins, imported afresh, with the probe forgotten before and
    after (the stand-ins leave ``sys.modules`` with the test, and any real cuDF comes back)."""
    monkeypatch.syspath_prepend(str(FAKE))
    for name in [n for n in sys.modules if _ours(n)]:
        monkeypatch.delitem(sys.modules, name)
    import cudf
    import pylibcudf

    assert Path(cudf.__file__).is_relative_to(FAKE)
    compat_cudf.forget_probe()
    yield cudf, pylibcudf
    compat_cudf.forget_probe()
    for name in [n for n in sys.modules if _ours(n)]:
        del sys.modules[name]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING
    ]


def _take_away(monkeypatch: pytest.MonkeyPatch, modules: tuple[Any, Any], dotted: str) -> None:
    """Delete ``dotted`` (``cudf.…`` or ``pylibcudf.…``) from the stand-ins for this test."""
    first, *middle, last = dotted.split(".")
    owner = modules[0] if first == "cudf" else modules[1]
    for part in middle:
        owner = getattr(owner, part)
    monkeypatch.delattr(owner, last)


# -- the probe -----------------------------------------------------------------------------------


@pytest.mark.parametrize("release", ["27.02.00", "26.12.00a", "26.10.02", "31.04.01"])
def test_a_cudf_that_offers_every_call_takes_the_fast_paths_whatever_its_release(
    fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, caplog: Any, release: str
) -> None:
    monkeypatch.setattr(fake[0], "__version__", release)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        assert compat_cudf.fast_path_lacks() == ()
        assert compat_cudf.builds_from_plc()
    assert _warnings(caplog) == []


@pytest.mark.parametrize(
    ("taken", "lacking"),
    [
        (
            "cudf.core.column.ColumnBase.create",
            ["cudf.core.column.ColumnBase.create(plc_column, dtype)"],
        ),
        (
            "cudf.core.column.ColumnBase.to_pylibcudf",
            ["cudf.core.column.ColumnBase.to_pylibcudf()"],
        ),
        ("cudf.core.column.CategoricalColumn.codes", ["cudf.core.column.CategoricalColumn.codes"]),
        ("cudf.core.dtypes.CategoricalDtype._codes_dtype", ["cudf.CategoricalDtype._codes_dtype"]),
        (
            "cudf.CategoricalDtype",
            [
                "cudf.CategoricalDtype",
                "cudf.CategoricalDtype.categories",
                "cudf.CategoricalDtype._codes_dtype",
            ],
        ),
        ("pylibcudf.TypeId.INT64", ["pylibcudf.TypeId.INT64"]),
        ("pylibcudf.TypeId.STRING", ["pylibcudf.TypeId.STRING"]),
        ("pylibcudf.DataType.id", ["pylibcudf.DataType.id()"]),
        (
            "pylibcudf.gpumemoryview",
            [
                "pylibcudf.gpumemoryview(array)",
                "pylibcudf.gpumemoryview.ptr",
                "pylibcudf.gpumemoryview.size",
            ],
        ),
        ("pylibcudf.gpumemoryview.ptr", ["pylibcudf.gpumemoryview.ptr"]),
        ("pylibcudf.Column.null_mask", ["pylibcudf.Column.null_mask()"]),
        ("pylibcudf.Column.child", ["pylibcudf.Column.child()"]),
        ("pylibcudf.Column.offset", ["pylibcudf.Column.offset()"]),
        ("pylibcudf.concatenate.concatenate", ["pylibcudf.concatenate.concatenate(columns)"]),
    ],
)
def test_a_cudf_without_one_call_takes_cudfs_own_path_and_says_once_which(
    fake: tuple[Any, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: Any,
    taken: str,
    lacking: list[str],
) -> None:
    _take_away(monkeypatch, fake, taken)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        assert compat_cudf.fast_path_lacks() == tuple(lacking)
        assert not compat_cudf.builds_from_plc()
        assert not compat_cudf.builds_from_plc()  # asked again: the probe is not run again
    [warning] = _warnings(caplog)
    assert warning.startswith("string and categorical columns take cuDF's own, slower path")
    assert "this cuDF (27.02.00) lacks " + ", ".join(lacking) in warning
    tracebacks = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert len(tracebacks) == len(lacking)  # what each failed check raised, for the curious


@pytest.mark.parametrize(
    ("change", "lacking"),
    [
        ("column parameters reordered", COLUMN),
        ("create takes a third argument", "cudf.core.column.ColumnBase.create(plc_column, dtype)"),
        ("child takes no index", "pylibcudf.Column.child()"),
        ("to_pylibcudf a property", "cudf.core.column.ColumnBase.to_pylibcudf()"),
    ],
)
def test_a_call_whose_signature_no_longer_fits_is_lacking(
    fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, caplog: Any, change: str, lacking: str
) -> None:
    cudf, plc = fake
    if change == "column parameters reordered":  # the docstring Cython writes, as in the real one
        doc = plc.Column.__doc__.replace(
            "size_type null_count, size_type offset", "size_type offset, size_type null_count"
        )
        monkeypatch.setattr(plc.Column, "__doc__", doc)
    elif change == "create takes a third argument":
        monkeypatch.setattr(
            cudf.core.column.ColumnBase, "create", staticmethod(lambda col, dtype, stream: None)
        )
    elif change == "child takes no index":
        monkeypatch.setattr(plc.Column, "child", lambda self: None)
    else:
        monkeypatch.setattr(cudf.core.column.ColumnBase, "to_pylibcudf", property(lambda s: s))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert compat_cudf.fast_path_lacks() == (lacking,)
        assert not compat_cudf.builds_from_plc()
    [warning] = _warnings(caplog)
    assert lacking in warning


def test_a_signature_that_cannot_be_read_is_not_held_against_the_call(
    fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    monkeypatch.setattr(fake[1].Column, "__doc__", None)  # neither inspect nor the docstring says
    with (
        caplog.at_level(logging.DEBUG, logger=LOGGER),
        caplog.at_level(logging.DEBUG, logger=probing.log.name),
    ):
        assert compat_cudf.builds_from_plc()
    assert _warnings(caplog) == []
    assert any("cannot be read" in r.getMessage() for r in caplog.records)


def test_the_signatures_cython_writes_are_read_as_pylibcudf_writes_them() -> None:
    class Column:  # pylibcudf 26.10's docstring; inspect finds no signature on a Cython class
        __doc__ = (
            "Column(DataType data_type, size_type size, data: Span | None, mask: Span | None, "
            "size_type null_count, size_type offset, children: Iterable[Column], "
            "bool validate=True)\n\nA container of nullable device data."
        )

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

    signature = probing.signature(Column)
    assert signature is not None
    assert tuple(signature.parameters) == (*compat_cudf.PLC_COLUMN_PARAMETERS, "validate")
    assert signature.parameters["validate"].default is not signature.empty
    compat_cudf._column_constructor(Column)
    Column.__doc__ = "gpumemoryview(obj: Any)\n\nMinimal representation of a memory buffer."
    assert probing.signature(Column) is None  # another name: not its signature
    Column.__doc__ = "Column(dict[str, int] table, *args)"
    assert probing.signature(Column) is None  # any number of arguments: nothing to check


def test_spilling_takes_cudfs_own_path_without_a_warning(
    fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    cudf = fake[0]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert compat_cudf.builds_from_plc()
        monkeypatch.setitem(cudf._options, "spill", True)  # switched on after the first probe
        assert not compat_cudf.builds_from_plc()
    assert compat_cudf.fast_path_lacks() == ()
    assert _warnings(caplog) == []


def test_without_pylibcudf_the_fast_paths_are_off(
    fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    monkeypatch.setitem(sys.modules, "pylibcudf", None)  # import pylibcudf raises ImportError
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        assert compat_cudf.fast_path_lacks() == ("pylibcudf",)
        assert not compat_cudf.builds_from_plc()
    [warning] = _warnings(caplog)
    assert warning.endswith("lacks pylibcudf")


def test_a_probe_that_raises_is_a_no_logged_once_with_its_traceback(
    fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def broken(cudf: Any, plc: Any) -> Any:
        raise RuntimeError("a cuDF nobody foresaw")

    monkeypatch.setattr(compat_cudf, "_needs", broken)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        assert not compat_cudf.builds_from_plc()
        assert not compat_cudf.builds_from_plc()
    [warning] = _warnings(caplog)
    assert "a cuDF nobody foresaw" in warning
    [traced] = [r for r in caplog.records if r.exc_info]
    assert traced.levelno == logging.DEBUG and "a cuDF nobody foresaw" in str(traced.exc_info[1])


# -- the callers ---------------------------------------------------------------------------------


def _broken_create(fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(fake[0].core.column.ColumnBase, "create")


@pytest.mark.parametrize("offers_all", [True, False], ids=["offers all", "lacks create"])
def test_the_kernels_string_and_categorical_paths_follow_the_probe(
    fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, offers_all: bool
) -> None:
    if not offers_all:
        _broken_create(fake, monkeypatch)
    taken: list[str] = []
    for name in ("strings_to_device", "categorical_to_device", "strings_to_host"):
        monkeypatch.setattr(arrow_columns, name, lambda *a, name=name: taken.append(name))
    monkeypatch.setattr(arrow_columns, "categorical_to_host", lambda *a: "categorical_to_host")
    found = arrow_columns.to_device(pd.Series(["a", "b"]), None, batch=None)
    back = arrow_columns.to_host(object(), batch=None)
    if offers_all:
        assert taken == ["strings_to_device", "categorical_to_device", "strings_to_host"]
        assert back == "categorical_to_host"
    else:
        assert found is None and back is None and taken == []  # cuDF's own path, untouched


class _Device(np.ndarray):
    """A host array standing for a CuPy one: ``get()`` copies it to the host."""

    def get(self) -> np.ndarray:
        return np.array(self)


@pytest.mark.parametrize("offers_all", [True, False], ids=["offers all", "lacks create"])
def test_a_distributed_string_column_is_assembled_as_the_probe_allows(
    fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, offers_all: bool
) -> None:
    """``--distribute`` on a worker: the column from its buffers (pylibcudf), or from the pandas
    column brought back to the host and handed to cuDF (``as_column``)."""
    plc = fake[1]
    if not offers_all:
        _broken_create(fake, monkeypatch)
    words = pd.Series(["alpha", None, "", "héllo", "b"] * 3, dtype="str")
    split = coded_columns.split_column(words, 0)
    assert split is not None
    coded, arrays = split
    devs = [np.asarray(a).view(_Device) for a in arrays]
    column = device_blocks._coded(coded, len(words), devs, None)
    assert column.dtype == words.dtype
    if offers_all:
        built = column.to_pylibcudf()
        assert isinstance(built, plc.Column) and column.source is None
        assert built.type().id() == plc.TypeId.STRING and built.size() == len(words)
        assert built.null_count() == 3 and built.num_children() == 1
        offsets = built.child(0).data().obj
        assert offsets.dtype == np.int32 and offsets[-1] == built.data().obj.size
    else:
        assert column.plc_column is None
        pd.testing.assert_series_equal(
            pd.Series(column.source), words.reset_index(drop=True), check_names=False
        )


def test_a_gathered_column_goes_with_the_rest_when_the_probe_says_no(
    fake: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--gather`` on a worker: without the column internals, string and categorical columns
    go with the rest (through Dask), asked before anything of CuPy is needed."""
    _broken_create(fake, monkeypatch)
    column = fake[0].core.column.ColumnBase(None, pd.StringDtype("pyarrow", na_value=np.nan))
    assert device_packing._coded(column, 0) is None
