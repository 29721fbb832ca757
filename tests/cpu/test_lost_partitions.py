"""A collection spread by ``--distribute`` whose worker leaves fails within seconds, with a
sentence naming the variable, instead of waiting for ever for a worker that is gone; ``status``
says it is damaged. Real CPU clusters in a real IPython shell; the worker is killed with SIGKILL
or scaled away."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import numpy as np
import pandas as pd
import pytest
from support import this_kernel, wait_until

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.filterwarnings("ignore::gpudask_jupyter.convert.GpuUnavailableWarning"),
]


def _spread(shell: Any) -> None:
    shell.run_line_magic("gpu_cluster", "start --n-workers 2 --memory-limit 1GB")
    shell.user_ns["df"] = pd.DataFrame({"v": np.arange(200_000.0)})
    shell.run_cell_magic("to_gpu", "--distribute -q --npartitions 4 df", "df = df")


def _compute_fails_in_words(shell: Any) -> float:
    """Seconds until ``df.v.sum().compute()`` fails; its error names df and the way back."""
    started = time.monotonic()
    with pytest.raises(Exception, match=r"df: \d of 4 partitions were lost") as failed:
        shell.ev("df.v.sum().compute()")
    assert "Spread df again" in str(failed.value)
    return time.monotonic() - started


@pytest.mark.parametrize("how", ["SIGKILL", "scale 1"])
def test_a_lost_partition_fails_at_once_and_status_says_so(
    shell: Any, capsys: Any, how: str
) -> None:
    _spread(shell)
    session = this_kernel().current()
    assert session is not None
    if how == "SIGKILL":
        os.kill(session.pids.known()[0], signal.SIGKILL)
    else:
        shell.run_line_magic("gpu_cluster", "scale 1")
    lost_at = time.monotonic()
    seconds = _compute_fails_in_words(shell)
    assert time.monotonic() - lost_at < 15 and seconds < 10
    assert _compute_fails_in_words(shell) < 2  # again, at once: the stand-ins hold the sentence
    capsys.readouterr()

    def status() -> str:
        shell.run_line_magic("gpu_cluster", "status")
        return str(capsys.readouterr().out)

    # the watch notes the damage once the scheduler's answer is back, which can come after the
    # error the scheduler sent the computation (seen once in a full run on two busy cores)
    said = wait_until(lambda: "df: " in (out := status()) and out, 30, "status to name df")
    assert "were lost with worker" in said
    shell.run_line_magic("gpu_cluster", "stop")


def test_a_collection_whose_workers_stay_is_left_alone(shell: Any, capsys: Any) -> None:
    _spread(shell)
    time.sleep(1.0)  # the watch looks several times
    assert shell.ev("df.v.sum().compute()") == np.arange(200_000.0).sum()
    capsys.readouterr()
    shell.run_line_magic("gpu_cluster", "status")
    assert "were lost" not in capsys.readouterr().out
    shell.run_line_magic("gpu_cluster", "stop")


def test_a_lost_task_waiting_for_a_lost_dependency_fails_too() -> None:
    """The CUDA IPC route's partitions depend on the block their worker allocated: lost with
    that worker, a partition waits for a block that cannot be made again. Both are failed, with
    the sentence, and what depends on them fails at once."""
    from distributed import Client, LocalCluster

    from gpudask_jupyter import compat

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        victim = sorted(client.scheduler_info()["workers"])[0]
        block = client.submit(lambda: 1, workers=[victim], allow_other_workers=False, pure=False)
        built = client.submit(
            lambda b: b + 1, block, workers=[victim], allow_other_workers=False, pure=False
        )
        assert built.result(timeout=30) == 2
        del block  # as after a transfer: only the partition is held
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while built.status != "lost":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)  # the scheduler settles: the partition waits for its block
        failed = client.run_on_scheduler(
            compat.fail_unrunnable, keys=[built.key], message="x: lost, spread it again"
        )
        assert failed == [built.key]
        with pytest.raises(RuntimeError, match="x: lost, spread it again"):
            client.submit(lambda v: v, built).result(timeout=10)
