"""%%to_gpu --distribute and %%to_cpu --gather in a real IPython shell with a real CPU cluster:
the flags reach the distribute path, bad combinations are refused before the cell runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from IPython.core.error import UsageError

from gpudask_jupyter.convert.distribute import shared_memory

pytestmark = pytest.mark.filterwarnings("ignore::gpudask_jupyter.convert.GpuUnavailableWarning")


def test_distribute_and_gather_through_the_cell_magics(shell: Any, capsys: Any) -> None:
    import dask.dataframe as dd

    shell.run_line_magic("gpu_cluster", "start --n-workers 2 --memory-limit 1GB")
    shell.run_cell_magic(
        "to_gpu",
        "--distribute --npartitions 4 -q",
        "import pandas as pd, numpy as np\n"
        "df = pd.DataFrame({'k': np.arange(40_000) % 7, 'v': np.arange(40_000.0)})\n",
    )
    spread = shell.user_ns["df"]
    assert isinstance(spread, dd.DataFrame) and spread.npartitions == 4
    expected = (
        pd.DataFrame({"k": np.arange(40_000) % 7, "v": np.arange(40_000.0)}).groupby("k").v.mean()
    )
    shell.run_cell("means = df.groupby('k').v.mean().compute()")
    pd.testing.assert_series_equal(shell.user_ns["means"].sort_index(), expected)

    capsys.readouterr()
    shell.run_cell_magic("to_cpu", "--gather df", "pass\n")
    back = shell.user_ns["df"]
    assert isinstance(back, pd.DataFrame) and len(back) == 40_000
    assert "--gather" in capsys.readouterr().out  # the report's title names the route
    assert not [n for n in shared_memory.ours() if not n.endswith(".probe")]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("--distribute --device 0", "--device and --distribute exclude each other"),
        ("--npartitions 3", "--npartitions goes with --distribute"),
        ("--npartitions 0 --distribute", "must be 1 or more"),
    ],
)
def test_bad_combinations_are_refused_before_the_cell_runs(
    shell: Any, line: str, said: str
) -> None:
    with pytest.raises(UsageError, match=said):
        shell.run_cell_magic("to_gpu", line, "ran = True\n")
    assert "ran" not in shell.user_ns


def test_distribute_without_a_cluster_says_how_to_get_one(shell: Any) -> None:
    with pytest.raises(UsageError, match="gpu_cluster start"):
        shell.run_cell_magic("to_gpu", "--distribute", "import pandas as pd\nx = pd.Series([1])\n")
    assert isinstance(shell.user_ns["x"], pd.Series)


def test_panel_text_flag_prints_a_snapshot(shell: Any, capsys: Any) -> None:
    shell.run_line_magic("gpu_cluster", "panel --text")
    assert capsys.readouterr().out.startswith("GPU Dask panel:")


@pytest.mark.parametrize(
    ("call", "said"),
    [
        ({"distribute": True, "device": 0}, "device and distribute exclude each other"),
        ({"npartitions": 3}, "npartitions goes with distribute=True"),
        ({"client": object()}, "client goes with distribute=True"),
        ({"distribute": True, "npartitions": -1}, r"whole number of 1 or more \(got -1\)"),
        ({"distribute": True, "npartitions": True}, r"whole number of 1 or more \(got True\)"),
        ({"distribute": True, "npartitions": 2.5}, r"got 2.5"),
        ({"device": -1}, "GPU index, 0 or more"),
        ({"device": True}, "GPU index, 0 or more"),
    ],
)
def test_the_functions_refuse_what_they_would_drop(call: dict[str, Any], said: str) -> None:
    from gpudask_jupyter import to_gpu
    from gpudask_jupyter.errors import ArgumentError

    with pytest.raises(ArgumentError, match=said):
        to_gpu(np.arange(3), **call)


def test_to_cpu_refuses_a_client_without_gather() -> None:
    from gpudask_jupyter import to_cpu
    from gpudask_jupyter.errors import ArgumentError

    with pytest.raises(ArgumentError, match="client goes with gather=True"):
        to_cpu(np.arange(3), client=object())
