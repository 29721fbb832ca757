"""Loading the extension into a shell, and unloading it: the magics, their tab completion, the
closing of what they start when the kernel shuts down or gets SIGTERM, the background imports
after a cell, and on a shared machine the kernel placed at its first import of a GPU library.
IPython finds these two functions on the package (``%load_ext gpudask_jupyter``), which takes
them from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Make what the extension runs for this kernel (:class:`.extension.Extension`: its magics,
    its cluster, its panels' view, its cells' GPU time), with tab completion and the closing of
    what it starts when the kernel shuts down or gets SIGTERM (:mod:`..lifecycle.shutdown`);
    once the running cell has finished, import what a start needs in the background
    (:mod:`..cluster.prewarm`); on a shared machine, place and cap the kernel at its first import
    of a GPU library (:mod:`..cluster.room.import_hook`)."""
    # lazy: `import gpudask_jupyter` imports this module, and must not import what loading needs
    from ..cluster.room import import_hook
    from ..lifecycle import shutdown
    from ..remains import leftovers
    from . import completion, out_of_memory
    from .extension import Extension

    leftovers.remove()
    if Extension.of(ipython) is not None:
        unload_ipython_extension(ipython)
    Extension(ipython).install()
    completion.install(ipython)
    out_of_memory.install(ipython)
    shutdown.this_process.install(ipython)
    import_hook.install(_placed_before_gpu_import, _capped_after_gpu_import)


def _placed_before_gpu_import() -> None:
    # lazy: `import gpudask_jupyter` imports this module, and must not import what loading needs
    from ..cluster import room

    room.before_kernel_gpu_work(cap=False)


def _capped_after_gpu_import() -> None:
    # lazy: `import gpudask_jupyter` imports this module, and must not import what loading needs
    from ..cluster import room

    room.install_kernel_cap()


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Close what the extension started, so that unloading (or reloading) leaves no process,
    and put back what loading changed (completion, the kernel's shutdown, SIGTERM)."""
    # lazy: `import gpudask_jupyter` imports this module, and must not import what loading needs
    from .. import config, lifecycle
    from ..cluster.room import import_hook
    from ..lifecycle import shutdown
    from . import completion, out_of_memory
    from .extension import Extension

    import_hook.uninstall()
    loaded = Extension.of(ipython)
    if loaded is not None:
        loaded.quiet()
    lifecycle.unload()
    if loaded is not None:
        loaded.uninstall()
    shutdown.this_process.uninstall()
    completion.uninstall(ipython)
    out_of_memory.uninstall(ipython)
    config.clear_overrides()
