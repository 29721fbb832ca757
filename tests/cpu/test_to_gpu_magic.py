"""%%to_gpu / %%to_cpu in a real IPython shell, with converters registered by the tests.

CI has no GPU library; a converter registered here stands where cuDF/CuPy would, so the name
tracking, the transaction, the roll-back, the report and the messages are exercised for real.
"""

from __future__ import annotations

import gc
import importlib.util
import re
import sys
import weakref
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from IPython.core.error import UsageError

import gpudask_jupyter
from gpudask_jupyter.convert import Context, Converter, register, unregister
from gpudask_jupyter.convert.failures import ColumnFailure


class HostBlob:
    """Stands for host data; ``fail`` makes its conversion raise that exception."""

    def __init__(self, payload: bytes, fail: BaseException | None = None) -> None:
        self.payload = payload
        self.fail = fail
        self.shape = (len(payload),)
        self.nbytes = len(payload)


class DeviceBlob:
    made: ClassVar[weakref.WeakSet[DeviceBlob]] = weakref.WeakSet()  # roll-back leaves none

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.shape = (len(payload),)
        self.nbytes = len(payload)
        DeviceBlob.made.add(self)


def live() -> int:
    gc.collect()
    return len(DeviceBlob.made)


def _to_device(obj: HostBlob, context: Context) -> DeviceBlob:
    staged = DeviceBlob(obj.payload)  # allocated before failing, like a half-done copy
    if obj.fail is not None:
        raise obj.fail
    context.path = "test"
    return staged


def _to_host(obj: DeviceBlob, context: Context) -> HostBlob:
    return HostBlob(obj.payload)


def _is(kind: type) -> Any:
    return lambda obj: type(obj) is kind


@pytest.fixture
def blobs(shell: Any) -> Iterator[None]:
    up = register(Converter("HostBlob", "DeviceBlob", "gpu", _is(HostBlob), _to_device))
    down = register(Converter("DeviceBlob", "HostBlob", "cpu", _is(DeviceBlob), _to_host))
    DeviceBlob.made = weakref.WeakSet()
    shell.user_ns["HostBlob"] = HostBlob
    try:
        yield
    finally:
        unregister(up)
        unregister(down)


pytestmark = pytest.mark.usefixtures("blobs")


def test_names_created_or_rebound_by_the_cell_are_moved(shell, capsys) -> None:
    shell.user_ns["kept"] = HostBlob(b"old")
    shell.user_ns["rebound"] = HostBlob(b"old")
    kept = shell.user_ns["kept"]
    shell.run_cell_magic("to_gpu", "", "a = HostBlob(b'abc')\nrebound = HostBlob(b'new')\nn = 3")
    ns = shell.user_ns
    assert isinstance(ns["a"], DeviceBlob) and ns["a"].payload == b"abc"
    assert isinstance(ns["rebound"], DeviceBlob)
    assert ns["kept"] is kept  # untouched by the cell: left alone
    out = capsys.readouterr().out
    assert "HostBlob → DeviceBlob" in out
    assert "skipped: n (int)" in out
    assert "GB/s" in out


def test_rebinding_to_a_recycled_id_is_noticed(shell) -> None:
    shell.user_ns["x"] = HostBlob(b"1")
    shell.run_cell_magic("to_gpu", "-q", "del x\nx = HostBlob(b'2')")
    assert isinstance(shell.user_ns["x"], DeviceBlob)


def test_explicit_names_and_exclude(shell) -> None:
    shell.user_ns["old"] = HostBlob(b"o")
    shell.run_cell_magic("to_gpu", "old b -q", "a = HostBlob(b'a')\nb = HostBlob(b'b')")
    ns = shell.user_ns
    assert isinstance(ns["old"], DeviceBlob) and isinstance(ns["b"], DeviceBlob)
    assert isinstance(ns["a"], HostBlob)
    shell.run_cell_magic("to_gpu", "--exclude c -q", "c = HostBlob(b'c')\nd = HostBlob(b'd')")
    assert isinstance(ns["c"], HostBlob) and isinstance(ns["d"], DeviceBlob)


def test_one_failure_rolls_back_every_name(shell) -> None:
    ns = shell.user_ns
    ns["before"] = HostBlob(b"keep")
    original = ns["before"]
    cell = (
        "before = HostBlob(b'b2')\n"
        "first = HostBlob(b'x')\n"
        "second = HostBlob(b'y', fail=RuntimeError('boom'))"
    )
    said = "second: it could not be converted: the library says 'boom'; use --exclude second"
    with pytest.raises(UsageError, match=said):
        shell.run_cell_magic("to_gpu", "", cell)
    assert isinstance(ns["first"], HostBlob) and ns["first"].payload == b"x"
    assert isinstance(ns["second"], HostBlob)
    assert (
        isinstance(ns["before"], HostBlob) and ns["before"] is not original
    )  # the cell's own binding
    assert live() == 0  # nothing half-converted is kept alive (not even by the traceback)


def test_out_of_memory_message_names_variable_and_remedy(shell) -> None:
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic(
            "to_gpu",
            "",
            "big = HostBlob(b'z' * 4096, fail=MemoryError('std::bad_alloc: out_of_memory'))",
        )
    message = str(info.value)
    assert message.startswith("big: out of GPU memory (it needs about 4 KiB")
    assert "--exclude big" in message
    assert live() == 0


def test_mixed_column_message(shell) -> None:
    shell.user_ns["_failure"] = ColumnFailure(
        "c", TypeError("Cannot create column with mixed types")
    )
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("to_gpu", "", "df = HostBlob(b'd', fail=_failure)")
    assert str(info.value) == (
        "df: column 'c' holds mixed Python objects; convert it "
        "(e.g. df['c'] = df['c'].astype(str)) or use --exclude df to leave it on the host"
    )


def test_cell_exception_converts_nothing_and_fails_the_cell(shell, capsys) -> None:
    with pytest.raises(UsageError, match="the cell raised an exception"):
        shell.run_cell_magic("to_gpu", "", "a = HostBlob(b'a')\n1 / 0")
    assert isinstance(shell.user_ns["a"], HostBlob)
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_cell_output_shows_as_usual(shell, capsys) -> None:
    shell.run_cell_magic("to_gpu", "-q", "print('hello')\nx = HostBlob(b'x')")
    assert "hello" in capsys.readouterr().out


def test_aliases_stay_aliases(shell) -> None:
    shell.run_cell_magic("to_gpu", "-q", "a = HostBlob(b'a')\nb = a")
    assert shell.user_ns["a"] is shell.user_ns["b"]
    assert live() == 1


def test_to_cpu_reverse(shell) -> None:
    shell.run_cell_magic("to_gpu", "-q", "a = HostBlob(b'round')")
    shell.run_cell_magic("to_cpu", "-q", "b = a")
    assert isinstance(shell.user_ns["b"], HostBlob) and shell.user_ns["b"].payload == b"round"


def test_quiet_prints_nothing(shell, capsys) -> None:
    capsys.readouterr()
    shell.run_cell_magic("to_gpu", "-q", "a = HostBlob(b'a')")
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--device -1", "must be 0 or more"),
        ("--device x", "expected a GPU number"),
        ("--bogus", "unrecognized arguments: --bogus"),
        ("1abc", "'1abc' is not a variable name"),
    ],
)
def test_bad_arguments_do_not_run_the_cell(shell, line: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("to_gpu", line, "ran = True")
    assert message in str(info.value)
    assert "usage: %%to_gpu" in str(info.value)
    assert "ran" not in shell.user_ns


def test_named_variable_must_exist(shell) -> None:
    with pytest.raises(UsageError, match="nope: no such variable after the cell"):
        shell.run_cell_magic("to_gpu", "nope", "x = 1")


def test_help(shell, capsys) -> None:
    shell.run_cell_magic("to_gpu", "--help", "never = 1")
    out = capsys.readouterr().out
    assert "--exclude" in out and "--device" in out
    assert "never" not in shell.user_ns
    assert "every name is moved or none is" in shell.find_cell_magic("to_gpu").__doc__


def test_api_converts_and_leaves_unknown_objects() -> None:
    moved = gpudask_jupyter.to_gpu(HostBlob(b"api"))
    assert isinstance(moved, DeviceBlob)
    assert isinstance(gpudask_jupyter.to_cpu(moved), HostBlob)
    marker = object()
    assert gpudask_jupyter.to_gpu(marker) is marker
    said = "argument: it could not be converted: the library says 'no'"
    with pytest.raises(gpudask_jupyter.convert.ConversionError, match=said):
        gpudask_jupyter.to_gpu(HostBlob(b"x", fail=RuntimeError("no")))


def test_api_failure_rolls_back_and_keeps_the_library_traceback() -> None:
    with pytest.raises(gpudask_jupyter.convert.ConversionError) as info:
        gpudask_jupyter.to_gpu(HostBlob(b"x", fail=RuntimeError("no")))
    assert info.value.name == "argument"
    assert info.value.hint == "keep it on the host"
    assert "RuntimeError: no" in info.value.details and "_to_device" in info.value.details
    assert live() == 0  # the half-built device object was dropped


# -- the built-in converters on a machine without a GPU library ---------------------------------

no_cupy = pytest.mark.skipif(
    importlib.util.find_spec("cupy") is not None, reason="this machine has CuPy; see tests/gpu"
)


def _why() -> str:
    from gpudask_jupyter.machine import availability

    why = availability.reason()
    assert why in {availability.NO_DRIVER, f"cupy is not installed ({availability.INSTALL})"}
    return why


@no_cupy
def test_without_gpu_data_stays_on_host_and_user_is_told_once(shell, capsys) -> None:
    from gpudask_jupyter.convert import forget_notices

    forget_notices()
    shell.run_cell_magic(
        "to_gpu",
        "",
        "import numpy as np\nimport pandas as pd\n"
        "arr = np.arange(10)\ndf = pd.DataFrame({'a': arr})",
    )
    captured = capsys.readouterr()
    assert type(shell.user_ns["arr"]).__module__ == "numpy"
    assert type(shell.user_ns["df"]).__name__ == "DataFrame"
    why = _why()  # no driver here, or no CuPy: the same reason for every variable
    assert captured.err.count("gpudask: no GPU for the conversion") == 1
    assert f"gpudask: no GPU for the conversion ({why})" in captured.err
    assert "the data stays on the host" in captured.err
    assert "skipped: " in captured.out and f"arr (NumPy: {why}" in captured.out
    assert "np (module)" in captured.out
    shell.run_cell_magic("to_gpu", "-q", "arr2 = np.arange(3)")
    assert "no GPU for the conversion" not in capsys.readouterr().err  # told once


@no_cupy
def test_without_gpu_require_gpu_is_an_error(shell) -> None:
    with pytest.raises(
        UsageError, match=rf"arr stays on the host: {re.escape(_why())}.*--require-gpu"
    ):
        shell.run_cell_magic("to_gpu", "--require-gpu", "import numpy as np\narr = np.arange(10)")
    assert type(shell.user_ns["arr"]).__module__ == "numpy"


@no_cupy
def test_without_gpu_api_warns_and_returns_the_object() -> None:
    import numpy as np

    from gpudask_jupyter.convert import GpuUnavailableWarning, forget_notices

    forget_notices()
    arr = np.arange(4)
    with pytest.warns(GpuUnavailableWarning, match=re.escape(_why())):
        assert gpudask_jupyter.to_gpu(arr) is arr
    with pytest.raises(gpudask_jupyter.errors.NoGpuError, match="argument stays on the host"):
        gpudask_jupyter.to_gpu(arr, require_gpu=True)


@no_cupy
def test_without_gpu_api_warning_points_at_the_caller() -> None:
    import numpy as np

    from gpudask_jupyter.convert import GpuUnavailableWarning, forget_notices

    forget_notices()
    with pytest.warns(GpuUnavailableWarning) as caught:
        gpudask_jupyter.to_gpu(np.arange(4))
    assert caught[0].filename == __file__


@no_cupy
def test_without_gpu_api_follows_the_require_gpu_option() -> None:
    import numpy as np

    from gpudask_jupyter import config
    from gpudask_jupyter.convert import GpuUnavailableWarning, forget_notices

    forget_notices()
    arr = np.arange(4)
    config.set_override("require-gpu", True)
    try:
        with pytest.raises(gpudask_jupyter.errors.NoGpuError, match="the require-gpu option"):
            gpudask_jupyter.to_gpu(arr)
        with pytest.warns(GpuUnavailableWarning):  # the argument wins over the option
            assert gpudask_jupyter.to_gpu(arr, require_gpu=False) is arr
        assert gpudask_jupyter.to_cpu(arr) is arr  # nothing to bring back, nothing required
    finally:
        config.clear_overrides()


def test_import_of_convert_imports_no_gpu_library() -> None:
    import subprocess

    code = (
        "import sys, gpudask_jupyter.convert as c, numpy as np\n"
        "c.find(np.arange(3), 'gpu')\n"
        "print([m for m in ('cupy', 'cudf', 'dask') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
