"""``%gpu_cluster status --verbose``: the last error's full traceback, in a real IPython shell.

The magics show a failure as one sentence; the traceback behind it (and, for a conversion, the
library's own traceback) must still be there for a bug report.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.error import UsageError
from support import free_port, this_kernel

from gpudask_jupyter.convert import Context, Converter, register, unregister


@pytest.fixture(autouse=True)
def _no_error_yet(shell: Any) -> Iterator[None]:
    this_kernel().errors.forget()
    yield
    this_kernel().errors.forget()


def test_without_an_error_verbose_says_there_was_none(shell, capsys) -> None:
    shell.run_line_magic("gpu_cluster", "status --verbose")
    out = capsys.readouterr().out
    assert "No cluster in this kernel" in out
    assert "No gpudask error so far in this kernel." in out


def test_plain_status_shows_no_traceback(shell, capsys) -> None:
    address = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(UsageError):
        shell.run_line_magic("gpu_cluster", f"attach {address} --timeout 1s")
    shell.run_line_magic("gpu_cluster", "status")
    out = capsys.readouterr().out
    assert "Traceback" not in out and "gpudask error" not in out


def test_a_failed_attach_shows_its_traceback(shell, capsys) -> None:
    address = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(UsageError, match=f"No Dask scheduler answered at {address}") as info:
        shell.run_line_magic("gpu_cluster", f"attach {address} --timeout 1s")
    shell.run_line_magic("gpu_cluster", "status -v")
    out = capsys.readouterr().out
    assert "Last gpudask error, at " in out
    assert str(info.value) in out  # the sentence the user saw
    assert "Traceback (most recent call last)" in out
    assert "gpudask_jupyter.errors.ClusterError" in out
    assert "ConnectionRefusedError" in out  # what the connect met, with its frames
    assert "The above exception was the direct cause" in out  # the cause is kept


def test_a_failed_management_command_is_remembered_too(shell, capsys) -> None:
    with pytest.raises(UsageError, match="this kernel has no cluster"):
        shell.run_line_magic("gpu_cluster", "scale 2")
    shell.run_line_magic("gpu_cluster", "status --verbose")
    out = capsys.readouterr().out
    assert "Last gpudask error" in out and "this kernel has no cluster" in out
    assert "ClusterError" in out


class _Host:
    """Host data whose conversion fails deep inside a "library" function."""


class _Device:
    pass


def _library_call() -> None:
    raise RuntimeError("the device library gave up")


def _to_device(obj: _Host, context: Context) -> _Device:
    _library_call()
    return _Device()


@pytest.fixture
def failing_converter(shell: Any) -> Iterator[None]:
    converter = register(
        Converter("_Host", "_Device", "gpu", lambda obj: type(obj) is _Host, _to_device)
    )
    shell.user_ns["_Host"] = _Host
    try:
        yield
    finally:
        unregister(converter)


@pytest.mark.usefixtures("failing_converter")
def test_a_failed_conversion_shows_the_librarys_traceback(shell, capsys) -> None:
    said = "blob: it could not be converted: the library says 'the device library gave up'"
    with pytest.raises(UsageError, match=said):
        shell.run_cell_magic("to_gpu", "", "blob = _Host()")
    shell.run_line_magic("gpu_cluster", "status --verbose")
    out = capsys.readouterr().out
    assert "Last gpudask error" in out and "the library says 'the device library gave up'" in out
    assert "ConversionError" in out
    assert "The library's own traceback:" in out
    assert "in _library_call" in out  # the frame where the library failed
