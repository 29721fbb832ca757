"""On a shared machine, the kernel's own GPU libraries are placed and capped as they are imported.

A notebook that computes with cuDF or CuPy in its own cells (workshop notebooks 02 and 03 do)
takes GPU memory before any magic runs: without this, the room would not know that kernel until
its first ``%%to_gpu`` or start, and nothing would hold it to a share. As cudf.pandas hooks the
import of pandas, a finder placed first on ``sys.meta_path`` by ``%load_ext`` sees the first
import of ``cupy``, ``cudf`` or ``rmm``: before the module runs (no CUDA context yet), the kernel
takes its place in the room and is pinned to its GPU (:func:`.before_kernel_gpu_work`); once it
has run, the kernel's cap is installed. Where the room is full, the import fails with the room's
sentence instead of taking memory nobody gave it. Off a shared machine, or once the kernel holds
its cap, the finder does nothing and leaves.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from ...errors import ClusterError

log = logging.getLogger(__name__)

#: the libraries whose first import places the kernel
WATCHED = frozenset({"cupy", "cudf", "rmm"})


class _Loader(importlib.abc.Loader):
    """The library's own loader, between the kernel's placement and its cap."""

    def __init__(self, loader: Any, before: Callable[[], None], after: Callable[[], None]) -> None:
        self._loader = loader
        self._before = before
        self._after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        made: ModuleType | None = self._loader.create_module(spec)
        return made

    def exec_module(self, module: ModuleType) -> None:
        self._before()
        self._loader.exec_module(module)
        self._after()

    def __getattr__(self, name: str) -> Any:  # resource readers and the like: the library's
        return getattr(self._loader, name)


class GpuImportFinder(importlib.abc.MetaPathFinder):
    """Sees the first import of a watched GPU library (see the module's docstring)."""

    def __init__(self, before: Callable[[], None], after: Callable[[], None]) -> None:
        self._before, self._after = before, after
        self._busy = threading.local()
        self.placed = False

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """The library's own spec, its loader wrapped: a mere look (``importlib.util.find_spec``
        asks whether a library is installed) places nothing; its import does."""
        if name not in WATCHED or getattr(self._busy, "now", False):
            return None
        self._busy.now = True
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
        finally:
            self._busy.now = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, self._place, self._cap)
        return spec

    def _place(self) -> None:
        if self.placed:
            return
        try:
            self._before()
        except ClusterError as err:
            raise ImportError(f"{err} (the GPU is shared: this kernel has no place on it)") from err
        self.placed = True

    def _cap(self) -> None:
        if getattr(self._busy, "now", False):
            return
        self._busy.now = True
        try:
            self._after()
        except Exception:  # the library is imported; the start or %%to_gpu caps it later
            log.warning("the kernel's GPU cap cannot be installed now", exc_info=True)
        finally:
            self._busy.now = False


def install(before: Callable[[], None], after: Callable[[], None]) -> GpuImportFinder | None:
    """Put a finder first on ``sys.meta_path`` (one per process); None where every watched
    library is already imported (there is nothing left to see)."""
    if all(name in sys.modules for name in WATCHED):
        return None
    for finder in sys.meta_path:
        if isinstance(finder, GpuImportFinder):
            return finder
    finder = GpuImportFinder(before, after)
    sys.meta_path.insert(0, finder)
    return finder


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, GpuImportFinder)]
