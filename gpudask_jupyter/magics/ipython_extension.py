"""Loading the extension into a shell, and unloading it: the magics, their tab completion, the
closing of what they start when the kernel shuts down or gets SIGTERM, the background imports
after a cell, and on a shared machine the kernel placed at its first import of a GPU library.
IPython finds these two functions on the package (``%load_ext gpudask_jupyter``), which takes
them from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

_magics: Any = None  # the magics registered in the shell, while loaded


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register the magics, their tab completion, and the closing of what they start when the
    kernel shuts down or gets SIGTERM (:mod:`..lifecycle.shutdown`); once the running cell has
    finished, import what a start needs in the background (:mod:`..cluster.prewarm`); on a
    shared machine, place and cap the kernel at its first import of a GPU library
    (:mod:`..cluster.room.import_hook`)."""
    global _magics
    from ..cluster import prewarm
    from ..cluster.room import import_hook
    from ..gpu_time.kernel import kernel_cells
    from ..lifecycle import shutdown
    from ..remains import leftovers
    from . import completion, out_of_memory
    from .gpudask_magics import GpuDaskMagics

    leftovers.remove()
    if _magics is not None:
        unload_ipython_extension(ipython)
    _magics = GpuDaskMagics(shell=ipython, parent=ipython)
    ipython.register_magics(_magics)
    ipython.configurables.append(_magics)
    completion.install(ipython)
    out_of_memory.install(ipython)
    shutdown.install(ipython)
    prewarm.after_cell(ipython)
    kernel_cells.install(ipython)
    import_hook.install(_placed_before_gpu_import, _capped_after_gpu_import)


def _placed_before_gpu_import() -> None:
    from ..cluster import room

    room.before_kernel_gpu_work(cap=False)


def _capped_after_gpu_import() -> None:
    from ..cluster import room

    room.install_kernel_cap()


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Close what the extension started, so that unloading (or reloading) leaves no process,
    and put back what loading changed (completion, the kernel's shutdown, SIGTERM)."""
    global _magics
    from .. import config, lifecycle
    from ..cluster import prewarm
    from ..cluster.room import import_hook
    from ..gpu_time.kernel import kernel_cells
    from ..lifecycle import shutdown
    from . import completion, out_of_memory

    import_hook.uninstall()
    kernel_cells.uninstall()
    prewarm.cancel()
    lifecycle.unload()
    shutdown.uninstall()
    completion.uninstall(ipython)
    out_of_memory.uninstall(ipython)
    if _magics is not None:
        table = ipython.magics_manager.magics
        for kind, names in _magics.magics.items():
            for name in names:
                table[kind].pop(name, None)
        if _magics in ipython.configurables:
            ipython.configurables.remove(_magics)
        _magics = None
    config.clear_overrides()
