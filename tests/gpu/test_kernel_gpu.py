"""The kernel ended or interrupted in the middle of a GPU transfer, on a real GPU: SIGTERM during
a large ``%%to_gpu`` ends the kernel within seconds (its pinned stager, whose lock the transfer
holds, is closed without waiting for it), and Ctrl-C returns within two seconds, rebinding
nothing and freeing the GPU memory the transfer took."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest
from support import ANSWERED_WITHIN, printed, read_iopub, wait_until
from support import run_cell as run

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(300)]

BIG = (
    "%%to_gpu -q\n"
    "import numpy as np\n"
    "big = np.ones(6 * 2**30 // 8)\n"  # 6 GiB: a transfer of a few tenths of a second
    "print('MADE', flush=True)\n"
)


def _start_big(kc: Any) -> str:
    """Run BIG and return once its array is made, so that the transfer is what runs next.

    A fixed sleep let the interrupt land while ``np.ones`` was still writing 6 GiB on a slow
    host, where the right answer (no ``big`` at all) is not what the test is about."""
    msg_id: str = kc.execute(BIG)
    read_iopub(kc, printed(msg_id, "MADE"), 120, "the array to be made")
    time.sleep(0.05)  # the moment of the fault: into the transfer, not a wait for anything
    return msg_id


def _wait_transfer(kc: Any) -> None:
    reply = run(kc, "%load_ext gpudask_jupyter\nimport numpy as np\nwarm = np.ones(2**27)")
    assert reply["status"] == "ok", reply["output"]
    reply = run(kc, "%%to_gpu -q\nwarm = warm\n")  # the stager and CUDA are up
    assert reply["status"] == "ok", reply["output"]


def test_sigterm_during_a_gpu_transfer_ends_the_kernel_at_once(kernel: Any) -> None:
    km, kc = kernel
    _wait_transfer(kc)
    _start_big(kc)
    process = km.provisioner.process
    os.kill(process.pid, signal.SIGTERM)
    wait_until(lambda: process.poll() is not None, 30, "the kernel to end of SIGTERM in a transfer")


def test_ctrl_c_during_a_gpu_transfer_rebinds_nothing_and_frees_the_gpu(kernel: Any) -> None:
    km, kc = kernel
    _wait_transfer(kc)
    before = run(kc, "import cupy\nprint('FREE', cupy.cuda.runtime.memGetInfo()[0])")
    free_before = int(before["output"].split("FREE ")[1].split()[0])
    msg_id = _start_big(kc)
    interrupted = time.monotonic()
    km.interrupt_kernel()
    while True:
        reply = kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    assert time.monotonic() - interrupted < ANSWERED_WITHIN
    outputs: list[str] = []

    def freed() -> bool:  # the undo runs on its own thread: the memory comes back once it ran
        after = run(
            kc,
            "import gc; gc.collect(); cupy.get_default_memory_pool().free_all_blocks()\n"
            "print('KIND', type(big).__module__, 'FREE', cupy.cuda.runtime.memGetInfo()[0])",
        )
        outputs.append(after["output"])
        assert "KIND numpy" in after["output"], after["output"]  # nothing rebound
        return int(after["output"].split("FREE ")[1].split()[0]) > free_before - 2**30

    wait_until(freed, 60, lambda: f"the GPU memory to be freed: {free_before}, {outputs[-1:]}")
