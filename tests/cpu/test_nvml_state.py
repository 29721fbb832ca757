"""NVML's state in words: each failure of nvmlInit maps to a sentence a user can act on."""

from __future__ import annotations

import pynvml
import pytest

from gpudask_jupyter import config
from gpudask_jupyter.machine import nvml


@pytest.mark.parametrize(
    ("code", "state", "words"),
    [
        (
            pynvml.NVML_ERROR_LIBRARY_NOT_FOUND,
            nvml.NvmlState.NO_LIBRARY,
            "libnvidia-ml.so.1 was not found",
        ),
        (
            pynvml.NVML_ERROR_DRIVER_NOT_LOADED,
            nvml.NvmlState.DRIVER_NOT_LOADED,
            "driver is not loaded",
        ),
        (
            pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
            nvml.NvmlState.VERSION_MISMATCH,
            "different versions",
        ),
        (pynvml.NVML_ERROR_NO_PERMISSION, nvml.NvmlState.NO_PERMISSION, "no permission"),
        (pynvml.NVML_ERROR_UNKNOWN, nvml.NvmlState.ERROR, "NVML could not start"),
    ],
)
def test_init_errors_become_states_with_reasons(
    code: int, state: nvml.NvmlState, words: str
) -> None:
    got_state, reason = nvml.describe_error(pynvml.NVMLError(code))
    assert got_state is state
    assert words in reason


def test_status_here_is_consistent() -> None:
    status = nvml.status()
    if status.available:
        assert nvml.devices()
        assert len(nvml.sample()) == len(nvml.devices())
    else:
        assert status.reason
        assert nvml.devices() == []
        assert nvml.sample() == []
        assert nvml.processes() == []


def test_disabled_by_option() -> None:
    config.set_override("nvml", False)
    nvml.reset()
    try:
        status = nvml.status()
        assert status.state is nvml.NvmlState.DISABLED
        assert "gpudask.nvml = false" in status.reason
    finally:
        config.clear_overrides()
        nvml.reset()
