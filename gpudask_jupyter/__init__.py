"""gpudask_jupyter: Dask on GPUs from a notebook.

``%load_ext gpudask_jupyter`` registers ``%gpu_cluster``, ``%%to_gpu`` and ``%%to_cpu``. Importing
this package (or loading the extension) imports none of dask, distributed, pandas, NumPy, CuPy,
cuDF or NVML: a notebook that only loads the extension pays nothing for what it does not use.

The public surface is what this module names (:data:`__all__`): the extension's hooks,
``to_gpu`` / ``to_cpu``, ``gpus`` / ``why_no_gpu`` (and ``Gpu``, what ``gpus`` lists), the
``Panel`` widget, ``ClusterSession`` (the cluster a kernel runs, for Python code) and
``RoomReader`` (what the ``room-reader`` option names, with ``GpuMemory``, what it returns);
besides it, the magics, the options (``%gpu_cluster config``), the server's routes and
the commands the documentation gives (``python -m gpudask_jupyter.cluster.gateway_worker``).
Every other module and name is the package's own and may change without notice.
"""

from __future__ import annotations

from typing import Any

from .magics.ipython_extension import load_ipython_extension, unload_ipython_extension

__version__ = "0.1.0"

_LAZY = {
    "to_gpu": ("gpudask_jupyter.api", "to_gpu"),
    "to_cpu": ("gpudask_jupyter.api", "to_cpu"),
    "gpus": ("gpudask_jupyter.api", "gpus"),
    "why_no_gpu": ("gpudask_jupyter.api", "why_no_gpu"),
    "Panel": ("gpudask_jupyter.widget", "Panel"),
    "ClusterSession": ("gpudask_jupyter.cluster.session", "ClusterSession"),
    "Gpu": ("gpudask_jupyter.api", "Gpu"),
    "RoomReader": ("gpudask_jupyter.cluster.room.measure", "Reader"),
    "GpuMemory": ("gpudask_jupyter.cluster.room.holding", "GpuMemory"),
}

__all__ = ["load_ipython_extension", "unload_ipython_extension", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        if name in {"to_gpu", "to_cpu"}:  # the conversions do their GPU work in the room
            _tell_conversions_of_the_room()
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'gpudask_jupyter' has no attribute {name!r}")


def _tell_conversions_of_the_room() -> None:
    """Hand the conversions the room's hooks (:mod:`.convert.room_hooks`): the kernel placed
    and capped before its own GPU work, an out-of-memory under its share explained. Here, at the
    root that may reach every folder, so that neither folder imports the other; the extension
    calls it when loaded, and ``to_gpu``/``to_cpu`` taken from this package do. The room is
    the process's, so the hooks stay told after an unload."""
    # lazy: importing the package stays cheap; the room and the conversions come when needed
    from .cluster import room
    from .convert import room_hooks

    room_hooks.tell(room_hooks.RoomHooks(room.before_kernel_gpu_work, room.out_of_memory))


def __dir__() -> list[str]:
    """The public surface (what a notebook's tab completion offers), not the modules."""
    return sorted([*__all__, "__version__"])


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "gpudask-jupyter"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "gpudask_jupyter.server"}]
