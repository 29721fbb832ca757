"""Worker processes forked from a server that made their imports while the kernel made its own.

A nanny starts its worker with multiprocessing's *spawn*, distributed's default: a fresh
interpreter that imports distributed (and, for a GPU worker, dask-cuda and cuDF) once the nanny
exists, and in a fresh kernel the nanny exists only after the kernel has imported distributed.
One after the other, the two are most of a first start in Run All (seconds on a GPU machine).
So a start first launches multiprocessing's *forkserver* with those imports (:func:`ahead`), and
its nannies fork their workers from it: distributed's ``multiprocessing-method`` setting, set to
``forkserver`` while the cluster is made (:meth:`Ahead.offered`). A worker started later (a
restart, a nanny replacing one that died) is spawned, as before.

The server is launched with the kernel's environment. What a spawned worker would be launched
with besides (what the start and the cluster class set, the nanny's ``pre-spawn-environ`` and
hash seed: an interpreter reads some of them only as it starts) and the kernel's module path go
to it in a private file (:func:`write_request`); its first import (:mod:`.fork_preload`) starts
the server again with that environment, in its own process, before anything else is imported,
and leaves the kernel's process group (a Ctrl-C in the cell must not reach what it forks). The
kernel's own environment is never changed.

Where the kernel's environment or module path is not, as the cluster is made, what the server
was launched with, the workers are spawned instead: only time depends on this module. That is
decided from what the kernel asked, without waiting for the server (its imports overlap the
scheduler's start); a probe forked from it then reports what a worker forked from it starts
with, and a server that did not start as asked (or one this package did not launch) is not
used again. The server lives as long as the kernel (multiprocessing's way: it ends once the
last process that uses it has), holding the imports in host memory that the workers forked from
it share, so a later start forks its workers at once. Workers are its children, grandchildren
of the kernel: what follows a kernel's workers goes by descent
(:func:`..machine.processes.descends_from`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .. import compat
from ..compat import distributed, python
from ..lifecycle import undertaker
from ..machine import small_files
from ..machine.processes import process_started, same_process
from ..registry.entries import runtime_dir, write_private

log = logging.getLogger(__name__)

#: how distributed starts worker processes (its configuration key)
METHOD = "distributed.worker.multiprocessing-method"
#: the module a server imports first (:mod:`.fork_preload`)
PRELOAD = "gpudask_jupyter.cluster.fork_preload"
#: seconds a start waits for the server's imports (a spawn would make them all the same) before
#: its workers are spawned instead
REPORT_WAIT = 60.0
#: the request a kernel leaves its server, in the runtime directory, by the kernel's pid
REQUEST_PREFIX = "gpudask-fork-"
#: a request is a few kilobytes; a larger file is not one
MAX_REQUEST_BYTES = 256 * 1024


class Launch(NamedTuple):
    """What a worker forked from a server starts with, besides what its process object brings:
    the server's environment, and the module path its imports were made on (a tuple: the
    server's own import stays light, on the path of a start)."""

    environ: dict[str, str]
    path: tuple[str, ...]


class Report(NamedTuple):
    """What a probe forked from the server found: the server, and what it was launched with."""

    server: int  # its pid
    launched: Launch | None  # None: it is not one this package launched (it read no request)


def request_path(pid: int, directory: Path | None = None) -> Path:
    """Where kernel ``pid`` leaves what its fork server is to be launched with (in the Jupyter
    runtime directory, by default; found without importing the registry: the server reads it
    on the path of a start)."""
    if directory is None:
        from jupyter_core.paths import jupyter_runtime_dir

        directory = Path(jupyter_runtime_dir())
    return directory / f"{REQUEST_PREFIX}{pid}.json"


def write_request(added: Mapping[str, str], path: Sequence[str], modules: Sequence[str]) -> Path:
    """Leave this kernel's server what it is to add to the environment it inherits, the module
    path its imports are made on, and what to import (owner-only: the server trusts no other)."""
    folder = runtime_dir()
    undertaker.tell("runtime", folder)  # a kernel killed during the start leaves it
    where = request_path(os.getpid(), folder)
    text = json.dumps({"environ": dict(added), "path": list(path), "modules": list(modules)})
    write_private(where, text)
    return where


def read_request(pid: int) -> tuple[Launch, list[str]] | None:
    """The request kernel ``pid`` left (:func:`write_request`), as the launch it asks of a
    server with this process's environment: None where there is none, or where it is not a
    private file of this user or not a request."""
    try:
        data, info = small_files.read_regular(request_path(pid), MAX_REQUEST_BYTES, follow=False)
        raw = json.loads(data)
        environ, path, modules = raw["environ"], raw["path"], raw["modules"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    if not small_files.is_private(info):
        return None
    if not (isinstance(environ, dict) and isinstance(path, list) and isinstance(modules, list)):
        return None
    if not all(isinstance(x, str) for x in [*environ, *environ.values(), *path, *modules]):
        return None
    if any(not k or "=" in k or "\0" in k + v for k, v in environ.items()):
        return None
    return Launch({**os.environ, **environ}, tuple(path)), modules


def prune_requests(folder: Path | None = None) -> None:
    """Remove the requests of kernels that are gone (one killed during a start leaves its own;
    a live kernel's lasts as long as its start), in the runtime directory by default."""
    folder = request_path(0).parent if folder is None else folder
    for request in folder.glob(f"{REQUEST_PREFIX}*.json"):
        pid = request.name[len(REQUEST_PREFIX) : -len(".json")]
        with contextlib.suppress(OSError, ValueError):
            if request.lstat().st_uid == os.getuid() and process_started(int(pid)) is None:
                request.unlink()


def probe(writer: Any) -> None:
    """In a process forked from the server: report it (:class:`Report`)."""
    preload = sys.modules.get(PRELOAD)
    writer.send(Report(server=os.getppid(), launched=getattr(preload, "LAUNCHED", None)))
    writer.close()


class ForkServers:
    """The fork server this process launched and found as it asked: one per process
    (:data:`this_process`), as multiprocessing keeps one fork server per process; a test can
    make others."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: tuple[int, int, Launch] | None = None  # its pid, start and launch

    def running(self) -> tuple[Launch | None, bool]:
        """The launch of the server that runs for this process, if it is the one this package
        launched and found as asked; and whether any runs (psutil reads the children)."""
        import psutil

        servers = []
        for child in psutil.Process().children():
            with contextlib.suppress(psutil.Error):
                if compat.FORK_SERVER_COMMAND in " ".join(child.cmdline()):
                    servers.append(child.pid)
        with self._lock:
            known = self._known
        if known is not None and servers == [known[0]] and same_process(known[0], known[1]):
            return known[2], True
        return None, bool(servers)

    def found(self, report: Report | None, asked: Launch) -> None:
        """What the probe of a server launched for ``asked`` reported (None: nothing)."""
        if report is None or report.launched != asked:
            # None: the start ended before the server read its request (or it could not)
            seen = report is not None and report.launched is not None
            log.log(
                logging.WARNING if seen else logging.DEBUG,
                "the fork server for the workers did not start as asked: workers will be spawned",
            )
            return
        started = process_started(report.server)
        if started is not None:
            with self._lock:
                self._known = (report.server, started, asked)


# per process: multiprocessing keeps one fork server per process, whatever runs in it
this_process = ForkServers()


class _Asked:
    """The server's report, asked for on a thread: the probe starts once the server's imports
    are done."""

    def __init__(self, asked: Launch, servers: ForkServers) -> None:
        self._thread = threading.Thread(
            target=self._ask, args=(asked, servers), name="gpudask-fork-server", daemon=True
        )
        self._thread.start()

    @staticmethod
    def _ask(asked: Launch, servers: ForkServers) -> None:
        report = None
        try:
            import multiprocessing

            context = multiprocessing.get_context("forkserver")
            reader, writer = context.Pipe(duplex=False)
            with reader:
                process = context.Process(
                    target=probe, args=(writer,), name="gpudask-fork-probe", daemon=True
                )
                process.start()
                writer.close()
                if reader.poll(REPORT_WAIT):
                    report = reader.recv()
                process.join(REPORT_WAIT)
        except Exception:  # only time is lost: the workers are spawned (a Ctrl-C during the
            # start may have ended the server or the probe: the next start launches another)
            log.debug("the fork server for the workers did not answer", exc_info=True)
        servers.found(report, asked)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class Ahead:
    """One start's use of the fork server: its nannies fork their workers from it while the
    cluster is made (:meth:`offered`) where it offers what a spawn would; see the module."""

    def __init__(
        self,
        launch: Launch | None = None,
        environ: Mapping[str, str] | None = None,
        asked: _Asked | None = None,
    ) -> None:
        self._launch = launch
        self._environ = dict(environ or {})
        self._asked = asked
        self.forked = False  # the cluster's workers were forked from the server

    @contextlib.contextmanager
    def offered(self) -> Iterator[None]:
        """While a cluster is made: distributed forks its worker processes from the server,
        where a worker forked from it starts as a spawned one would (a start method configured
        otherwise meanwhile wins: nothing is changed then)."""
        if self._launch is None or _configured() != "spawn":
            yield
            return
        if differs := self.differs(self._launch):
            log.debug("the workers are spawned: the fork server's %s differs", differs)
            yield
            return
        if not _distributed_lets_fork():  # said once, by the probe
            yield
            return
        import dask.config

        compat.keep_forkserver_preload()
        with dask.config.set({METHOD: "forkserver"}):
            self.forked = True
            yield

    def differs(self, launch: Launch) -> str:
        """What of ``launch`` a spawned worker would not start with if spawned now: "" if
        nothing."""
        now = {**os.environ, **self._environ, **compat.nanny_environ(os.getpid())}
        if changed := sorted(
            k for k in now.keys() | launch.environ.keys() if now.get(k) != launch.environ.get(k)
        ):
            return f"environment ({', '.join(changed)})"
        if module_path() != launch.path:
            return "module path"
        return ""

    def settle(self, timeout: float) -> None:
        """Wait, at most ``timeout``, for the server's report (tests, benchmarks)."""
        if self._asked is not None:
            self._asked.join(timeout)


def module_path() -> tuple[str, ...]:
    """The module path a spawned worker is given (spawn's own: "" stands for the directory the
    process started in, which spawn sends instead)."""
    start = compat.original_dir() or os.getcwd()
    return tuple(start if entry == "" else entry for entry in sys.path)


def _can_fork() -> bool:
    """Whether Python offers what launching the server ahead relies on (probed once a process;
    a lack is said once, and the workers are spawned). Only the standard library is looked at:
    distributed is not imported yet, and importing it here would delay the launch."""
    return compat.usable("python", *python.FORK_SERVER)


def _distributed_lets_fork() -> bool:
    """Whether distributed offers what forking its workers from the server relies on: its
    preload flag, its defaults file and the variables its nanny sets (probed once a process, as
    the cluster is made, when distributed is imported anyway)."""
    return compat.usable(
        "distributed", distributed.PRELOAD, distributed.DEFAULTS, distributed.NANNY_SEED
    )


def _configured() -> Any:
    """distributed's start method, read without importing distributed where it is not yet."""
    if "distributed" in sys.modules:
        import dask.config

        return dask.config.get(METHOD, default=None)

    return compat.setting_before_import(METHOD)


@contextlib.contextmanager
def ahead(
    modules: Sequence[str],
    environ: Mapping[str, str] | None = None,
    servers: ForkServers = this_process,
) -> Iterator[Ahead]:
    """The fork server that imports ``modules`` for a start's workers: the one this kernel
    launched before, where it runs, or one launched now. ``environ``: what the start and its
    cluster class will set in the kernel's environment before the nannies start their workers,
    which the server is launched with too. None where another runs (this package did not launch
    it: what it would give a worker is not known)."""
    launched = Ahead()
    request: Path | None = None
    try:
        if os.name == "posix" and _configured() == "spawn" and _can_fork():
            known, running = servers.running()
            if known is not None:
                launched = Ahead(known, environ)
            elif not running:
                added = {**(environ or {}), **compat.nanny_environ(os.getpid())}
                launch = Launch({**os.environ, **added}, module_path())
                request = write_request(added, launch.path, modules)
                import multiprocessing

                multiprocessing.get_context("forkserver").set_forkserver_preload([PRELOAD])
                compat.launch_fork_server()  # with the environment of this moment
                launched = Ahead(launch, environ, _Asked(launch, servers))
            else:
                log.debug("a fork server this package did not launch runs: workers are spawned")
    except Exception:  # only time is lost: the workers are spawned as before
        log.warning("could not launch the fork server for the workers", exc_info=True)
    try:
        yield launched
    finally:
        if request is not None:  # the server has read it (or will start without it)
            with contextlib.suppress(OSError):
                request.unlink()
