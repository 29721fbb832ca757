"""Out of GPU memory on a shared machine, said with the share: an IPython exception handler.

Students mostly compute with plain cuDF and CuPy, and an allocation beyond the room's cap fails
with RMM's own line (``std::bad_alloc: out_of_memory: RMM failure at: ...: Exceeded memory limit
...``), a line about C++, not about the student's share. While the extension is loaded, a
``MemoryError`` a cell raises (in the kernel, or in a task of its worker, which distributed
raises again in the cell) gets one more line at the end of its traceback: the share, what the
capped side holds, who holds the rest of the GPU and what to do
(:func:`..cluster.room.explain_out_of_memory`). Everything else shows as IPython shows it, and a
handler another extension installed first is left alone.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any

from .. import compat
from ..cluster import room

log = logging.getLogger(__name__)

# per process: IPython has one shell per process (InteractiveShell.instance), with one custom
# exception handler
_shell: Any = None  # the shell whose handler is ours


def _from_a_task(tb: TracebackType | None) -> bool:
    """Whether the error came back from a task on the cluster: distributed's client raised it."""
    while tb is not None:
        if "distributed/client.py" in tb.tb_frame.f_code.co_filename.replace("\\", "/"):
            return True
        tb = tb.tb_next
    return False


def _handler(
    shell: Any, etype: type, value: BaseException, tb: TracebackType, tb_offset: Any = None
) -> None:
    stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    try:
        said = room.explain_out_of_memory(value, from_worker=_from_a_task(tb))
    except Exception:  # the library's own traceback is still shown
        log.warning("cannot say which share this out-of-memory error hit", exc_info=True)
        said = None
    if said:
        stb = [*stb, said]
    compat.show_structured_traceback(shell, etype, value, stb)


def install(shell: Any) -> None:
    """Handle ``MemoryError`` in ``shell``'s cells, unless another handler is installed."""
    global _shell
    if shell.custom_exceptions:
        log.info("another exception handler is installed; out-of-memory errors stay as they are")
        return
    shell.set_custom_exc((MemoryError,), _handler)
    _shell = shell


def uninstall(shell: Any) -> None:
    global _shell
    if _shell is shell and shell.custom_exceptions == (MemoryError,):
        shell.set_custom_exc((), None)
    _shell = None
