"""How a tracker asks a scheduler something: a call that returns at once with a future.

The sampler starts one call per cluster and per tick and waits for all of them together, for a
bounded time, so a scheduler that does not answer (a silent port, a paused process, a dead one)
costs the others nothing: its call ends by its own timeout, later, while the others' answers are
used at once. Two ways to call, chosen by whoever registers the cluster as a source:

- :class:`ClientCaller` (the kernel): through the kernel's own ``distributed.Client``, on its
  event loop.
- :class:`CommCaller` (the Jupyter server): no Client at all (no reconnect loop, no heartbeats,
  so nothing to log when a cluster stops), just one comm per cluster to the scheduler's
  ``run_function`` handler, opened and used on :func:`event_loop`, one thread shared by every
  cluster, with every step under ``asyncio.wait_for``. The comm is kept between calls and closed
  when a call fails or the cluster is no longer followed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from .. import compat
from . import scheduler_probe

log = logging.getLogger(__name__)

LOOP_THREAD_NAME = "gpudask-comms"


class Caller(Protocol):
    def call(self, function: Any, timeout: float, **kwargs: Any) -> concurrent.futures.Future[Any]:
        """Start ``function(dask_scheduler=..., **kwargs)`` in the scheduler; the future fails
        with an exception (TimeoutError, OSError ...) when it does not end within ``timeout``."""
        ...

    def close(self) -> None:
        """Let go of any connection; never blocks."""
        ...


class Shipped:
    """A function of :mod:`.scheduler_probe` pickled (by value) once, sent as those bytes ever
    after.

    Pickling ``scheduler_probe.poll`` by value walks that module and :mod:`..compat` (dozens of code
    objects) on every call, four times a second while a panel is open. Pickling this object costs a
    copy of the bytes (this module is not itself shipped by value, so Dask pickles it with plain
    pickle); the receiving end rebuilds the function with :func:`pickle.loads`, which any Dask
    scheduler has.
    """

    def __init__(self, function: Any) -> None:
        import cloudpickle

        scheduler_probe.ship_by_value()
        self.data = cloudpickle.dumps(function)
        self.__name__ = getattr(function, "__name__", "shipped")

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        import pickle

        return pickle.loads, (self.data,)


_shipped: dict[str, Shipped] = {}
# per process: cloudpickle registers a module by value once per process
_shipped_lock = threading.Lock()


def shipped(name: str) -> Shipped:
    """``scheduler_probe``'s function ``name``, pickled once per process."""
    with _shipped_lock:
        found = _shipped.get(name)
    if found is None:
        found = Shipped(getattr(scheduler_probe, name))
        with _shipped_lock:
            found = _shipped.setdefault(name, found)
    return found


def failed(err: BaseException) -> concurrent.futures.Future[Any]:
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_exception(err)
    return future


class ClientCaller:
    """Calls through a connected ``distributed.Client`` (the kernel's own); closing it is left to
    its owner."""

    def __init__(self, client: Any) -> None:
        self.client = client

    @property
    def closed(self) -> bool:
        return getattr(self.client, "status", "running") in {"closed", "closing"}

    def call(self, function: Any, timeout: float, **kwargs: Any) -> concurrent.futures.Future[Any]:
        try:
            future: concurrent.futures.Future[Any] = compat.submit_on_scheduler(
                self.client, function, timeout, **kwargs
            )
        except Exception as err:  # the client's loop is gone (closed meanwhile)
            log.debug("cannot start a call through the client", exc_info=True)
            return failed(err)
        return future

    def close(self) -> None:
        pass


class EventLoop:
    """An asyncio event loop on a daemon thread of its own, for every CommCaller of the process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name=LOOP_THREAD_NAME, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)


# per process: one event loop thread carries every client call of this process
_loop: EventLoop | None = None
_loop_lock = threading.Lock()


def event_loop() -> EventLoop:
    """The process's one loop for scheduler comms, started on first use."""
    global _loop
    with _loop_lock:
        if _loop is None or not _loop.thread.is_alive():
            _loop = EventLoop()
        return _loop


class CommCaller:
    """Calls over one comm of our own to the scheduler at ``address``, reconnecting on the next
    call after a failure. ``connection_args`` makes the TLS arguments (None: plain TCP); it is
    called only when a comm is opened."""

    def __init__(
        self,
        address: str,
        connection_args: Callable[[], dict[str, Any]],
        connect_timeout: float,
    ) -> None:
        self.address = address
        self._connection_args = connection_args
        self._connect_timeout = connect_timeout
        self._comm: Any = None  # used on the event loop's thread only
        self._closed = False

    def call(self, function: Any, timeout: float, **kwargs: Any) -> concurrent.futures.Future[Any]:
        if self._closed:
            return failed(OSError(f"the connection to {self.address} was closed"))
        return event_loop().submit(self._call(function, timeout, kwargs))

    async def _call(self, function: Any, timeout: float, kwargs: dict[str, Any]) -> Any:
        deadline = time.monotonic() + timeout
        comm = self._comm
        self._comm = None  # one call at a time owns the comm; a failed one never gives it back
        try:
            if comm is None or comm.closed():
                connect = min(self._connect_timeout, timeout)
                comm = await compat.open_comm(self.address, connect, self._connection_args())
            left = max(0.0, deadline - time.monotonic())
            result = await asyncio.wait_for(compat.run_on_comm(comm, function, **kwargs), left)
        except BaseException:
            if comm is not None:
                comm.abort()
            raise
        if self._closed:
            comm.abort()
        else:
            self._comm = comm
        return result

    def close(self) -> None:
        """Abort the idle comm (on the loop's thread); a call in flight aborts its own at its
        end, seeing the caller closed."""
        self._closed = True
        loop = _loop
        if loop is not None and loop.thread.is_alive():
            loop.loop.call_soon_threadsafe(self._abort)

    def _abort(self) -> None:
        comm, self._comm = self._comm, None
        if comm is not None:
            comm.abort()
