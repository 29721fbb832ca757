"""A task no worker can run fails with a sentence instead of hanging the cell: in a real kernel,
a function from a module the workers cannot import (its folder put on sys.path after the
cluster started) ends every worker it is sent to, taking their nannies with them; the cell
then fails in seconds, naming the module and what to do, and ``%gpu_cluster restart`` brings
the workers back with the kernel's module path of now, where the same work runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import run_cell as run

from gpudask_jupyter.cluster import stranded

pytestmark = pytest.mark.timeout(300)


def test_a_task_from_a_module_the_workers_cannot_import_fails_and_restart_mends(
    kernel: Any, tmp_path: Path
) -> None:
    _, kc = kernel
    (tmp_path / "helpers_only_here.py").write_text("def plus_one(x):\n    return x + 1\n")
    started = run(kc, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start --n-workers 2")
    assert started["status"] == "ok", started["output"]
    imported = run(
        kc, f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport helpers_only_here"
    )
    assert imported["status"] == "ok", imported["output"]

    # without the watch, this cell waits for a worker forever (the test's timeout would end it)
    failed = run(kc, "client.submit(helpers_only_here.plus_one, 1).result()", timeout=120)
    out = failed["output"]
    assert failed["status"] == "error", out
    assert "No worker is left in this kernel's cluster to run this task" in out, out
    assert "No module named 'helpers_only_here'" in out, out
    assert "%gpu_cluster restart starts them with this kernel's module path of now" in out, out
    status = run(kc, "%gpu_cluster status")["output"]
    assert ": 0 workers" in status, status

    restarted = run(kc, "%gpu_cluster restart")
    assert restarted["status"] == "ok", restarted["output"]
    status = run(kc, "%gpu_cluster status")["output"]
    assert ": 2 workers" in status, status
    again = run(kc, "print('GOT', client.submit(helpers_only_here.plus_one, 1).result())")
    assert "GOT 2" in again["output"], again["output"]
    run(kc, "%gpu_cluster stop")


def test_what_the_workers_said_is_read_from_the_kernels_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpudask_jupyter.cluster import logs

    log = tmp_path / "kernel.log"
    log.write_text(
        "2026-12-07 distributed.worker WARNING an older warning\n"
        "ValueError: an older error, not the workers' last\n"
        "2026-12-07 distributed.protocol.core - CRITICAL - Failed to deserialize\n"
        "Traceback (most recent call last):\n"
        '  File "pickle.py", line 1, in loads\n'
        "ModuleNotFoundError: No module named 'a_helper'\n"
        "2026-12-07 distributed.worker INFO closing\n"
    )
    monkeypatch.setattr(logs, "_path", log)
    said = stranded.what_workers_said()
    assert said == "ModuleNotFoundError: No module named 'a_helper'"
    assert "module 'a_helper'" in stranded.sentence(2, said)
    # an error of another kind is quoted as it is; none found: the log is where to look
    other = stranded.sentence(1, "AttributeError: Can't get attribute 'f' on <module '__main__'>")
    assert "Each worker said, as it ended: AttributeError" in other
    assert "%gpu_cluster restart starts the workers again" in other
    log.write_text("2026-12-07 distributed.worker INFO nothing went wrong\n")
    assert stranded.what_workers_said() is None
    assert "status --verbose" in stranded.sentence(1, None)
