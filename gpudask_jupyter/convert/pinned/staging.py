"""The pinned, pipelined host↔device copy behind %%to_gpu / %%to_cpu for large numeric data.

A copy from pageable host memory is bounced through a driver buffer and runs at a fraction of
what the bus allows; a copy from page-locked ("pinned") memory is a direct DMA. So the data goes
through a small ring of pinned buffers instead: several host threads each fill their next buffer
(a plain memcpy that releases the GIL) while the DMAs of their previous buffers run on their own
CUDA stream, and the reverse for device→host. The buffers are allocated once, on first use,
bounded by the ``pinned-buffer`` option, reused for every transfer and freed by :func:`release`
(``%unload_ext``).

What limits the pipeline is the host's memcpy, a few times slower per thread than the bus. So the
threads take their next piece from one shared cursor (a thread that was descheduled does not leave
the others waiting for its share at the end), and all the arrays of a frame travel as one job
(:class:`Batch`), so the pipeline fills and drains once per frame, not once per column.

The ring's shape and the order of its pieces are :mod:`.ring`'s.

Registering the user's memory (``cudaHostRegister``) to skip the memcpy loses: the driver does
not overlap registering, DMA and unregistering, so a pipeline of registered blocks runs at the
sum of the three steps' times, well below the ring (the README's performance section has the
figures). Device→host, the destination is fresh memory (:mod:`.host_memory`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Literal

from ... import config, lifecycle
from ...lifecycle import interrupts
from . import host_memory, ring, thread_count
from .cuda_backend import Backend, CupyBackend
from .ring import PieceQueue, Segment, piece_size

log = logging.getLogger(__name__)

#: seconds a close waits for another thread's transfer before leaving its buffers to it
CLOSE_WAIT = 5.0


def _wait_through_interrupts(futures: Sequence[Future[None]]) -> None:
    """Wait for every future even if the user interrupts again: the threads are already told to
    stop, and each stops within one piece."""
    while True:
        try:
            wait(futures)
            return
        except KeyboardInterrupt:
            continue


class PinnedStager:
    """A fixed ring of pinned buffers per thread, and the threads that move data through them.

    Each thread owns ``depth`` buffers, as many events and one CUDA stream. For host→device it
    copies its next piece into a free buffer and queues that buffer's DMA; for device→host it
    queues the DMA into a free buffer and copies a buffer out once its DMA is done. Either way a
    buffer is reused only after the event recorded behind its DMA has fired.
    """

    def __init__(
        self,
        capacity: int,
        threads: int,
        backend: Backend | None = None,
        prefault: Callable[[int, int], None] = host_memory.prefault,
        threads_now: Callable[[int, bool], int] | None = None,
    ) -> None:
        ring_shape = ring.shape(capacity, threads)
        if ring_shape is None:
            raise ValueError(f"a pinned budget of {capacity} bytes holds no ring")
        self.threads, self.depth, self.chunk = (
            ring_shape.threads,
            ring_shape.depth,
            ring_shape.chunk,
        )
        self.capacity = ring_shape.nbytes
        self._prefault = prefault  # (address, size): fault a device→host destination in
        # how many of the threads the next transfer uses (all, unless given)
        self._threads_now = threads_now or (lambda most, to_device: most)
        self.adapts = threads_now is not None
        self.last_threads = 0  # how many the last transfer used (the benchmark reports it)
        self._backend: Backend = backend if backend is not None else CupyBackend()
        self._buffers: list[list[int]] = []
        try:
            for _ in range(self.threads):
                self._buffers.append(
                    [self._backend.alloc_pinned(self.chunk) for _ in range(self.depth)]
                )
        except BaseException:
            self._free_buffers()
            raise
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="gpudask-staging")
        self._per_device: dict[int, tuple[list[Any], list[list[Any]]]] = {}
        self._lock = threading.Lock()
        self._owner: int | None = None  # the thread inside a transfer
        self._pieces: PieceQueue | None = None  # the running transfer's
        self._stopped = False  # closed from a signal handler in the middle of a transfer

    def matches(self, capacity: int, threads: int) -> bool:
        return ring.shape(capacity, threads) == ring.Shape(self.threads, self.depth, self.chunk)

    def _streams(self, device: int) -> tuple[list[Any], list[list[Any]]]:
        if device not in self._per_device:
            backend = self._backend
            streams = [backend.stream(device) for _ in range(self.threads)]
            events = [
                [backend.event(device) for _ in range(self.depth)] for _ in range(self.threads)
            ]
            self._per_device[device] = (streams, events)
        return self._per_device[device]

    def _work(self, t: int, pieces: PieceQueue, to_device: bool, device: int) -> None:
        backend = self._backend
        backend.set_device(device)
        streams, events = self._per_device[device]
        stream, ring, buffers, depth = streams[t], events[t], self._buffers[t], self.depth
        held = [(0, 0)] * depth  # device→host: where each buffer's bytes go once its DMA is done
        issued = 0

        def drain(slot: int) -> None:
            ring[slot].synchronize()
            host, size = held[slot]
            if size:
                ctypes.memmove(host, buffers[slot], size)

        try:
            while (piece := pieces.next()) is not None:
                host, dev, size = piece
                slot = issued % depth
                if issued >= depth:
                    drain(slot)  # the DMA that last used this buffer is done
                if to_device:
                    ctypes.memmove(buffers[slot], host, size)
                    backend.copy_async(dev, buffers[slot], size, True, stream)
                else:
                    backend.copy_async(buffers[slot], dev, size, False, stream)
                    held[slot] = (host, size)
                ring[slot].record(stream)
                if not to_device:  # while this DMA and the earlier ones run
                    self._prefault(host, size)
                issued += 1
            for k in range(max(0, issued - depth), issued):  # oldest first
                drain(k % depth)
        except BaseException:
            pieces.cancel()
            try:
                stream.synchronize()  # no DMA may still use a buffer after we give up
            except Exception:  # the error being raised says more than this one
                log.debug("synchronising a copy stream after a failure failed", exc_info=True)
            raise

    @contextlib.contextmanager
    def transfer(self, segments: Sequence[Segment], to_device: bool, device: int) -> Iterator[None]:
        """Copy ``segments`` while the body of the ``with`` runs; done when the block exits.

        The body may do other work meanwhile (cuDF's own path for the columns that do not take
        this one). If it raises, or the wait is interrupted (Ctrl-C), the copy is cut short and
        every thread has stopped before the error is raised: no thread may go on reading or
        writing arrays the caller is about to free, or buffers the next transfer will use.
        """
        with self._lock:
            self._owner, self._stopped = threading.get_ident(), False
            try:
                yield from self._transfer(segments, to_device, device)
            finally:
                self._owner = self._pieces = None

    def _transfer(
        self, segments: Sequence[Segment], to_device: bool, device: int
    ) -> Iterator[None]:
        self._streams(device)
        # kernels on other streams may still use the memory we read or write
        self._backend.synchronize(device)
        pieces = self._pieces = PieceQueue(segments, piece_size(self.chunk, to_device))
        futures: list[Future[None]] = []
        active = max(1, min(self.threads, self._threads_now(self.threads, to_device)))
        self.last_threads = active
        with interrupts.InterruptGuard() as guard:
            try:
                # a Ctrl-C inside submit (the pool starting a copy thread) lost that thread's
                # future: the copy ran on after the interrupt was raised; held, it is raised
                # once every thread is known, and each is waited for
                with guard.held():
                    for t in range(min(active, pieces.count)):
                        futures.append(self._pool.submit(self._work, t, pieces, to_device, device))
                guard.checkpoint()
                yield
                wait(futures)
            except BaseException:
                pieces.cancel()
                _wait_through_interrupts(futures)
                raise
        if self.adapts:
            thread_count.transfer_done()
        for future in futures:
            future.result()
        if self._stopped:
            raise RuntimeError("the pinned copy was stopped: the kernel is shutting down")

    def copy(self, segments: Sequence[Segment], to_device: bool, device: int) -> None:
        with self.transfer(segments, to_device, device):
            pass

    def _free_buffers(self) -> None:
        for buffers in self._buffers:
            for ptr in buffers:
                self._backend.free_pinned(ptr)
        self._buffers = []

    def close(self, timeout: float = CLOSE_WAIT) -> None:
        """Stop the threads and free the buffers. Never hangs: called from a signal handler
        (SIGTERM) that interrupted a transfer on this very thread, it only cuts the transfer
        short (which then fails) and leaves the buffers to the ending process; while another
        thread's transfer runs, it waits for it at most ``timeout`` seconds."""
        if self._owner == threading.get_ident():
            pieces = self._pieces
            if pieces is not None:
                pieces.cancel()
            self._stopped = True
            log.debug("pinned stager closed inside a transfer: buffers left to the exit")
            return
        if not self._lock.acquire(timeout=timeout):
            log.warning("a pinned transfer still runs: its buffers are freed when it ends")
            return
        try:
            self._pool.shutdown(wait=True)
            self._free_buffers()
            self._per_device.clear()
        finally:
            self._lock.release()


# per process: the pinned buffers, CUDA's per process (host_memory.policy)
_stager: PinnedStager | None = None
_stager_lock = threading.RLock()  # re-entrant: SIGTERM's handler may release inside stager()


def stager() -> PinnedStager | None:
    """The process's stager, created on first use from the current options; None when the
    ``pinned-buffer`` budget is too small for a ring (then nothing is pinned)."""
    global _stager
    capacity = int(config.get("pinned-buffer"))
    asked = int(config.get("transfer-threads"))
    threads = asked or thread_count.default_threads(to_device=False)  # the direction using most
    with _stager_lock:
        if _stager is not None and (
            not _stager.matches(capacity, threads) or _stager.adapts != (not asked)
        ):
            _stager.close()
            _stager = None
        if _stager is None and ring.shape(capacity, threads) is not None:
            # threads chosen by the user are used as they are; chosen here, fewer on a busy host
            adapt = None if asked else thread_count.copy_threads
            _stager = PinnedStager(capacity, threads, threads_now=adapt)
            log.debug(
                "pinned stager: %d threads × %d buffers of %d bytes",
                _stager.threads,
                _stager.depth,
                _stager.chunk,
            )
            lifecycle.on_unload(release, lifecycle.MEMORY)
        return _stager


def copy(segments: Sequence[Segment], to_device: bool, device: int) -> None:
    """Copy ``segments`` through the pinned ring, or, where the budget holds none, one after
    another with the runtime's own (pageable) copy."""
    through = stager()
    if through is not None:
        through.copy(segments, to_device, device)
        return
    import cupy

    kind = 1 if to_device else 2  # cudaMemcpyHostToDevice / DeviceToHost
    with cupy.cuda.Device(device):
        for segment in segments:
            dst, src = (
                (segment.device, segment.host) if to_device else (segment.host, segment.device)
            )
            cupy.cuda.runtime.memcpy(dst, src, segment.nbytes, kind)


def pinned_bytes() -> int:
    """Page-locked host memory held now (0 when nothing was staged yet or after release)."""
    with _stager_lock:
        return _stager.capacity if _stager is not None else 0


def release() -> None:
    """Free the pinned buffers and stop the copy threads (called by ``%unload_ext``)."""
    global _stager
    with _stager_lock:
        if _stager is not None:
            _stager.close()
            _stager = None


def use_pinned(nbytes: int) -> bool:
    """Whether ``nbytes`` go through the pinned ring: large enough, and a ring fits the budget."""
    if nbytes < int(config.get("transfer-threshold")):
        return False
    return ring.shape(int(config.get("pinned-buffer")), 1) is not None


def current_device() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDevice())


def _order(flags: Any) -> Literal["C", "F"]:
    return "F" if flags.f_contiguous and not flags.c_contiguous else "C"


class Batch:
    """Arrays whose bytes cross in one pinned transfer, in one direction, to or from one device.

    ``device_array`` / ``host_array`` allocate the destination at once and return it; its
    contents are valid once :meth:`running` has exited (or :meth:`run` returned). The batch
    holds the sources (and any contiguous copies made of them) until then; once such copies
    reach ``TEMPORARY_LIMIT`` bytes, what was added so far is sent at once, so that a frame of
    many strided columns does not hold a copy of all of them.
    """

    TEMPORARY_LIMIT = 2**30

    def __init__(
        self, to_device: bool, device: int | None = None, through: PinnedStager | None = None
    ) -> None:
        self.to_device = to_device
        self.device = device
        self._through = through  # the process's stager unless given (a test's fake)
        self._segments: list[Segment] = []
        self._keep: list[Any] = []
        self._temporary = 0

    def _hold(self, source: Any, temporary: bool) -> None:
        self._keep.append(source)
        if temporary:
            self._temporary += int(source.nbytes)
            if self._temporary >= self.TEMPORARY_LIMIT:
                self.run()

    def device_array(self, host: Any) -> Any:
        """An uninitialised CuPy array that will equal ``cupy.asarray(host)``."""
        import cupy
        import numpy as np

        assert self.to_device
        copied = not (host.flags.c_contiguous or host.flags.f_contiguous)
        if copied:
            host = np.ascontiguousarray(host)
        if self.device is None:
            self.device = current_device()
        with cupy.cuda.Device(self.device):
            out = cupy.empty(host.shape, dtype=host.dtype, order=_order(host.flags))
        if host.nbytes:
            self._segments.append(Segment(host.ctypes.data, int(out.data.ptr), host.nbytes))
            self._hold(host, copied)
        return out

    def host_array(self, dev: Any, temporary: bool = False) -> Any:
        """An uninitialised NumPy array that will equal ``dev.get()``; ``temporary`` says that
        ``dev`` was made only for this copy (it counts towards ``TEMPORARY_LIMIT``)."""
        assert not self.to_device
        device = int(dev.device.id)
        if self.device is None:
            self.device = device
        if device != self.device:  # one transfer runs on one device's streams
            return dev.get()
        if not (dev.flags.c_contiguous or dev.flags.f_contiguous):
            import cupy

            temporary = True
            with cupy.cuda.Device(device):
                dev = cupy.ascontiguousarray(dev)
        out = host_memory.empty(dev.shape, dev.dtype, _order(dev.flags))
        if out.nbytes:
            self._segments.append(Segment(out.ctypes.data, int(dev.data.ptr), out.nbytes))
            self._hold(dev, temporary)
        return out

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Copy everything added so far while the body runs (see :meth:`PinnedStager.transfer`)."""
        if not self._segments or self.device is None:
            yield
            return
        try:
            through = self._through if self._through is not None else stager()
            if through is None:  # the budget holds no ring (it changed since use_pinned said)
                copy(self._segments, self.to_device, self.device)
                yield
                return
            with through.transfer(self._segments, self.to_device, self.device):
                yield
        finally:
            self._segments, self._keep, self._temporary = [], [], 0

    def run(self) -> None:
        with self.running():
            pass


def to_device(host: Any, device: int | None = None) -> Any:
    """A CuPy array equal to ``cupy.asarray(host)``, copied through pinned memory."""
    batch = Batch(to_device=True, device=device)
    out = batch.device_array(host)
    batch.run()
    return out


def to_host(dev: Any) -> Any:
    """A NumPy array equal to ``dev.get()``, copied through pinned memory."""
    batch = Batch(to_device=False)
    out = batch.host_array(dev)
    batch.run()
    return out
