"""Collections spread by ``--distribute``, watched: a partition lost with its worker fails at once.

A spread partition is built by a task pinned to the worker that holds its bytes (its GPU memory,
its shared-memory segment). When that worker leaves (killed, out of memory, scaled away), Dask
would recompute the partition on the same worker, which no longer exists: every computation on
the collection would wait for ever. And nothing can rebuild it: its bytes came from the kernel.

So the kernel watches the collections it spread (by weak reference: a collection the user drops
is forgotten) on a thread of its own, from the client's own view of the futures, which the
scheduler tells at once that a key was lost. It then fails the lost keys in the scheduler with a
sentence that names the variable and the way back (:func:`~...compat.fail_unrunnable`): a
computation already waiting fails with it, and so does every later one, at once, for as long as
the collection is held. ``%gpu_cluster status`` lists the collection as damaged (:func:`notes`).
Partitions a restart released fail with Dask's own cancellation, as they should; status says so.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .... import compat, lifecycle
from ....monitor import scheduler_probe

log = logging.getLogger(__name__)

#: seconds between two looks at the watched collections' futures
POLL = 0.25
#: seconds the scheduler may take to fail the lost keys (tried again at the next look)
CALL_TIMEOUT = 10.0
THREAD_NAME = "gpudask-distribute-watch"


@dataclass
class _Watched:
    name: str
    collection: weakref.ref[Any]
    where: dict[str, str]  # partition key → the worker that held it
    damage: str = ""  # the sentence, once the collection cannot be used


# per process: one watcher of the collections this process spread: their futures are its client's
_lock = threading.Lock()
_watched: list[_Watched] = []
_thread: threading.Thread | None = None
_stop = threading.Event()


def track(name: str, collection: Any, where: Mapping[str, str]) -> None:
    """Watch ``collection`` (variable ``name``), whose partition keys were placed on ``where``'s
    workers."""
    global _thread
    entry = _Watched(name, weakref.ref(collection), dict(where))
    with _lock:
        _watched.append(entry)
        if _thread is None or not _thread.is_alive():
            _stop.clear()
            _thread = threading.Thread(target=_run, name=THREAD_NAME, daemon=True)
            _thread.start()
            lifecycle.on_unload(stop, lifecycle.VIEWS)


def stop() -> None:
    """Stop watching (``%unload_ext``): the thread ends."""
    global _thread
    _stop.set()
    with _lock:
        thread, _thread = _thread, None
        _watched.clear()
    if thread is not None and thread is not threading.current_thread():
        thread.join(5)


def notes() -> list[str]:
    """What ``status`` says of the watched collections that can no longer be used."""
    with _lock:
        return [
            entry.damage for entry in _watched if entry.damage and entry.collection() is not None
        ]


def _run() -> None:
    global _thread
    while not _stop.wait(POLL):
        with _lock:
            _watched[:] = [e for e in _watched if e.collection() is not None]
            if not _watched:  # nothing left to watch: the next track() starts a new thread
                _thread = None
                return
            entries = [e for e in _watched if not e.damage]
        for entry in entries:
            collection = entry.collection()
            if collection is None:
                continue
            try:
                _look(entry, collection)
            except Exception:  # a closed client, a cluster gone: the next look may say
                log.debug("watching %s failed", entry.name, exc_info=True)
            del collection


def _look(entry: _Watched, collection: Any) -> None:
    from distributed import futures_of

    futures = futures_of(collection)
    lost = [f for f in futures if f.status in ("lost", "error")]
    if lost:
        _fail(entry, futures, lost)
    elif futures and all(f.status == "cancelled" for f in futures):
        entry.damage = (
            f"{entry.name}: its partitions were released (a restart, or a cancel); spread it "
            "again with %%to_gpu --distribute"
        )


def _fail(entry: _Watched, futures: list[Any], lost: list[Any]) -> None:
    """Fail the ``lost`` futures' keys in the scheduler with the sentence."""
    workers = sorted({entry.where.get(f.key, "a worker") for f in lost})
    message = (
        f"{entry.name}: {len(lost)} of {len(futures)} partitions were lost with worker "
        f"{', '.join(workers)}, which left the cluster; a partition spread by %%to_gpu "
        f"--distribute cannot be rebuilt without it. Spread {entry.name} again from the pandas "
        f"/ NumPy object (%%to_gpu --distribute); del {entry.name} frees what its other "
        "partitions hold"
    )
    scheduler_probe.ship_by_value()  # compat travels by value: a scheduler elsewhere needs none
    failed = compat.run_on_scheduler(
        lost[0].client,
        compat.fail_unrunnable,
        CALL_TIMEOUT,
        keys=[f.key for f in lost],
        message=message,
    )
    if len(failed) == len(lost):
        entry.damage = message
        log.info("%s", message)
