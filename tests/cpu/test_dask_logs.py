"""Dask's log lines stay out of the cells: while a cluster of the kernel runs, the scheduler's,
the nannies' and the workers' records go to the kernel's log file, not to stderr (which a
notebook shows in whatever cell runs); a scale that lost computed results says so in words;
status --verbose says where the file is. A real CPU cluster in a real IPython shell; stderr is
read at the file-descriptor level, where the worker processes write too."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpudask_jupyter.cluster import logs

pytestmark = pytest.mark.timeout(240)


def test_dask_logs_to_the_kernels_file_and_not_to_a_cell(kernel: Any) -> None:
    """In a real kernel, where distributed logs to stderr and ipykernel shows stderr (the
    workers' too) in the cells: none of Dask's lines lands in one."""
    from support import run_cell as run

    _, kc = kernel
    reply = run(kc, "%load_ext gpudask_jupyter\nclient = %gpu_cluster start --n-workers 2")
    assert reply["status"] == "ok", reply["output"]
    cells = [
        "import dask.dataframe as dd, numpy as np, pandas as pd, logging\n"
        "frame = pd.DataFrame({'key': np.arange(20_000) % 50, 'x': np.arange(20_000.0)})\n"
        "print(len(dd.from_pandas(frame, npartitions=8).shuffle('key').compute()))\n"  # p2p
        "logging.getLogger('distributed.scheduler').warning('a warning of the scheduler')",
        "%gpu_cluster restart",
        "%gpu_cluster scale 1",
        "import time; time.sleep(2)",  # what the workers log meanwhile
    ]
    for code in cells:
        reply = run(kc, code)
        assert reply["status"] == "ok", reply["output"]
        assert "distributed." not in reply["output"], reply["output"]
        assert "a warning of the scheduler" not in reply["output"]
    reply = run(kc, "%gpu_cluster status --verbose")
    assert "Dask's log of this kernel's cluster: " in reply["output"]
    assert "distributed.scheduler: a warning of the scheduler" in reply["output"]
    where = reply["output"].split("Dask's log of this kernel's cluster: ")[1].split()[0]
    assert "a warning of the scheduler" in Path(where).read_text()


def test_a_scale_that_lost_results_says_so(shell: Any, capfd: Any) -> None:
    client = shell.run_line_magic("gpu_cluster", "start --n-workers 2 --memory-limit 1GB")
    held = client.map(lambda i: np.ones(1000) * i, range(40), pure=False)
    client.gather(held)
    capfd.readouterr()
    shell.run_line_magic("gpu_cluster", "scale 1")
    out, err = capfd.readouterr()
    assert "distributed." not in err, err
    if logs.lost_results(logs.recent(50)):  # whether Dask moved them first is its own choice
        assert "computed result" in out and "computes them again" in out
    del held
    shell.run_line_magic("gpu_cluster", "stop")


def test_unloading_puts_distributeds_handler_back(shell: Any) -> None:
    logger = logging.getLogger("distributed")
    own = logging.StreamHandler()  # distributed's own, as it installs it outside pytest
    logger.addHandler(own)
    try:
        shell.run_line_magic("gpu_cluster", "start --n-workers 1 --memory-limit 1GB")
        assert own not in logger.handlers
        shell.run_line_magic("unload_ext", "gpudask_jupyter")
        assert own in logger.handlers
        shell.run_line_magic("load_ext", "gpudask_jupyter")
    finally:
        logger.removeHandler(own)


def test_the_log_goes_with_the_kernel_unless_dask_logged_an_error(
    shell: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Unloading (as the kernel's end does) removes a log with no error in it; one with an error
    stays, and the end says where."""
    shell.run_line_magic("gpu_cluster", "start --n-workers 1 --memory-limit 1GB")
    quiet = logs.path()
    assert quiet is not None and quiet.exists()
    shell.run_line_magic("unload_ext", "gpudask_jupyter")
    assert not quiet.exists()
    shell.run_line_magic("load_ext", "gpudask_jupyter")
    shell.run_line_magic("gpu_cluster", "start --n-workers 1 --memory-limit 1GB")
    failed = logs.path()
    assert failed is not None
    logging.getLogger("distributed.nanny").error("a worker died")
    with caplog.at_level(logging.WARNING, logger="gpudask_jupyter.cluster.logs"):
        shell.run_line_magic("unload_ext", "gpudask_jupyter")
    assert failed.exists() and "a worker died" in failed.read_text()
    assert f"its log stays at {failed}" in caplog.text
    failed.unlink()
    shell.run_line_magic("load_ext", "gpudask_jupyter")


def test_the_lost_results_are_counted_from_the_schedulers_words() -> None:
    said = logs.Said(
        0.0,
        logging.WARNING,
        "distributed.scheduler",
        "Removing worker 'tls://127.0.0.1:1' caused the cluster to lose already computed "
        "task(s), which will be recomputed elsewhere: {('x-1', 0), 'y', ('z', 1, 2)} "
        "(stimulus_id='s')",
    )
    assert logs.lost_results([said]) == 3
