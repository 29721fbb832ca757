"""Where GPU conversions cannot run, the reason points where the fix is, and is said once.

On a machine without an NVIDIA driver, installing the GPU libraries would not help: the reason
says there is no driver or GPU, whatever is installed, and since every converter then gives the
same reason, ``%%to_gpu`` says it once for the whole cell, not once per variable.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpudask_jupyter import config
from gpudask_jupyter.convert import forget_notices
from gpudask_jupyter.machine import availability, nvml

driverless = pytest.mark.skipif(
    nvml.status().state
    not in {nvml.NvmlState.NO_LIBRARY, nvml.NvmlState.DRIVER_NOT_LOADED, nvml.NvmlState.NO_DEVICES},
    reason="this machine has an NVIDIA driver with GPUs",
)


@pytest.fixture
def fresh() -> Iterator[None]:
    availability._cache.clear()
    forget_notices()
    yield
    availability._cache.clear()
    forget_notices()
    config.clear_overrides()
    nvml.reset()


@driverless
def test_without_a_driver_every_converter_says_so_and_nobody_is_told_to_install(fresh) -> None:
    reasons = {
        availability.reason(),
        availability.reason("cudf"),
        availability.reason("cudf", "dask_cudf"),
    }
    assert reasons == {availability.NO_DRIVER} == {"no NVIDIA driver/GPU on this machine"}
    assert availability.device_count() == 0


@driverless
def test_to_gpu_says_it_once_for_a_cell_of_several_variables(fresh, shell, capsys) -> None:
    shell.run_cell_magic(
        "to_gpu",
        "-q",
        "import numpy as np, pandas as pd, dask.array as da\n"
        "a = np.arange(3)\nb = np.ones(4)\ndf = pd.DataFrame({'x': [1, 2]})\nd = da.ones(4)",
    )
    err = capsys.readouterr().err
    assert err.count("gpudask:") == 1, err
    assert "no GPU for the conversion (no NVIDIA driver/GPU on this machine)" in err
    assert "pip install" not in err
    shell.run_cell_magic("to_gpu", "-q", "e = np.arange(2)")
    assert "gpudask:" not in capsys.readouterr().err  # and once per kernel
    for name in ("np", "pd", "da", "a", "b", "df", "d", "e"):  # the shell is shared by tests
        shell.user_ns.pop(name, None)


def test_where_nvml_cannot_tell_a_missing_library_is_named_with_the_fix(fresh) -> None:
    import importlib.util

    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("this machine has CuPy")
    config.set_override("nvml", False)
    nvml.reset()
    assert availability.reason() == f"cupy is not installed ({availability.INSTALL})"
