"""Worker interpreters launched ahead of their nannies, so that a first start's imports overlap.

A nanny starts its worker with multiprocessing's *spawn*: a fresh interpreter that imports
distributed (and, for a GPU worker, dask-cuda and cuDF) once the nanny exists, and in a fresh kernel
the nanny exists only after the kernel has imported distributed. One after the other, the two are
most of a first start in Run All (seconds on a GPU machine). So a start launches its workers'
interpreters before anything else (:func:`ahead`), exactly as spawn would launch them (executable,
interpreter flags, environment, module path, working directory, resource tracker), and they import
while the kernel imports. When a nanny then starts its worker process, it takes a waiting
interpreter launched as a spawn would be launched at that moment (:meth:`Ahead.offered`), or spawns
as before. What the interpreter's own imports set in its environment counts as set at launch (the
kernel's same imports set it too); what the cluster class sets in the kernel's environment as it is
made (dask-cuda's, a variable for RAPIDS), and what the start sets before it (where the workers
log), is set for the launch (:func:`ahead`'s ``environ``).
The process object goes to it as spawn sends it; the file descriptors it needs, which did not
exist at its launch, go over a Unix socket, as multiprocessing's forkserver passes them.
Each interpreter moves to a process group of its own at once (a Ctrl-C in the cell must not
reach it, as :mod:`.worker_setup` keeps it from the worker); one that no nanny took is ended
once the cluster is made (or the start fails), and one whose kernel died reads the end of its
socket and exits. Only distributed's own start method, spawn, is done so: with ``fork`` or
``forkserver`` configured, nothing is launched ahead.

The environment a spawn gets includes what the nanny adds first (distributed's
``pre-spawn-environ`` and ``PYTHONHASHSEED``, read by an interpreter only at its launch):
:func:`spawn_environ` foresees it from dask's configuration, and a test checks it against
distributed's nannies. Anything that differs at the nanny's moment sends the worker the old
way: only time depends on this module.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import io
import json
import logging
import os
import signal
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from multiprocessing import context as mp_context
from multiprocessing import popen_spawn_posix, reduction, resource_tracker, spawn, util
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

#: most descriptors a process object may carry (a nanny's worker carries a handful)
MAX_FDS = 64
#: how distributed starts worker processes: interpreters are launched ahead for spawn alone
METHOD = "distributed.worker.multiprocessing-method"
#: the nanny's first-spawn settings in distributed's configuration (:func:`spawn_environ`)
PRE_SPAWN = "distributed.nanny.pre-spawn-environ"
#: the hash seed a nanny gives its workers when the configuration names none (distributed's)
HASH_SEED = "6640"
#: where a nanny names its own process for its workers' process titles
PARENT_PID = "__DASK_PARENT_PID"
#: seconds a nanny waits for an interpreter launched ahead to finish its imports (a spawn would
#: make them all the same) before it spawns one instead
REPORT_WAIT = 60.0
_COUNT = struct.Struct("!I")

_inherited: list[int] = []  # in an interpreter launched ahead: the descriptors passed to it


class Launch(NamedTuple):
    """Everything a spawn's interpreter takes from the kernel at its launch."""

    executable: str
    flags: tuple[str, ...]  # the interpreter's own, as spawn passes them on
    environ: dict[str, str]
    path: tuple[str, ...]  # the module path, as spawn sends it
    cwd: str
    tracker: tuple[int, int]  # the resource tracker's descriptor and its inode


#: how :func:`_differs` names each part of a :class:`Launch`
_PART_NAMES = {
    "executable": "executable",
    "flags": "interpreter flags",
    "environ": "environment",
    "path": "module path",
    "cwd": "directory",
    "tracker": "resource tracker",
}


@dataclasses.dataclass
class _Waiting:
    """One interpreter launched ahead, and what it was launched with."""

    pid: int
    sock: socket.socket  # the kernel's end: the process object goes through it
    sentinel: int  # readable once the interpreter has exited, as spawn's
    launch: Launch
    reaped: bool = False  # its exit was collected: its pid may be another process's now
    ended: bool = False

    def imported(self, timeout: float) -> dict[str, str | None] | None:
        """Wait, at most ``timeout``, for its imports; what they set in its environment (a
        variable gone: None), or None if it did not say."""
        try:
            self.sock.settimeout(timeout)
            size = _COUNT.unpack(self._read(_COUNT.size))[0]
            return dict(json.loads(self._read(size)))
        except (OSError, ValueError, struct.error):
            log.debug("a worker interpreter launched ahead did not report", exc_info=True)
            return None
        finally:
            with contextlib.suppress(OSError):
                self.sock.settimeout(None)

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise OSError("the interpreter closed its end")
            data += chunk
        return data

    def end(self) -> None:
        """End an interpreter no nanny took (it holds nothing: it has only imported); once."""
        if self.ended:
            return
        self.ended = True
        if not self.reaped:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.reaped = True
        self.sock.close()
        os.close(self.sentinel)

    def exited(self) -> bool:
        try:
            self.reaped = os.waitpid(self.pid, os.WNOHANG) != (0, 0)
        except ChildProcessError:
            self.reaped = True
        return self.reaped


class _InheritedFd:
    """A descriptor of the process object, by its place among those passed over the socket
    (spawn's own names the descriptor a spawned child inherits by number)."""

    def __init__(self, index: int) -> None:
        self.index = index

    def detach(self) -> int:
        return _inherited[self.index]


class _AdoptedPopen(popen_spawn_posix.Popen):
    """A spawn whose interpreter was launched ahead: the process object is pickled as spawn
    pickles it, then sent with its descriptors; the rest (wait, kill, sentinel) is spawn's."""

    DupFd = _InheritedFd  # type: ignore[assignment]

    def __init__(self, process_obj: Any, waiting: _Waiting) -> None:
        self._waiting = waiting
        self._passed: list[int] = []
        super().__init__(process_obj)

    def duplicate_for_child(self, fd: int) -> int:
        self._passed.append(fd)
        return len(self._passed) - 1

    def _launch(self, process_obj: Any) -> None:
        waiting = self._waiting
        data = io.BytesIO()
        mp_context.set_spawning_popen(self)
        try:
            reduction.dump(spawn.get_preparation_data(process_obj._name), data)
            reduction.dump(process_obj, data)
        finally:
            mp_context.set_spawning_popen(None)
        if len(self._passed) > MAX_FDS:
            raise OSError(f"{len(self._passed)} descriptors to pass: more than {MAX_FDS}")
        sock = waiting.sock
        fds = array.array("i", self._passed)
        sock.sendmsg(
            [_COUNT.pack(len(fds))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)] if fds else []
        )
        sock.sendall(data.getbuffer())
        self.pid = waiting.pid
        self.sentinel = waiting.sentinel
        # the kernel's end stays open while the process lives, as spawn keeps its pipe's: the
        # worker reads its closing as its parent's end
        self.finalizer = util.Finalize(self, _close, ((waiting.sentinel, sock.detach()),))


def _close(fds: tuple[int, ...]) -> None:
    for fd in fds:
        os.close(fd)


class _Process(mp_context.SpawnProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        offered = _offered
        waiting = offered.take() if offered is not None else None
        if waiting is not None:
            try:
                return _AdoptedPopen(process_obj, waiting)
            except OSError:  # it died meanwhile, or the object holds too much: spawn as before
                log.debug("a worker interpreter launched ahead was not usable", exc_info=True)
                waiting.end()
            except BaseException:  # spawn would fail alike (the object does not pickle)
                waiting.end()
                raise
        return popen_spawn_posix.Popen(process_obj)


class _Context(mp_context.SpawnContext):
    Process = _Process  # type: ignore[assignment]


_offered: Ahead | None = None


class Ahead:
    """The interpreters one start launched; :meth:`offered` lets its nannies take them."""

    def __init__(self, waiting: list[_Waiting], modules: Sequence[str] = ()) -> None:
        self._waiting = waiting
        self._modules = modules
        self._lock = threading.Lock()  # nannies start their processes on threads of their own
        self.taken = 0

    def _next(self) -> _Waiting | None:
        with self._lock:
            return self._waiting.pop(0) if self._waiting else None

    def take(self) -> _Waiting | None:
        """The next waiting interpreter launched as a spawn would be launched now, or None."""
        try:
            now = _launch_key()
        except OSError:
            log.debug("no launch to compare with: the workers are spawned", exc_info=True)
            self.close()
            return None
        deadline = time.monotonic() + REPORT_WAIT
        while (waiting := self._next()) is not None:
            made = waiting.imported(max(0.1, deadline - time.monotonic()))
            if made is None or waiting.exited():
                log.debug("a worker interpreter launched ahead is gone or silent: one is spawned")
            elif differs := _differs(_after(waiting.launch, made), now, self._modules):
                log.debug("a worker is spawned: its %s differs from the launch made ahead", differs)
            else:
                with self._lock:
                    self.taken += 1
                return waiting
            waiting.end()
        return None

    @contextlib.contextmanager
    def offered(self) -> Iterator[None]:
        """While a cluster is made: nannies starting worker processes take the interpreters.
        distributed makes a worker process through ``distributed.process``'s mp context; that
        one name is replaced for the while (only spawns are ever affected, and only by time)."""
        global _offered
        if not self._waiting:
            yield
            return
        import distributed.process as where

        before = getattr(where, "get_mp_context", None)
        if before is None or before().get_start_method() != "spawn":
            log.debug("distributed makes its worker processes otherwise: they are made so")
            try:
                yield
            finally:
                self.close()
            return
        context = _Context()
        _offered = self
        where.get_mp_context = lambda: context  # type: ignore[attr-defined]
        try:
            yield
        finally:
            where.get_mp_context = before  # type: ignore[attr-defined]
            _offered = None
            self.close()  # the cluster is made: a worker started later is spawned

    def close(self) -> None:
        while (waiting := self._next()) is not None:
            waiting.end()


@contextlib.contextmanager
def ahead(
    count: int, modules: Sequence[str], environ: Mapping[str, str] | None = None
) -> Iterator[Ahead]:
    """Launch ``count`` worker interpreters that import ``modules``; end those still waiting on
    the way out (the start is over: its workers are spawned or it failed). ``environ``: what
    the start and its cluster class set in the kernel's environment before the nannies spawn
    (dask-cuda's class sets a variable as it is made), which the interpreters must be launched
    with too."""
    launched = Ahead([])
    try:
        if count > 0 and os.name == "posix" and _distributed_setting(METHOD) == "spawn":
            launched = Ahead(_launch(count, modules, environ or {}), modules)
    except Exception:  # only time is lost: the workers are spawned as before
        log.warning("could not launch worker interpreters ahead", exc_info=True)
    try:
        yield launched
    finally:
        launched.close()


def spawn_environ() -> dict[str, str]:
    """What a nanny adds to the kernel's environment before it spawns a worker, foreseen
    before distributed is imported: distributed's ``pre-spawn-environ`` (its defaults, under
    the user's dask configuration; a variable already set wins), its hash seed, and the
    parent's pid that sets the workers' process titles."""
    wanted = _distributed_setting(PRE_SPAWN) or {}
    env = {k: os.environ.get(k, str(v)) for k, v in wanted.items() if v is not None}
    if env.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = HASH_SEED
    env[PARENT_PID] = str(os.getpid())  # a nanny names the kernel, its workers' titles' parent
    return env


def _distributed_setting(key: str) -> Any:
    """A setting of distributed's before distributed is imported: its defaults file under the
    user's dask configuration, as importing distributed would merge them."""
    import dask.config

    defaults = _distributed_defaults()
    if defaults is None:
        return None
    return dask.config.get(
        key, default=None, config=dask.config.merge(defaults, dask.config.config)
    )


@functools.cache
def _distributed_defaults() -> dict[str, Any] | None:
    """distributed's defaults file, read once (a start asks it two settings; later starts too)."""
    import yaml

    spec = importlib.util.find_spec("distributed")
    if spec is None or spec.origin is None:
        return None
    return dict(yaml.safe_load(Path(spec.origin).with_name("distributed.yaml").read_text()))


def _launch_key(environ: Mapping[str, str] | None = None) -> Launch:
    """What a spawn's interpreter would take from the kernel if launched now (with
    ``environ``, by default the kernel's)."""
    tracker = resource_tracker.getfd()
    if tracker is None:
        raise OSError("multiprocessing's resource tracker did not start")
    return Launch(
        executable=spawn.get_executable(),
        flags=tuple(util._args_from_interpreter_flags()),  # type: ignore[attr-defined]
        environ=dict(os.environ if environ is None else environ),
        path=tuple(spawn.get_preparation_data("")["sys_path"]),  # "" as spawn resolves it
        cwd=os.getcwd(),
        tracker=(tracker, os.fstat(tracker).st_ino),  # a tracker started again may reuse it
    )


def _after(launch: Launch, made: dict[str, str | None]) -> Launch:
    """``launch`` with the environment its own imports left (the kernel's same imports set it
    too, before the nanny spawns)."""
    env = {**launch.environ, **made}
    return launch._replace(environ={k: v for k, v in env.items() if v is not None})


def _differs(then: Launch, now: Launch, modules: Sequence[str]) -> str:
    """What of a launch made ahead (``then``) a spawn would make differently ``now``: "" if
    nothing. The module path may have grown at its front (a scheduler or worker puts its
    scratch directory there) so long as nothing it adds holds a module imported ahead."""
    if then.path != now.path:
        kept = now.path[len(now.path) - len(then.path) :]
        if kept != then.path or _shadows(now.path[: len(now.path) - len(then.path)], modules):
            return _PART_NAMES["path"]
    if then.environ != now.environ:
        names = then.environ.keys() | now.environ.keys()
        keys = sorted(k for k in names if then.environ.get(k) != now.environ.get(k))
        return f"{_PART_NAMES['environ']} ({', '.join(keys)})"
    for part in Launch._fields:
        if getattr(then, part) != getattr(now, part) and part not in ("path", "environ"):
            return _PART_NAMES[part]
    return ""


def _shadows(entries: Sequence[str], modules: Sequence[str]) -> bool:
    tops = {name.partition(".")[0] for name in modules}
    return any(
        (Path(entry) / top).exists() or (Path(entry) / f"{top}.py").exists()
        for entry in entries
        for top in tops
    )


def _launch(count: int, modules: Sequence[str], environ: Mapping[str, str]) -> list[_Waiting]:
    """Launch ``count`` interpreters with the kernel's environment and what the cluster and the
    nanny will add to it (given to each launch: the kernel's own stays as it is)."""
    launched: list[_Waiting] = []
    try:
        key = _launch_key({**os.environ, **environ, **spawn_environ()})
        if not all(isinstance(entry, str) for entry in key.path):
            log.debug("the module path holds more than names: the workers are spawned")
            return []
        for _ in range(count):
            launched.append(_launch_one(key, modules))
        return launched
    except BaseException:
        for waiting in launched:
            waiting.end()
        raise


def _launch_one(key: Launch, modules: Sequence[str]) -> _Waiting:
    """One interpreter, launched by ``posix_spawn`` with the launch's environment, in a process
    group of its own from its first instruction (a Ctrl-C in the cell must not reach it), with
    the three descriptors it needs (the kernel's own are not inheritable: PEP 446)."""
    exe, path, tracker_fd = key.executable, key.path, key.tracker[0]
    ours, theirs = socket.socketpair()
    theirs.setblocking(True)  # whatever default timeout the kernel set: spawn's pipes block
    sentinel, child_w = os.pipe()
    tracker_inherited = os.get_inheritable(tracker_fd)
    try:
        code = (
            f"import sys; sys.path[:] = {list(path)!r}; "
            f"from {__name__} import child_main; "
            f"child_main({theirs.fileno()}, {tracker_fd}, {list(modules)!r})"
        )
        argv = [exe, *key.flags, "-c", code, "--multiprocessing-fork"]
        for fd in (tracker_fd, theirs.fileno(), child_w):
            os.set_inheritable(fd, True)  # every other descriptor is not (PEP 446)
        pid = os.posix_spawn(exe, argv, key.environ, setpgroup=0)
    except BaseException:
        ours.close()
        os.close(sentinel)
        raise
    finally:
        with contextlib.suppress(OSError):
            os.set_inheritable(tracker_fd, tracker_inherited)
        theirs.close()
        os.close(child_w)
    return _Waiting(pid, ours, sentinel, key)


def child_main(sock_fd: int, tracker_fd: int, modules: list[str]) -> None:
    """In an interpreter launched ahead: leave the kernel's process group, import, wait for a
    process object (or the end of the socket: then exit), then run it as spawn's child does."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    os.set_blocking(sock_fd, True)
    # as spawn's child has it before any import: a lock made at import uses the kernel's tracker
    resource_tracker._resource_tracker._fd = tracker_fd  # type: ignore[attr-defined]
    launched = dict(os.environ)
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # the process object's own imports report it where it is seen
            log.debug("importing %s ahead failed", name, exc_info=True)
    sock = socket.socket(fileno=sock_fd)
    made = {k: os.environ.get(k) for k in launched.keys() | os.environ.keys()}
    report = json.dumps({k: v for k, v in made.items() if launched.get(k) != v}).encode()
    with contextlib.suppress(OSError):  # the kernel is gone: the read below says so
        sock.sendall(_COUNT.pack(len(report)) + report)
    try:
        head, ancillary, _, _ = sock.recvmsg(_COUNT.size, socket.CMSG_SPACE(MAX_FDS * 4))
    except OSError:  # the kernel is gone (its end closed with the report unread)
        os._exit(0)
    if len(head) < _COUNT.size:
        os._exit(0)  # the start needed no more workers, or the kernel is gone
    (count,) = _COUNT.unpack(head)
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
            _inherited.extend(fds)
    if len(_inherited) != count:
        os._exit(1)
    spawn.spawn_main(sock.detach(), tracker_fd=tracker_fd)
