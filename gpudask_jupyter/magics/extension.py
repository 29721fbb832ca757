"""What the extension runs for one kernel, in one object (:class:`Extension`): made by
``%load_ext gpudask_jupyter``, ended by ``%unload_ext`` and by the kernel's end.

It holds the kernel's cluster (:class:`..cluster.session.KernelCluster`: the session, the
operations on it, the imports ahead of a first start), what the kernel's panels share
(:class:`..widget.shared_monitor.KernelView`), the cells whose GPU time ``%gpu_cluster profile``
reports (:class:`..gpu_time.kernel.KernelCells`) and the magics that work on them. Nothing of
these is a module's: the layers below are handed what they need (the magics, the panels and
their buttons get the kernel's cluster), and a test can make two extensions in one process
that do not see each other.

What stays one per process is what a library keeps so: NVML's init (:mod:`..machine.nvml`),
multiprocessing's fork server (:mod:`..cluster.fork_server`), the signal handlers and the
closers they run (:mod:`..lifecycle.shutdown`), the room's lease and caps of the process
(:mod:`..cluster.room.holder`, :mod:`..cluster.room.caps`: one CUDA context per process), and
the options set with ``%config`` (:mod:`..config`).
"""

from __future__ import annotations

from typing import Any

from .. import _tell_conversions_of_the_room, lifecycle
from ..cluster.prewarm import Prewarm
from ..cluster.session import KernelCluster
from ..gpu_time.kernel import KernelCells
from ..widget.shared_monitor import SHELL_SLOT, KernelView
from .gpudask_magics import GpuDaskMagics


class Extension:
    """What the extension runs for the kernel of ``shell``: its cluster, its panels' view, its
    cells' GPU time and its magics. :meth:`install` puts them in the shell; :meth:`uninstall`
    closes what they started and takes them out again."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.cluster = KernelCluster(Prewarm())
        self.view = KernelView(self.cluster)
        self.cells = KernelCells()
        self.magics = GpuDaskMagics(shell=shell, parent=shell, extension=self)

    @staticmethod
    def of(shell: Any) -> Extension | None:
        """The extension loaded into ``shell``, if it is."""
        loaded = getattr(shell, SHELL_SLOT, None)
        return loaded if isinstance(loaded, Extension) else None

    def install(self) -> None:
        """Register the magics, tell the conversions of the room, and start following the
        shell's cells (the imports ahead of a first start, and each cell's GPU time)."""
        _tell_conversions_of_the_room()
        self.shell.register_magics(self.magics)
        self.shell.configurables.append(self.magics)
        setattr(self.shell, SHELL_SLOT, self)
        lifecycle.on_unload(self.view.close, lifecycle.VIEWS)  # the kernel's end closes it too
        self.cluster.imports.after_cell(self.shell)
        self.cells.install(self.shell)

    def quiet(self) -> None:
        """Stop following the shell's cells (before the closers run: no import ahead begins
        while the cluster closes)."""
        self.cells.uninstall()
        self.cluster.imports.cancel()

    def uninstall(self) -> None:
        """Once the closers have run (:func:`..lifecycle.unload`: the panels, then the cluster):
        forget those closers, and take the magics out."""
        self.quiet()
        lifecycle.drop(self.view.close)
        self.cluster.unregister()
        table = self.shell.magics_manager.magics
        for kind, names in self.magics.magics.items():
            for name in names:
                table[kind].pop(name, None)
        if self.magics in self.shell.configurables:
            self.shell.configurables.remove(self.magics)
        if getattr(self.shell, SHELL_SLOT, None) is self:
            setattr(self.shell, SHELL_SLOT, None)
