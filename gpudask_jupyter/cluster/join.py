"""The workers this kernel lends to a scheduler that runs elsewhere (``%gpu_cluster join``).

**How they run.** As ``distributed.Nanny`` objects inside the kernel, on an event loop thread of
this module; each nanny starts its worker as a child process of the kernel, as ``LocalCluster``
does for ``start``. On GPUs the nannies are made by dask-cuda's public ``CUDAWorker`` (what
``dask cuda worker`` runs): one per GPU, each worker bound to its GPU (``CUDA_VISIBLE_DEVICES``
with its GPU first), with dask-cuda's spilling, RMM and CPU-affinity set-up, as
``LocalCUDACluster`` makes them. Without a GPU: plain nannies, CPU workers.

**Why not subprocesses** (``dask cuda worker`` with ``PR_SET_PDEATHSIG``): the death signal follows
the *thread* that forked the child, not the process (a worker started from a short-lived thread
dies with that thread), and it is not inherited: the command's nanny would die with the kernel,
its worker processes only through the nanny's pipe. In-kernel nannies need one mechanism for
every way the kernel ends: a worker process watches a pipe from its parent on a thread of its own
and exits at once when it closes (distributed's ``AsyncProcess``), which SIGKILL of the kernel
does as surely as a clean exit. Nothing has to be delivered, so nothing can be missed. They also
give the worker addresses and pids at once, with no output to parse. Each worker moves to a
process group of its own (:mod:`.worker_setup`) so that interrupting a cell spares it.

**Leaving.** :meth:`JoinedWorkers.leave` asks the scheduler to retire our workers, which copies the
data only they hold to its other workers first and then closes them, bounded by a timeout; then the
nannies are closed and any worker process still there is ended
(:class:`.worker_processes.WorkerPids`).

**Who can reach them.** The workers and their nannies listen on this machine's address on the way
to the scheduler only (``127.0.0.1`` for a scheduler on loopback), and serve no dashboard. With
TLS files they take only encrypted connections from holders of a certificate of the same
authority; on plain TCP anyone who can reach that address can make them (and the nannies, which
run in the kernel) run code as this user: what ``join`` documents.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import compat, lifecycle
from ..errors import ClusterError
from ..machine import gpus, nvml
from ..text.units import format_seconds
from .connect import http_routes
from .options import StartOptions, join_keywords
from .target import AttachTarget
from .worker_processes import ENDING_GRACE, IpyMainGuard, WorkerPids

log = logging.getLogger(__name__)

T = TypeVar("T")

#: seconds between two looks at our workers' addresses (a nanny restarts a worker that died,
#: which then has a new address)
WATCH_SECONDS = 1.0
#: seconds a nanny gets to end its worker process when closing
CLOSE_TIMEOUT = 10.0
#: the same on a kernel's shutdown or ``%unload_ext``: the kernel manager ends a kernel that
#: takes longer than a few seconds to shut down
QUICK_RETIRE = 2.0
THREAD_NAME = "gpudask-join"


class _Loop:
    """An asyncio event loop on a daemon thread of its own: where the nannies live, so that
    no client, cell or other loop of the kernel can stop them by stopping its own loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop and wait for it, at most ``timeout`` seconds (then it is
        cancelled, and ``TimeoutError`` raised)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except BaseException:
            future.cancel()
            raise

    def submit(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        """Cancel what still runs on the loop, stop it and close it."""
        if self.loop.is_closed():
            return
        with contextlib.suppress(Exception):
            self.run(_cancel_others(), CLOSE_TIMEOUT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(CLOSE_TIMEOUT)
        if self._thread.is_alive():
            log.warning("the event loop of the joined workers did not stop")
            return
        self.loop.close()


async def _cancel_others() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@dataclass(frozen=True)
class Retirement:
    """How leaving went: our workers' addresses, those the scheduler retired (their data moved
    to its other workers, then closed), and why not the others."""

    workers: tuple[str, ...]
    retired: tuple[str, ...] = ()
    problem: str = ""

    def describe(self, address: str) -> str:
        n = len(self.workers)
        if not n:
            return f"This kernel had no worker left in the cluster at {address}."
        plural = "s" * (n != 1)
        if len(self.retired) == n:
            return (
                f"{n} worker{plural} of this kernel left the cluster at {address}; the scheduler "
                "moved the data they held to its other workers first."
            )
        kept = n - len(self.retired)
        return (
            f"{kept} of the {n} worker{plural} of this kernel could not hand over their data "
            f"before leaving {address} ({self.problem or 'no other worker could take it'}); "
            "they were ended anyway. Results only they held are lost: the scheduler computes "
            "them again where it can."
        )


class JoinedWorkers:
    """The nannies this kernel runs for a scheduler elsewhere, and their worker processes."""

    def __init__(
        self, loop: _Loop, nannies: list[Any], host: str | None, guard: IpyMainGuard
    ) -> None:
        self._loop = loop
        self.nannies = nannies
        self.host = host  # where they listen (None: where the library chose)
        self.pids = WorkerPids()
        self._guard = guard  # held while the nannies may spawn workers (they restart them)
        self.on_change: Callable[[], None] | None = None
        self._watcher: Any = None
        self._left: Retirement | None = None

    @classmethod
    def start(
        cls,
        target: AttachTarget,
        opts: StartOptions,
        devices: list[nvml.Device],
        name: str,
        worker_caps: dict[str, Any] | None = None,
    ) -> JoinedWorkers:
        """Start one worker per device (CPU workers without) connected to ``target``'s
        scheduler, and wait until each has joined, within the startup timeout; ``worker_caps``
        hold them within the kernel's share of a shared machine. Nothing is left running when
        it fails."""
        timeout = opts.startup_timeout()
        host = target.facing_host()
        guard = IpyMainGuard()
        guard.hold()
        loop = _Loop()
        try:
            nannies = loop.run(
                _make_nannies(target, opts, devices, host, name, worker_caps), timeout
            )
        except BaseException as err:
            loop.stop()
            guard.release()
            if not isinstance(err, Exception):
                raise  # Ctrl+C stays Ctrl+C
            raise _not_joined(target, err, timeout) from err
        workers = cls(loop, nannies, host, guard)
        try:
            loop.run(_start_all(nannies), timeout)
        except BaseException as err:
            workers.close()
            if not isinstance(err, Exception):
                raise
            raise _not_joined(target, err, timeout) from err
        workers.pids.note(workers)
        workers._watcher = loop.submit(workers._watch())
        return workers

    @property
    def workers(self) -> dict[int, Any]:
        """The nannies by position: what :meth:`.worker_processes.WorkerPids.note` reads the
        pids from."""
        return dict(enumerate(self.nannies))

    def addresses(self) -> list[str]:
        """Our workers' addresses, as the scheduler knows them (none once they left)."""
        found = (getattr(nanny, "worker_address", None) for nanny in self.nannies)
        return [str(address) for address in found if address]

    def owns(self, address: str) -> bool:
        return address in self.addresses()

    async def _watch(self) -> None:
        """Follow our workers' addresses: when one changes, note the new processes and tell
        ``on_change`` (the registry entry lists them for the server)."""
        seen = self.addresses()
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            now = self.addresses()
            if now == seen:
                continue
            seen = now
            self.pids.note(self)
            if self.on_change is not None:
                try:
                    self.on_change()
                except Exception:
                    log.warning("telling of new worker addresses failed", exc_info=True)

    def stop_watching(self) -> None:
        """Once this returns, ``on_change`` is neither called nor running (the registry entry it
        writes is about to be removed): it is dropped on the loop, where it runs."""

        async def forget() -> None:
            self.on_change = None
            if self._watcher is not None:
                self._watcher.cancel()

        if not self._loop.loop.is_closed():
            try:
                self._loop.run(forget(), CLOSE_TIMEOUT)
            except Exception:
                log.debug("stopping the watch of our workers failed", exc_info=True)
        self.on_change = None

    def leave(self, client: Any, timeout: float) -> Retirement:
        """Retire our workers through ``client`` (None: the scheduler cannot be asked), then
        end them whatever the scheduler did, and stop the loop. Once; later calls say the same."""
        if self._left is None:
            self.stop_watching()
            try:
                self._left = self._retire(client, timeout)
            finally:  # Ctrl+C while the scheduler moves the data: ours still end
                self.close()
        return self._left

    def _retire(self, client: Any, timeout: float) -> Retirement:
        ours = tuple(self.addresses())
        if not ours:
            return Retirement(ours)
        if client is None:
            return Retirement(ours, problem="the scheduler could not be reached")
        try:
            retired = compat.retire_workers(client, list(ours), timeout)
        except Exception as err:
            log.debug("retiring %s failed", ours, exc_info=True)
            why = (
                f"not done within {format_seconds(timeout)}"
                if isinstance(err, TimeoutError)
                else f"{type(err).__name__}: {err}"
            )
            return Retirement(ours, problem=why)
        return Retirement(ours, tuple(address for address in ours if address in retired))

    def close(self) -> None:
        """Close every nanny (its worker process with it), end any worker process left, and
        stop the loop. Works whatever state the nannies and the scheduler are in."""
        self.pids.note(self)
        self.stop_watching()
        if lifecycle.ending():  # a busy worker would hold its nanny's close for seconds
            self.pids.end_leftovers(ENDING_GRACE, "the kernel is going away")
        if not self._loop.loop.is_closed():
            try:
                self._loop.run(_close_all(self.nannies), 2 * CLOSE_TIMEOUT)
            except BaseException:
                log.debug("closing the nannies failed", exc_info=True)
            self._loop.stop()
        self.pids.end_leftovers()
        self._guard.release()


async def _make_nannies(
    target: AttachTarget,
    opts: StartOptions,
    devices: list[nvml.Device],
    host: str | None,
    name: str,
    worker_caps: dict[str, Any] | None = None,
) -> list[Any]:
    """The nannies, not started yet; made on the loop they will run on (a nanny belongs to
    the loop running where it is made). Their workers serve only a health check over HTTP."""
    keywords = join_keywords(opts, devices, target.worker_security(), worker_caps)
    with http_routes(False):  # a nanny keeps the configuration it was made with
        if devices:
            return _cuda_nannies(target.address, keywords, devices, host, name)
        from distributed import Nanny

        return [
            Nanny(target.address, host=host, name=f"{name}-cpu{i}", **keywords)
            for i in range(opts.n_workers or 1)
        ]


def _cuda_nannies(
    address: str, keywords: dict[str, Any], devices: list[nvml.Device], host: str | None, name: str
) -> list[Any]:
    """dask-cuda's ``CUDAWorker`` reads the GPUs to use from this process's
    ``CUDA_VISIBLE_DEVICES``, as ``dask cuda worker`` is started with it: set for the moment it
    makes its nannies (each keeps its own copy for its worker), then put back
    (:func:`.gpus.devices_for_construction`)."""
    from dask_cuda import CUDAWorker

    with gpus.devices_for_construction(devices):
        made = CUDAWorker(address, host=host, **keywords)
    nannies = compat.cuda_worker_nannies(made)
    for nanny, device in zip(nannies, devices, strict=True):
        compat.name_nanny(nanny, f"{name}-gpu{device.label}")
    return nannies


async def _start_all(nannies: list[Any]) -> None:
    await asyncio.gather(*nannies)


async def _close_all(nannies: list[Any]) -> None:
    await asyncio.gather(
        *(nanny.close(timeout=CLOSE_TIMEOUT) for nanny in nannies), return_exceptions=True
    )


def _not_joined(target: AttachTarget, err: Exception, timeout: float) -> ClusterError:
    """The sentence for a join whose workers did not start."""
    if isinstance(err, ClusterError):
        return err
    if isinstance(err, TimeoutError):
        return ClusterError(
            f"This kernel's workers did not join {target.address} within "
            f"{format_seconds(timeout)}; nothing was left running. A worker must reach the "
            "scheduler, and the scheduler and its other workers must reach it back at this "
            "machine's address. Longer: the startup-timeout option."
        )
    return ClusterError(
        f"This kernel's workers did not join {target.address}: {type(err).__name__}: {err}. "
        "Nothing was left running."
    )


def worker_name() -> str:
    """What our workers' names start with: this machine and this kernel's process, so that two
    kernels (or machines) that join one scheduler do not take each other's names."""
    return f"{socket.gethostname().split('.')[0]}-{os.getpid()}"
