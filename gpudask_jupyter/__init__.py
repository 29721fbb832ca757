"""gpudask_jupyter: Dask on GPUs from a notebook.

``%load_ext gpudask_jupyter`` registers ``%gpu_cluster``, ``%%to_gpu`` and ``%%to_cpu``. Importing
this package (or loading the extension) imports none of dask, distributed, pandas, NumPy, CuPy,
cuDF or NVML: a notebook that only loads the extension pays nothing for what it does not use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

_magics: Any = None

_LAZY = {
    "to_gpu": ("gpudask_jupyter.convert", "to_gpu"),
    "to_cpu": ("gpudask_jupyter.convert", "to_cpu"),
    "Panel": ("gpudask_jupyter.widget", "Panel"),
    "ClusterSession": ("gpudask_jupyter.cluster.session", "ClusterSession"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'gpudask_jupyter' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register the magics, their tab completion, and the closing of what they start when the
    kernel shuts down or gets SIGTERM (:mod:`.lifecycle.shutdown`); once the running cell has
    finished, import what a start needs in the background (:mod:`.cluster.prewarm`); on a
    shared machine, place and cap the kernel at its first import of a GPU library
    (:mod:`.cluster.room.import_hook`)."""
    global _magics
    from .cluster import prewarm
    from .cluster.room import import_hook
    from .lifecycle import leftovers, shutdown
    from .magics import completion, out_of_memory
    from .magics.gpudask_magics import GpuDaskMagics

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
    import_hook.install(_placed_before_gpu_import, _capped_after_gpu_import)


def _placed_before_gpu_import() -> None:
    from .cluster import room

    room.before_kernel_gpu_work(cap=False)


def _capped_after_gpu_import() -> None:
    from .cluster import room

    room.install_kernel_cap()


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Close what the extension started, so that unloading (or reloading) leaves no process,
    and put back what loading changed (completion, the kernel's shutdown, SIGTERM)."""
    global _magics
    from . import config, lifecycle
    from .cluster import prewarm
    from .cluster.room import import_hook
    from .lifecycle import shutdown
    from .magics import completion, out_of_memory

    import_hook.uninstall()
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


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "gpudask-jupyter"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "gpudask_jupyter.server"}]
