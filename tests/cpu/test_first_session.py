"""A newcomer's first session, in a real kernel of whatever environment runs the tests.

What the README tells a new user to type, in order: ``%load_ext``, ``%gpu_cluster start``, a
``%%to_gpu`` cell, work on the cluster, the panel, ``%gpu_cluster stop``. The kernel starts in an
empty folder, so it uses the package installed in the environment, not a source tree beside it:
``scripts/test_pythons.sh`` runs this on each Python with the built wheel installed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from support import run_cell, wait_gone

pytestmark = pytest.mark.usefixtures("no_gpu")


@pytest.fixture
def no_gpu() -> None:
    from gpudask_jupyter.machine import nvml

    if nvml.status().available:
        pytest.skip("this session is the one of a machine without a GPU")


@pytest.fixture
def newcomer(runtime_dir: Path, tmp_path: Path) -> Any:
    """A kernel of this environment, started in an empty folder, and its client."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3", connection_file=str(runtime_dir / "kernel-new.json"))
    km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)


def _said(reply: dict[str, Any]) -> str:
    assert reply["status"] == "ok", reply["output"]
    return str(reply["output"])


def test_a_first_session_as_the_readme_tells_it(newcomer: Any) -> None:
    km, kc = newcomer
    package = importlib.util.find_spec("gpudask_jupyter")
    assert package is not None and package.origin is not None
    where = _said(run_cell(kc, "import gpudask_jupyter; print(gpudask_jupyter.__file__)"))
    assert where.strip() == package.origin  # the kernel's package is this environment's

    assert _said(run_cell(kc, "%load_ext gpudask_jupyter")) == ""
    started = _said(run_cell(kc, "client = %gpu_cluster start --n-workers 2"))
    assert "CPU Dask cluster (no GPU): 2 workers" in started, started
    assert "no usable GPU" in started, started

    cell = "import numpy as np, pandas as pd\ndf = pd.DataFrame({'a': np.arange(1000)})\n"
    moved = _said(run_cell(kc, "%%to_gpu\n" + cell))
    assert "no GPU for the conversion" in moved, moved
    kept = _said(run_cell(kc, "print(type(df).__module__.split('.')[0], int(df['a'].sum()))"))
    assert kept.split() == ["pandas", str(sum(range(1000)))]

    work = "print(client.submit(lambda x: x + 1, 41).result(), len(client.nthreads()))"
    assert _said(run_cell(kc, work)).split() == ["42", "2"]

    panel = _said(run_cell(kc, "from gpudask_jupyter import Panel\nPanel()"))
    assert "GPU Dask panel: cluster running, cpu" in panel, panel
    assert "Workers (2):" in panel and "no GPU data (" in panel, panel

    workers = [p for p in psutil.Process(km.provisioner.pid).children(recursive=True)]
    assert workers, "the cluster's processes are the kernel's descendants"
    stopped = _said(run_cell(kc, "%gpu_cluster stop"))
    assert "stopped" in stopped.lower() or "closed" in stopped.lower(), stopped
    km.shutdown_kernel(now=False)
    assert wait_gone(workers, timeout=60) == []
