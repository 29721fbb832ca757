"""``ipython script.ipy`` starts a cluster as a notebook does.

Worker processes are started with multiprocessing's spawn, which re-runs the parent's
``__main__.__file__``; an ``.ipy`` file is not Python, and every worker used to die of a
SyntaxError. A real ``ipython`` process runs a real script here: start, compute, restart (the
nannies spawn again), stop.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """\
%load_ext gpudask_jupyter
import os
client = %gpu_cluster start --n-workers 1 --threads-per-worker 1 --memory-limit 1GB
print("RESULT", client.submit(sum, [1, 2, 3]).result())
%gpu_cluster restart
print("AFTER RESTART", client.submit(os.getpid).result() != os.getpid())
print("FILE", __file__.endswith("job.ipy"))
%gpu_cluster stop
"""


@pytest.mark.timeout(240)
def test_an_ipy_script_starts_computes_and_stops(tmp_path: Path) -> None:
    script = tmp_path / "job.ipy"
    script.write_text(SCRIPT)
    env = {**os.environ, "DASK_GPUDASK__NVML": "false"}  # the CPU fallback, on any machine
    done = subprocess.run(
        [sys.executable, "-m", "IPython", "--no-banner", "--colors=nocolor", str(script)],
        capture_output=True,
        text=True,
        timeout=200,
        cwd=tmp_path,
        env=env,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "RESULT 6" in done.stdout, output[-3000:]
    assert "AFTER RESTART True" in done.stdout
    assert "FILE True" in done.stdout  # the script's own __file__ is untouched
    assert "Cluster stopped" in done.stdout
    assert "SyntaxError" not in output
