"""The worker processes of a cluster this kernel started: started safely, and gone after close.

Two things the library leaves to its caller:

* **No process left behind.** ``cluster.close()`` may fail or time out (a scheduler that died, a
  worker that hangs); the worker processes would then outlive the cluster. :class:`WorkerPids`
  remembers each worker process (pid and start time, from the nannies' public ``pid``) whenever
  the cluster changes, and after the close ends any that still descends from this process and is
  still the same process.
* **Workers of an ``.ipy`` script.** Worker processes are started with multiprocessing's *spawn*,
  which re-runs the parent's ``__main__.__file__`` in the child. Under ``ipython script.ipy`` (or
  ``%run script.ipy``) that file is IPython syntax, so every worker dies of a SyntaxError before
  it starts. :class:`IpyMainGuard` gives ``__main__`` a module spec named ``__main__`` while the
  cluster lives, which tells spawn not to re-run anything (as for ``python -m``), and restores it
  at close. Nannies restart workers at any time (after a crash, on ``restart``), hence the whole
  lifetime rather than the start alone.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import logging
import os
import sys
from typing import Any

from .. import compat, lifecycle
from ..machine.processes import descends_from, process_started, same_process

log = logging.getLogger(__name__)

#: seconds a leftover worker gets to end on SIGTERM before SIGKILL
GRACE = 3.0
#: the same when the kernel is going away: a busy worker would otherwise hold its nanny's close
#: for seconds, waiting for its task, beyond the kernel manager's patience
ENDING_GRACE = 0.5


class WorkerPids:
    """Worker processes of one cluster, by pid, with their start times."""

    def __init__(self) -> None:
        self._known: dict[int, int] = {}

    def note(self, cluster: Any) -> None:
        """Remember the cluster's current worker processes (nannies' ``pid``)."""
        workers = getattr(cluster, "workers", None) or {}
        for worker in list(workers.values()):
            pid = getattr(worker, "pid", None)
            if not isinstance(pid, int) or pid in self._known:
                continue
            started = process_started(pid)
            if started is not None:
                self._known[pid] = started

    def known(self) -> list[int]:
        return list(self._known)

    def leftovers(self) -> list[Any]:
        """The remembered processes still running as this process's children (or its fork
        server's: :mod:`.fork_server`)."""
        import psutil

        alive = []
        for pid, started in self._known.items():
            try:
                proc = psutil.Process(pid)
                same = same_process(pid, started)
                mine = descends_from(pid, os.getpid())
                if same and mine and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
            except psutil.Error:
                continue
        return alive

    def end_leftovers(
        self, grace: float = GRACE, why: str = "the cluster's close left them"
    ) -> list[int]:
        """End what :meth:`leftovers` finds: SIGTERM, then SIGKILL after ``grace``; the pids."""
        import psutil

        procs = self.leftovers()
        if not procs:
            return []
        log.warning("ending %d worker process(es): %s", len(procs), why)
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.terminate()
        _, alive = psutil.wait_procs(procs, timeout=grace)
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(alive, timeout=grace)
        return [p.pid for p in procs]


def no_restarts(cluster: Any) -> int:
    """Tell each nanny of ``cluster`` that its worker is going away for good
    (``Nanny.close_gracefully``, what the library's own shutdown sends), so that ending the
    worker processes first respawns none: a nanny restarts a worker that died, and on a GPU a
    replacement makes a CUDA context while the student leaves. How many nannies were told."""
    told = 0
    workers = getattr(cluster, "workers", None) or {}
    for nanny in list(workers.values()):
        close_gracefully = getattr(nanny, "close_gracefully", None)
        if close_gracefully is None:  # a worker without a nanny: nothing restarts it
            continue
        try:
            close_gracefully()
            told += 1
        except Exception:  # a nanny already closed: it restarts nothing either
            log.debug("nanny %r could not be told", nanny, exc_info=True)
    return told


def end_resource_tracker(timeout: float = 1.0) -> None:
    """When the kernel is going away, let multiprocessing's resource tracker end first.

    Spawning the workers started it: a child in the kernel's process group that ignores SIGTERM.
    ipykernel's shutdown ends the kernel's children before the kernel exits, and waits seconds
    for one that stays, longer than the kernel manager waits before its SIGTERM. Closing the
    kernel's end of the tracker's pipe is how the tracker is told to finish
    (:func:`..compat.python.detach_resource_tracker`), bounded here by ``timeout``. Only while
    ending: otherwise the tracker stays for what comes next."""
    import time

    if not lifecycle.ending():
        return
    pid = compat.detach_resource_tracker()
    if pid is None:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.01)
    log.warning("multiprocessing's resource tracker did not end within %.1f s", timeout)


def _ipy_main() -> Any:
    """``__main__`` if spawn would re-run an IPython file as Python, else None."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not isinstance(path, str) or not path.lower().endswith(".ipy"):
        return None
    if getattr(main, "__spec__", None) is not None:
        return None  # spawn goes by the spec's name, not the file
    return main


class IpyMainGuard:
    """While held, spawned processes do not re-run an ``.ipy`` ``__main__`` (see the module)."""

    def __init__(self) -> None:
        self._main: Any = None
        self._spec: Any = None

    def hold(self) -> None:
        main = _ipy_main()
        if main is None:
            return
        self._spec = importlib.machinery.ModuleSpec("__main__", None)
        main.__spec__ = self._spec
        self._main = main
        log.debug("__main__ is %s: spawned workers will not re-run it", main.__file__)

    def release(self) -> None:
        main, self._main = self._main, None
        if main is not None and getattr(main, "__spec__", None) is self._spec:
            main.__spec__ = None
