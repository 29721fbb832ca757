"""Importing the package and loading the extension stay cheap: no heavy library is imported."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["dask", "distributed", "pandas", "numpy", "cupy", "cudf", "pynvml", "dask_cuda", "rmm"]


def _imported_after(code: str) -> list[str]:
    probe = f"""
import sys, json
{code}
print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_pulls_in_nothing_heavy() -> None:
    assert _imported_after("import gpudask_jupyter") == []


def test_load_ext_pulls_in_no_gpu_library_nor_distributed() -> None:
    code = """
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "gpudask_jupyter")
assert "gpu_cluster" in ip.magics_manager.magics["line"]
"""
    loaded = _imported_after(code)
    assert not {"cupy", "cudf", "distributed", "pynvml", "dask_cuda"} & set(loaded), loaded


def test_public_names_resolve_lazily() -> None:
    import gpudask_jupyter

    assert gpudask_jupyter.__version__
    assert "to_gpu" in dir(gpudask_jupyter)
