"""Out of GPU memory under a share, said with the share, on real kernels of a shared machine
(the room's test seam for the GPUs, CPU clusters): whichever library allocated, in the kernel or
in a task of its worker, the cell's traceback ends with the student's share, what the capped
side holds, who holds the rest and what to do, after RMM's own line; a host ``MemoryError`` and
a kernel without a share are shown as IPython shows them. An elastic start says what the share
can rely on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import run_cell as run

pytestmark = pytest.mark.timeout(240)

START = "%load_ext gpudask_jupyter\nclient = %gpu_cluster start --n-workers 1 --memory-limit 1GB"
#: what RMM's limiting adaptor raises (cuDF, CuPy through RMM, Numba through RMM alike)
RMM = (
    "std::bad_alloc: out_of_memory: RMM failure at:/__w/rmm/rmm/cpp/src/mr/detail/"
    "limiting_resource_adaptor_impl.cpp:61: Exceeded memory limit 4294967296; Allocated bytes "
    "4194304000; Requested bytes 3221225472"
)
SENTENCE = "Out of GPU memory under your share: your share of GPU 0 on this shared machine is"


@pytest.fixture
def elastic(room_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The room of ``room_env`` as an instructor who set nothing leaves it: no room-students."""
    monkeypatch.setenv("DASK_GPUDASK__ROOM_STUDENTS", "0")
    return room_env


def test_an_allocation_beyond_the_share_names_it_in_the_kernel_and_in_a_task(
    kernels: Any, elastic: Path
) -> None:
    _, kc = kernels()
    started = run(kc, START)
    assert started["status"] == "ok", started["output"]
    said = started["output"]
    assert "room: GPU 0 had nobody else (the most memory its holders do not hold)" in said, said
    assert "It is an equal part of what the GPU's holders do not hold" in said, said
    assert "never below what you hold, which is never taken back" in said, said

    kernel = run(kc, f"raise MemoryError({RMM!r})")
    out = kernel["output"]
    assert kernel["status"] == "error" and "Exceeded memory limit" in out
    assert SENTENCE in out, out
    assert "for this kernel, which holds 0 B" in out
    assert "Free what you no longer need" in out and "%gpu_cluster room" in out

    task = run(
        kc,
        f"def allocate():\n    raise MemoryError({RMM!r})\nclient.submit(allocate).result()",
    )
    out = task["output"]
    assert SENTENCE in out, out
    assert "for its worker, which hit that cap" in out, out

    host = run(kc, "raise MemoryError('cannot allocate 10 GiB on the host')")
    assert "MemoryError" in host["output"] and SENTENCE not in host["output"]


def test_without_a_share_an_out_of_memory_error_is_shown_as_ever(kernels: Any) -> None:
    _, kc = kernels()
    assert run(kc, "%load_ext gpudask_jupyter")["status"] == "ok"
    out = run(kc, f"raise MemoryError({RMM!r})")["output"]
    assert "Exceeded memory limit" in out and SENTENCE not in out


def test_another_handler_installed_first_is_left_alone(kernels: Any) -> None:
    _, kc = kernels()
    reply = run(
        kc,
        "ip = get_ipython()\n"
        "ip.set_custom_exc((ZeroDivisionError,), lambda *a, **k: print('theirs'))\n"
        "%load_ext gpudask_jupyter\n"
        "print(ip.custom_exceptions)",
    )
    assert "(<class 'ZeroDivisionError'>,)" in reply["output"], reply["output"]
