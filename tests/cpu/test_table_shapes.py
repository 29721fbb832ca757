"""Any table pandas or NumPy can hold crosses to the cluster and comes back, or is refused up
front in one sentence: property tests over the shapes of real tables (:mod:`tables`), on a real
CPU cluster (the GPU tier: tests/gpu/test_table_shapes_gpu.py).

For each drawn frame, series or array:

- ``--distribute`` gives a collection whose ``compute()`` is what Dask's own compute of the
  same partitions gives (the object itself, big-endian columns in this machine's order), and
  ``--gather`` gives back the object exactly: dtypes, labels, index, attrs;
- or the spread is refused before anything moves, in a sentence that names the variable and the
  column, and the workers hold nothing;
- a collection Dask made itself (``from_pandas``, with empty partitions) gathers as its compute;
- through the magics in a real shell, a cell never shows an internal exception.

Every counter-example Hypothesis found stays as an explicit case (``@example``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from support import cpu_cluster_client, held_keys
from table_cases import (
    BIG_ENDIAN,
    INTERNAL,
    LISTS,
    MIXED,
    NAN_LABEL,
    REPEATED,
    REPEATED_ARROW,
    REPEATED_CATEGORICAL,
    assert_refusal,
    assert_same,
    native,
)
from tables import Table, arrays, frames, series, tables

from gpudask_jupyter import to_cpu, to_gpu
from gpudask_jupyter.errors import ConversionError

pytestmark = [
    pytest.mark.filterwarnings("ignore::gpudask_jupyter.convert.GpuUnavailableWarning"),
    pytest.mark.timeout(900),
    # the cluster's client threads use the random module while Hypothesis draws an example
    pytest.mark.filterwarnings("ignore:Do not use the `random` module"),
]

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with cpu_cluster_client() as client:
        yield client


def as_dask_computes(obj: Any) -> Any:
    """What Dask's compute of ``obj``'s partitions gives: a frame's or a series' big-endian
    columns in this machine's byte order (an array keeps its own)."""
    return obj if isinstance(obj, np.ndarray) else native(obj)


@given(table=tables(), npartitions=st.sampled_from([None, 1, 2, 3]))
@example(table=REPEATED, npartitions=3)
@example(table=REPEATED_ARROW, npartitions=2)
@example(table=REPEATED_CATEGORICAL, npartitions=2)
@example(table=NAN_LABEL, npartitions=3)
@example(table=BIG_ENDIAN, npartitions=2)
@example(table=LISTS, npartitions=None)
@example(table=MIXED, npartitions=3)
def test_spread_computes_as_dask_and_gathers_back_equal(
    client: Any, table: Table, npartitions: int | None
) -> None:
    try:
        collection = to_gpu(table.obj, distribute=True, npartitions=npartitions)
    except ConversionError as err:
        assert_refusal(err, "argument")
        assert held_keys(client) == 0, "a refused spread left partitions on the workers"
        return
    try:
        assert_same(collection.compute(), as_dask_computes(table.obj))
        assert_same(to_cpu(collection, gather=True), table.obj)
    finally:
        del collection
    assert held_keys(client) == 0


def test_repeated_labels_beside_a_categorical_are_refused_in_words(client: Any) -> None:
    with pytest.raises(ConversionError) as refused:
        to_gpu(REPEATED_CATEGORICAL.obj, distribute=True, npartitions=2)
    assert str(refused.value) == (
        "argument: column label(s) 'x' occur more than once and column 'y' is categorical: "
        "Dask cannot join the partitions of such a frame (its compute fails); rename the "
        "columns (e.g. df.columns = [...]) or keep it on the host"
    )
    assert held_keys(client) == 0


def _dask_made(obj: Any, parts: int, empty: bool) -> Any:
    """A collection Dask made itself of ``obj``, in ``parts`` partitions; ``empty``: every
    other row filtered away, so that some partitions have none."""
    if isinstance(obj, np.ndarray):
        chunks = max(1, -(-len(obj) // parts)) if len(obj) else 1
        return da.from_array(obj, chunks=(chunks, *obj.shape[1:]))
    collection = dd.from_pandas(obj, npartitions=parts, sort=False)
    if empty:
        collection = collection.map_partitions(_every_third, meta=collection._meta)
    return collection


def _every_third(part: Any) -> Any:
    return part.iloc[::3]


@given(table=tables(), parts=st.integers(1, 4), empty=st.booleans())
def test_a_collection_dask_made_gathers_as_its_compute(
    client: Any, table: Table, parts: int, empty: bool
) -> None:
    try:
        collection = client.persist(_dask_made(table.obj, parts, empty))
        want = collection.compute()
    except Exception:  # a shape Dask itself cannot make or compute: not ours to gather
        assume(False)
        raise
    try:
        back = to_cpu(collection, gather=True)
    except ConversionError as err:
        assert_refusal(err, "argument")
        return
    # Dask's compute gives some big-endian values in this machine's order, and --gather the
    # collection's own dtype (its meta): the same numbers either way
    assert_same(native(back), native(want))


# -- through the magics, in a real shell ---------------------------------------------------------


@pytest.fixture(scope="module")
def magic_shell(client: Any) -> Iterator[Any]:
    """One real IPython shell for the module, the extension loaded, ``client`` the default."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "gpudask_jupyter")
    try:
        yield ip
    finally:
        ip.run_line_magic("unload_ext", "gpudask_jupyter")
        for name in ("df", "back"):
            ip.user_ns.pop(name, None)


def _cell(ip: Any, code: str, capsys: Any) -> tuple[Any, str]:
    """Run a cell; (what it raised, or None; what it printed to stderr)."""
    result = ip.run_cell(code)
    return result.error_in_exec, capsys.readouterr().err


@given(table=st.one_of(frames(max_columns=3), series(), arrays()))
def test_the_magics_show_a_sentence_or_move_the_table(
    magic_shell: Any, client: Any, table: Table, capsys: Any
) -> None:
    from IPython.core.error import UsageError

    ip = magic_shell
    ip.user_ns["df"] = table.obj
    error, said = _cell(ip, "%%to_gpu df -q\npass", capsys)  # no GPU: it stays, said once
    assert error is None and ip.user_ns["df"] is table.obj, said
    error, said = _cell(ip, "%%to_gpu --distribute -q df\npass", capsys)
    if error is not None:
        assert isinstance(error, UsageError), said
        assert ip.user_ns["df"] is table.obj  # nothing rebound
        message = str(error)
        assert message.startswith("df: ") and not INTERNAL.search(message), message
        return
    error, said = _cell(ip, "%%to_cpu --gather -q df\npass", capsys)
    assert error is None, said
    assert_same(ip.user_ns["df"], table.obj)
