"""Dask's own log lines, kept out of the cells that did not cause them.

A cluster the kernel starts has its scheduler and nannies in the kernel and its workers in child
processes. distributed logs to stderr, which ipykernel shows in some cell: the one running, or
the one that started the thread that logs (the cluster's). So a shuffle's "initialized" warnings
appeared under the cell that started the cluster, a scale's "lost computed tasks" under another.

While a cluster of this kernel runs, distributed's and dask-cuda's records go to a log file of
the kernel in the runtime directory (owner-only) instead of stderr, and so does the stderr of
the worker processes (:mod:`.worker_setup` points it there). The last warnings are also kept in
memory: a command says in words what its own warnings meant (:func:`since`: a ``scale`` that
lost computed results), and ``%gpu_cluster status --verbose`` prints where the file is and the
last of them. Everything is put back when the extension is unloaded or the kernel ends, and the
file goes with it, unless Dask logged an error in it (a worker that died, a task that failed
to run): then it stays, and the kernel's end says where.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from .. import lifecycle
from ..registry import runtime_dir

log = logging.getLogger(__name__)

LOGGERS = ("distributed", "dask_cuda")
#: where the preload of a worker process finds the file its stderr goes to
WORKER_LOG = "GPUDASK_WORKER_LOG"
KEEP = 200  # warnings kept in memory


@dataclass(frozen=True)
class Said:
    """One record Dask logged, as kept in memory."""

    when: float
    level: int
    logger: str
    message: str


class _Recent(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: collections.deque[Said] = collections.deque(maxlen=KEEP)
        self.errors = 0  # records at ERROR or above: the file is kept for them

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR:
            self.errors += 1
        try:
            said = Said(record.created, record.levelno, record.name, record.getMessage())
        except Exception:  # a record whose message cannot be made: nothing to keep
            return
        self.records.append(said)


# per process: logging's handlers are the process's, and the workers' log file one per process
_lock = threading.Lock()
_recent = _Recent()
_file: logging.Handler | None = None
_removed: list[tuple[logging.Logger, logging.Handler]] = []
_path: Path | None = None


def _to_stderr(handler: logging.Handler) -> bool:
    """A handler that writes to a stream (distributed's own writes to stderr), not a file."""
    return type(handler) is logging.StreamHandler


def path() -> Path | None:
    """The log file of this kernel's Dask, once a cluster routed it there."""
    return _path


def _target(kernel: str) -> Path:
    return runtime_dir() / "gpudask-logs" / f"{kernel}.log"


def worker_environ(kernel: str) -> dict[str, str]:
    """What :func:`route` sets in the kernel's environment for the worker processes started
    after it (known before it runs: the workers' fork server is launched with it too)."""
    return {WORKER_LOG: str(_target(kernel))}


def route(kernel: str) -> Path:
    """Send Dask's records (in this process, and in the worker processes started from now on)
    to the kernel's log file instead of the cells. Idempotent."""
    global _file, _path
    import distributed  # noqa: F401  its import installs the handler this replaces

    with _lock:
        if _file is not None and _path is not None:
            return _path
        target = _target(kernel)
        folder = target.parent
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.close(descriptor)
        handler = logging.FileHandler(target, encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        for name in LOGGERS:
            logger = logging.getLogger(name)
            for existing in list(logger.handlers):
                if _to_stderr(existing):
                    logger.removeHandler(existing)
                    _removed.append((logger, existing))
            logger.addHandler(handler)
            logger.addHandler(_recent)
        os.environ.update(worker_environ(kernel))
        _file, _path = handler, target
        _recent.errors = 0  # this file's own
    lifecycle.on_unload(restore, lifecycle.MEMORY)
    return target


def restore() -> None:
    """Put distributed's own handlers back (``%unload_ext``, the kernel's end), and remove the
    log file unless Dask logged an error in it (then say where it stays)."""
    global _file
    with _lock:
        if _file is None:
            return
        for name in LOGGERS:
            logger = logging.getLogger(name)
            logger.removeHandler(_file)
            logger.removeHandler(_recent)
        for logger, handler in _removed:
            logger.addHandler(handler)
        _removed.clear()
        _file.close()
        _file = None
        os.environ.pop(WORKER_LOG, None)
        if _path is not None:
            _remove_unless_failed(_path, _recent.errors)


def _remove_unless_failed(target: Path, errors: int) -> None:
    if errors:
        log.warning("Dask logged %d error(s) in this kernel; its log stays at %s", errors, target)
        return
    try:
        target.unlink(missing_ok=True)
        target.parent.rmdir()  # the last kernel's log gone: the folder too
    except OSError:  # another kernel's log is still there, or the folder went meanwhile
        log.debug("%s: the log folder stays", target.parent, exc_info=True)


def since(started: float) -> list[Said]:
    """The warnings Dask logged in this process since ``started`` (``time.time()``)."""
    return [said for said in list(_recent.records) if said.when >= started]


def recent(count: int = 5) -> list[Said]:
    """The last ``count`` warnings Dask logged in this process."""
    return list(_recent.records)[-count:]


def lost_results(said: list[Said]) -> int:
    """How many computed results the scheduler said it lost with removed workers ("Removing
    worker ... caused the cluster to lose already computed task(s) ...: {keys}")."""
    count = 0
    for record in said:
        text = record.message
        if "caused the cluster to lose already computed task" not in text:
            continue
        keys = text[text.find("{") + 1 : text.rfind("}")]
        depth, items = 0, 1 if keys.strip() else 0
        for char in keys:
            if char in "([":
                depth += 1
            elif char in ")]":
                depth -= 1
            elif char == "," and depth == 0:
                items += 1
        count += items
    return count
