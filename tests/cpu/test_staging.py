"""The pinned pipeline's logic on the CPU, against a backend whose copies really are asynchronous.

The fake backend's "DMA" runs only when an event or stream behind it is waited for, the way a
real copy may still be in flight: a buffer refilled before its DMA ran, or drained before its DMA
landed, gives wrong bytes here too. Device memory is host memory.

Device→host, the destinations are fresh mappings (:mod:`gpudask_jupyter.convert.pinned.host_memory`)
that the copy threads fault in ahead of the copy: a recording fault-in checks that each piece's
destination is still untouched, with its DMA in flight, when it is faulted in.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import gc
import logging
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from support import wait_until
from test_host_memory import mapping_of

from gpudask_jupyter import config
from gpudask_jupyter.convert.pinned import host_memory, ring, staging
from gpudask_jupyter.convert.pinned.ring import MiB, PieceQueue, Segment
from gpudask_jupyter.convert.pinned.staging import Batch, PinnedStager


class FakeStream:
    def __init__(self) -> None:
        self.queue: list[Callable[[], None]] = []
        self.done = 0
        self._lock = threading.Lock()

    def run_until(self, mark: int) -> None:
        with self._lock:
            while self.done < mark:
                self.queue[self.done]()
                self.done += 1

    def synchronize(self) -> None:
        self.run_until(len(self.queue))


class FakeEvent:
    def __init__(self) -> None:
        self.stream: FakeStream | None = None
        self.mark = 0

    def record(self, stream: FakeStream) -> None:
        self.stream, self.mark = stream, len(stream.queue)

    def synchronize(self) -> None:
        if self.stream is not None:
            self.stream.run_until(self.mark)


class FakeBackend:
    def __init__(
        self, fail_only: int | None = None, delay: float = 0, interrupt_at: int | None = None
    ) -> None:
        self.pinned: dict[int, Any] = {}
        self.streams: list[FakeStream] = []
        self.copies = 0
        self.fail_only = fail_only  # only this copy (1-based) fails
        self.delay = delay
        # at this copy (1-based), once the main thread waits for the copy threads, SIGALRM goes
        # to it: this copy and the later ones wait until the test's handler has run
        # (``handled``), so that the signal lands in the transfer's wait while the copy is under
        # way, however slowly each thread comes to it
        self.interrupt_at = interrupt_at
        self.handled = threading.Event()
        self.busy = 0  # threads inside copy_async now
        self._lock = threading.Lock()

    def in_flight(self) -> int:
        """Copies queued and not yet run: DMAs that may still read or write a buffer."""
        return sum(len(stream.queue) - stream.done for stream in self.streams)

    def alloc_pinned(self, size: int) -> int:
        buffer = ctypes.create_string_buffer(size)
        self.pinned[ctypes.addressof(buffer)] = buffer
        return ctypes.addressof(buffer)

    def free_pinned(self, ptr: int) -> None:
        del self.pinned[ptr]

    def set_device(self, device: int) -> None:
        assert device == 0

    def synchronize(self, device: int) -> None:
        for stream in self.streams:
            stream.synchronize()

    def stream(self, device: int) -> FakeStream:
        stream = FakeStream()
        self.streams.append(stream)
        return stream

    def event(self, device: int) -> FakeEvent:
        return FakeEvent()

    def copy_async(self, dst: int, src: int, size: int, to_device: bool, stream: Any) -> None:
        with self._lock:
            self.copies += 1
            if self.copies == self.fail_only:
                raise RuntimeError("cudaErrorLaunchFailure: unspecified launch failure")
            self.busy += 1
            copy = self.copies
        if self.interrupt_at is not None and copy >= self.interrupt_at:
            if copy == self.interrupt_at:
                wait_until(_main_thread_waits, 60, "the main thread to wait for the copy")
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGALRM)
            assert self.handled.wait(60), "the main thread did not handle SIGALRM"
        if self.delay:
            time.sleep(self.delay)  # a copy that takes a while to queue
        stream.queue.append(lambda: ctypes.memmove(dst, src, size))
        with self._lock:
            self.busy -= 1


def _main_thread_waits() -> bool:
    """Whether the main thread is in the transfer's wait for its copy threads."""
    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    while frame is not None:
        if frame.f_code is concurrent.futures.wait.__code__:
            return True
        frame = frame.f_back
    return False


SIZES = [5 * MiB + 17, 1, 3 * MiB, 0, 2 * MiB - 5, 7 * MiB + 4093]


def _arrays(seed: int, low: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(low, 256, n, dtype=np.uint8) for n in SIZES]


def _segments(hosts: list[np.ndarray], devices: list[np.ndarray]) -> list[Segment]:
    pairs = zip(hosts, devices, strict=True)
    return [Segment(h.ctypes.data, d.ctypes.data, h.nbytes) for h, d in pairs]


def _assert_equal(got: list[np.ndarray], expected: list[np.ndarray]) -> None:
    for out, want in zip(got, expected, strict=True):
        np.testing.assert_array_equal(out, want)


@pytest.fixture
def stager() -> Any:
    backend = FakeBackend()
    # 4 MiB for 2 threads: 2 buffers of 1 MiB each, so every buffer is reused many times
    stager = PinnedStager(4 * MiB, 2, backend=backend)
    yield stager, backend
    stager.close()


@pytest.mark.parametrize("threads", [1, 2, 8, 14, 16])
@pytest.mark.parametrize(
    "capacity", [0, 64 * 1024, 128 * 1024, MiB, 2 * MiB, 5 * MiB, 16 * MiB, 64 * MiB, 1024 * MiB]
)
def test_the_ring_never_exceeds_the_budget(capacity: int, threads: int) -> None:
    shape = ring.shape(capacity, threads)
    if capacity < 128 * 1024:  # not even two buffers of 64 KiB for one thread
        assert shape is None
        return
    assert shape is not None
    assert shape.nbytes <= capacity  # a bound on a shared server, whatever the budget
    assert shape.depth == 2 and shape.chunk % (64 * 1024) == 0 and shape.chunk <= 4 * MiB
    assert 1 <= shape.threads <= threads
    if capacity >= 2 * threads * MiB:  # room enough: every thread, buffers of 1 MiB or more
        assert shape.threads == threads and shape.chunk >= MiB


def test_a_small_budget_takes_fewer_threads_before_smaller_buffers() -> None:
    assert ring.shape(128 * MiB, 16) == ring.Shape(16, 2, 4 * MiB) == ring.shape(1024 * MiB, 16)
    assert ring.shape(64 * MiB, 16) == ring.Shape(16, 2, 2 * MiB)
    assert ring.shape(16 * MiB, 16) == ring.Shape(8, 2, MiB)  # not 16 threads of 512 KiB
    assert ring.shape(MiB, 16) == ring.Shape(1, 2, 512 * 1024)


def test_a_budget_too_small_for_a_ring_pins_nothing() -> None:
    backend = FakeBackend()
    with pytest.raises(ValueError, match="holds no ring"):
        PinnedStager(64 * 1024, 4, backend=backend)
    assert backend.pinned == {}
    config.set_override("pinned-buffer", 0)
    try:
        assert not staging.use_pinned(10**9)  # large data takes the library's copy
        assert staging.stager() is None
        assert staging.pinned_bytes() == 0
    finally:
        config.clear_overrides()


@pytest.mark.parametrize("capacity", [MiB, 3 * MiB, 16 * MiB])
def test_the_pinned_memory_held_is_within_the_budget(capacity: int) -> None:
    backend = FakeBackend()
    pinned = PinnedStager(capacity, 16, backend=backend)
    try:
        held = sum(len(buffer) for buffer in backend.pinned.values())
        assert held == pinned.capacity <= capacity
    finally:
        pinned.close()


def test_device_to_host_moves_one_huge_page_at_a_time_and_host_to_device_a_whole_buffer() -> None:
    backend = FakeBackend()
    stager = PinnedStager(16 * MiB, 2, backend=backend)  # 2 threads × 2 buffers of 4 MiB
    sizes: list[tuple[bool, int]] = []
    copy = backend.copy_async

    def recording(dst: int, src: int, size: int, to_device: bool, stream: Any) -> None:
        sizes.append((to_device, size))
        copy(dst, src, size, to_device, stream)

    backend.copy_async = recording  # type: ignore[method-assign]
    try:
        host = np.random.default_rng(3).integers(0, 256, 13 * MiB, dtype=np.uint8)
        device = np.zeros_like(host)
        back = host_memory.empty(host.shape, host.dtype)
        stager.copy([Segment(host.ctypes.data, device.ctypes.data, host.nbytes)], True, 0)
        stager.copy([Segment(back.ctypes.data, device.ctypes.data, host.nbytes)], False, 0)
    finally:
        stager.close()
    np.testing.assert_array_equal(back, host)
    up = [size for to_device, size in sizes if to_device]
    down = [size for to_device, size in sizes if not to_device]
    assert sorted(up) == [MiB] + [4 * MiB] * 3
    assert sorted(down) == [MiB] + [2 * MiB] * 6


def test_pieces_cover_every_byte_once_and_stop_at_segment_ends() -> None:
    sizes = [25, 0, 7, 8]
    segments = [Segment(10_000 * i, 99_000_000 + 10_000 * i, n) for i, n in enumerate(sizes)]
    pieces = PieceQueue(segments, chunk=8)
    taken = []
    while (piece := pieces.next()) is not None:
        taken.append(piece)
    assert pieces.count == len(taken) == 4 + 1 + 1
    assert all(0 < size <= 8 for _, _, size in taken)
    covered = sorted((h, h + s) for h, _, s in taken)
    expected = [
        (s.host + o, s.host + min(o + 8, s.nbytes)) for s in segments for o in range(0, s.nbytes, 8)
    ]
    assert covered == sorted(expected)
    assert all(d - h == 99_000_000 for h, d, _ in taken)


def test_host_to_device_and_back_through_a_small_ring(stager: Any) -> None:
    pinned, backend = stager
    assert (pinned.depth, pinned.chunk, pinned.threads) == (2, MiB, 2)
    hosts = _arrays(1)
    devices = [np.zeros_like(h) for h in hosts]
    pinned.copy(_segments(hosts, devices), to_device=True, device=0)
    _assert_equal(devices, hosts)

    back = [np.zeros_like(h) for h in hosts]
    pinned.copy(_segments(back, devices), to_device=False, device=0)
    _assert_equal(back, hosts)
    assert backend.copies == 2 * sum(-(-n // MiB) for n in SIZES)


def test_the_body_runs_while_the_copy_is_in_flight(stager: Any) -> None:
    pinned, _ = stager
    hosts = _arrays(2)
    devices = [np.zeros_like(h) for h in hosts]
    ran = []
    with pinned.transfer(_segments(hosts, devices), to_device=True, device=0):
        ran.append(threading.current_thread() is threading.main_thread())
    assert ran == [True]
    _assert_equal(devices, hosts)


def test_an_error_in_the_body_cuts_the_copy_short_and_is_raised(stager: Any) -> None:
    pinned, _ = stager
    hosts = _arrays(4)
    devices = [np.zeros_like(h) for h in hosts]
    segments = _segments(hosts, devices)
    with pytest.raises(KeyError, match="column"), pinned.transfer(segments, True, 0):
        raise KeyError("column")
    # the lock was released and nothing is left in flight: the next transfer works
    pinned.copy(_segments(hosts, devices), to_device=True, device=0)
    _assert_equal(devices, hosts)


def test_close_frees_every_pinned_buffer_and_thread() -> None:
    backend = FakeBackend()
    pinned = PinnedStager(16 * MiB, 3, backend=backend)
    assert len(backend.pinned) == pinned.threads * pinned.depth
    hosts = _arrays(5)
    devices = [np.zeros_like(h) for h in hosts]
    pinned.copy(_segments(hosts, devices), to_device=True, device=0)
    np.testing.assert_array_equal(devices[0], hosts[0])
    pinned.close()
    assert backend.pinned == {}
    assert not [t for t in threading.enumerate() if t.name.startswith("gpudask-staging")]


PIECES = sum(-(-n // MiB) for n in SIZES)  # 1 MiB pieces in the fixture's layout


def _threads_at_work() -> list[str]:
    """The copy threads inside a transfer's work now (the stager's threads outlive a
    transfer, waiting for the next one)."""
    frames = sys._current_frames()
    found = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or 0)
        while frame is not None:
            if frame.f_code is PinnedStager._work.__code__:
                found.append(thread.name)
                break
            frame = frame.f_back
    return found


def test_one_failing_copy_stops_every_thread_and_leaves_the_stager_usable() -> None:
    backend = FakeBackend(fail_only=3)
    pinned = PinnedStager(4 * MiB, 2, backend=backend)
    try:
        hosts = _arrays(6)
        devices = [np.zeros_like(h) for h in hosts]
        with pytest.raises(RuntimeError, match="launch failure"):
            pinned.copy(_segments(hosts, devices), to_device=True, device=0)
        # the other thread stopped at its next piece instead of copying the rest
        assert backend.copies <= 3 + pinned.threads < PIECES
        assert backend.in_flight() == 0
        pinned.copy(_segments(hosts, devices), to_device=True, device=0)
        _assert_equal(devices, hosts)
    finally:
        pinned.close()
    assert backend.pinned == {}


def test_an_interrupted_wait_stops_the_copy_before_it_returns() -> None:
    backend = FakeBackend(delay=0.01, interrupt_at=2)
    pinned = PinnedStager(4 * MiB, 2, backend=backend)

    def interrupt(signum: int, frame: Any) -> None:
        backend.handled.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        hosts = _arrays(7)
        devices = [np.zeros_like(h) for h in hosts]
        with pytest.raises(KeyboardInterrupt):
            pinned.copy(_segments(hosts, devices), to_device=True, device=0)
        assert backend.busy == 0 and backend.in_flight() == 0  # every thread had stopped
        copies = backend.copies
        assert 0 < copies < PIECES  # it was cut short...
        assert _threads_at_work() == []  # ...and no thread goes on once the error is raised
        assert backend.copies == copies
        backend.interrupt_at = None
        pinned.copy(_segments(hosts, devices), to_device=True, device=0)  # the lock is free
        _assert_equal(devices, hosts)
        assert backend.copies == copies + PIECES  # the last transfer's copies, and no others
    finally:
        signal.signal(signal.SIGALRM, previous)
        pinned.close()


def test_a_close_from_a_signal_handler_inside_a_transfer_never_hangs() -> None:
    """SIGTERM's handler closes the stager while the main thread is inside a transfer, which
    holds the stager's lock: the close returns at once, the transfer fails instead of handing
    back half-copied data, and nothing is left in flight."""
    backend = FakeBackend(delay=0.01, interrupt_at=2)
    pinned = PinnedStager(4 * MiB, 2, backend=backend)
    took: list[float] = []

    def terminate(signum: int, frame: Any) -> None:
        started = time.monotonic()
        pinned.close()
        took.append(time.monotonic() - started)
        backend.handled.set()

    previous = signal.signal(signal.SIGALRM, terminate)
    try:
        hosts = _arrays(8)
        devices = [np.zeros_like(h) for h in hosts]
        with pytest.raises(RuntimeError, match="shutting down"):
            pinned.copy(_segments(hosts, devices), to_device=True, device=0)
        # a close that waited for the lock its own thread's transfer holds would wait out its
        # whole timeout (CLOSE_WAIT, 5 s); one that only cuts the transfer short takes
        # microseconds: half the timeout tells them apart however loaded the machine
        assert took and took[0] < staging.CLOSE_WAIT / 2, took
        assert backend.busy == 0 and backend.in_flight() == 0
    finally:
        signal.signal(signal.SIGALRM, previous)
    pinned.close()  # outside a transfer: frees everything
    assert backend.pinned == {}


def test_a_close_waits_for_another_threads_transfer_at_most_its_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=staging.__name__)
    backend = FakeBackend(delay=0.05)
    pinned = PinnedStager(4 * MiB, 2, backend=backend)
    hosts = _arrays(9)
    devices = [np.zeros_like(h) for h in hosts]
    inside, release = threading.Event(), threading.Event()

    def body() -> None:
        with pinned.transfer(_segments(hosts, devices), True, 0):
            inside.set()
            release.wait(60)  # the transfer lasts until the test ends it

    worker = threading.Thread(target=body)
    worker.start()
    assert inside.wait(60)
    pinned.close(timeout=0.2)
    # it gave up while the transfer still ran (a close that waited for the transfer would not
    # have returned before the test ended it), and left the buffers to it
    assert worker.is_alive()
    assert "a pinned transfer still runs" in caplog.text
    assert backend.pinned
    release.set()
    worker.join(60)
    assert not worker.is_alive()
    pinned.close()
    assert backend.pinned == {}


# -- device→host into fresh memory, faulted in ahead of the copy --------------------------------


class Ahead:
    """A fault-in that checks it runs ahead of the copy, then faults the range in for real.

    The destinations start zeroed and the data has no zero byte, so a range that already holds
    a non-zero byte was written before it was faulted in.
    """

    def __init__(self, backend: FakeBackend, fail_at: int | None = None) -> None:
        self.backend = backend
        self.ranges: list[tuple[int, int]] = []
        self.late: list[tuple[int, int]] = []
        self.fail_at = fail_at
        self._lock = threading.Lock()

    def __call__(self, address: int, size: int) -> None:
        with self._lock:
            self.ranges.append((address, size))
            if len(self.ranges) == self.fail_at:
                raise OSError("fault-in failed")
        if any(ctypes.string_at(address, size)) or self.backend.in_flight() == 0:
            self.late.append((address, size))
        host_memory.prefault(address, size)


def _pieces(segments: list[Segment], chunk: int) -> set[tuple[int, int]]:
    pieces = PieceQueue(segments, chunk)
    found = set()
    while (piece := pieces.next()) is not None:
        found.add((piece[0], piece[2]))
    return found


@pytest.mark.parametrize("pages", ["huge", "small", "numpy"])
def test_device_to_host_into_fresh_memory_faulted_ahead_and_back(pages: str) -> None:
    backend = FakeBackend()
    ahead = Ahead(backend)
    pinned = PinnedStager(4 * MiB, 2, backend=backend, prefault=ahead)
    try:
        devices = _arrays(8, low=1)
        with host_memory.using(pages=pages, min_bytes=1):
            hosts = [host_memory.empty(d.shape, d.dtype) for d in devices]
        if pages == "numpy":
            for host in hosts:
                host[:] = 0  # numpy.empty gives no zeroed memory
        else:
            assert all(mapping_of(h) is not None for h in hosts if h.nbytes)
        segments = _segments(hosts, devices)
        pinned.copy(segments, to_device=False, device=0)
        _assert_equal(hosts, devices)
        # every piece's destination was faulted in once, untouched, while its DMA was in flight
        assert sorted(ahead.ranges) == sorted(_pieces(segments, pinned.chunk))
        assert ahead.late == []
        # and back: the fresh destinations are the sources of a host→device copy
        again = [np.zeros_like(d) for d in devices]
        pinned.copy(_segments(hosts, again), to_device=True, device=0)
        _assert_equal(again, devices)
        assert len(ahead.ranges) == PIECES  # nothing to fault in host→device
    finally:
        pinned.close()


class FakeDeviceArray:
    """What a :class:`Batch` reads of a CuPy array, over host memory (the fake device memory)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.shape, self.dtype, self.nbytes = array.shape, array.dtype, array.nbytes
        self.flags = array.flags
        self.device = SimpleNamespace(id=0)
        self.data = SimpleNamespace(ptr=array.ctypes.data)

    def get(self) -> np.ndarray:
        return self.array.copy()


def _device_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(9)
    return {
        "matrix": rng.standard_normal((700, 1500)),
        "fortran": np.asfortranarray(rng.integers(-(2**30), 2**30, (900, 1300), dtype=np.int32)),
        "column": rng.standard_normal(5 * MiB // 8 + 3),
        "small": np.arange(10.0),
        "empty": np.empty((0, 3)),
    }


def test_a_batch_brings_arrays_back_into_fresh_memory_equal_to_get() -> None:
    backend = FakeBackend()
    pinned = PinnedStager(4 * MiB, 2, backend=backend)
    sources = _device_arrays()
    try:
        with host_memory.using(min_bytes=4 * MiB):
            batch = Batch(to_device=False, through=pinned)
            outs = {name: batch.host_array(FakeDeviceArray(a)) for name, a in sources.items()}
            batch.run()
    finally:
        pinned.close()
    for name, source in sources.items():
        out = outs[name]
        np.testing.assert_array_equal(out, FakeDeviceArray(source).get())
        assert out.dtype == source.dtype and out.shape == source.shape
        assert out.flags.writeable and out.flags.c_contiguous == source.flags.c_contiguous
        assert out.flags.f_contiguous == source.flags.f_contiguous  # the order is kept
    fresh = host_memory.huge_pages_available()
    assert all((mapping_of(outs[n]) is not None) is fresh for n in ("matrix", "fortran", "column"))
    assert mapping_of(outs["small"]) is None
    frame = pd.DataFrame({"v": outs["column"]}, copy=False)
    assert np.shares_memory(frame["v"].to_numpy(), outs["column"])
    pd.testing.assert_series_equal(frame["v"], pd.Series(sources["column"], name="v"))


def test_a_failing_copy_device_to_host_stops_every_thread_and_frees_the_destinations() -> None:
    backend = FakeBackend(fail_only=3)
    pinned = PinnedStager(4 * MiB, 2, backend=backend)
    sources = _device_arrays()
    try:
        with host_memory.using(pages="small", min_bytes=4 * MiB):
            batch = Batch(to_device=False, through=pinned)
            outs = [batch.host_array(FakeDeviceArray(a)) for a in sources.values()]
            alive = [weakref.ref(m) for m in map(mapping_of, outs) if m is not None]
            assert len(alive) == 3
            with pytest.raises(RuntimeError, match="launch failure"):
                batch.run()
        assert backend.busy == 0 and backend.in_flight() == 0
        assert backend.copies <= 3 + pinned.threads
        del outs  # what the caller does with a failed conversion's results
        gc.collect()
        assert [m() for m in alive] == [None, None, None]  # unmapped
        # the stager is usable, and the batch too
        again = Batch(to_device=False, through=pinned)
        out = again.host_array(FakeDeviceArray(sources["matrix"]))
        again.run()
        np.testing.assert_array_equal(out, sources["matrix"])
    finally:
        pinned.close()


def test_a_failing_fault_in_stops_every_thread_and_leaves_the_stager_usable() -> None:
    backend = FakeBackend()
    ahead = Ahead(backend, fail_at=4)
    pinned = PinnedStager(4 * MiB, 2, backend=backend, prefault=ahead)
    try:
        devices = _arrays(10, low=1)
        hosts = [np.zeros_like(d) for d in devices]
        with pytest.raises(OSError, match="fault-in failed"):
            pinned.copy(_segments(hosts, devices), to_device=False, device=0)
        assert backend.busy == 0 and backend.in_flight() == 0
        assert backend.copies <= 4 + pinned.threads < PIECES
        ahead.fail_at = None
        pinned.copy(_segments(hosts, devices), to_device=False, device=0)
        _assert_equal(hosts, devices)
    finally:
        pinned.close()


def test_an_interrupted_copy_device_to_host_stops_before_it_returns() -> None:
    backend = FakeBackend(delay=0.01, interrupt_at=2)
    pinned = PinnedStager(4 * MiB, 2, backend=backend, prefault=Ahead(backend))

    def interrupt(signum: int, frame: Any) -> None:
        backend.handled.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        devices = _arrays(11, low=1)
        with host_memory.using(pages="huge", min_bytes=1):
            hosts = [host_memory.empty(d.shape, d.dtype) for d in devices]
        with pytest.raises(KeyboardInterrupt):
            pinned.copy(_segments(hosts, devices), to_device=False, device=0)
        assert backend.busy == 0 and backend.in_flight() == 0
        copies = backend.copies
        assert 0 < copies < PIECES
        written = [h.copy() for h in hosts]
        assert _threads_at_work() == []  # no thread goes on copying...
        assert backend.copies == copies
        _assert_equal(hosts, written)  # ...nor writing into the destinations
        backend.interrupt_at = None
        pinned.copy(_segments(hosts, devices), to_device=False, device=0)
        _assert_equal(hosts, devices)
        assert backend.copies == copies + PIECES  # the last transfer's copies, and no others
    finally:
        signal.signal(signal.SIGALRM, previous)
        pinned.close()


def test_a_busy_host_gets_fewer_copy_threads_and_the_same_bytes() -> None:
    class Counting(FakeBackend):
        """Each copy waits until ``expect`` threads have copied (a minute at most from a
        transfer's first copy): every thread that may copy gets a piece however busy this host
        is, and one more would show."""

        def __init__(self) -> None:
            super().__init__()
            self.threads: set[str] = set()
            self.expect = 2
            self.until: float | None = None  # the end of the wait, from the first copy
            self.arrived = threading.Condition()

        def copy_async(self, dst: int, src: int, size: int, to_device: bool, stream: Any) -> None:
            with self.arrived:
                if self.until is None:
                    self.until = time.monotonic() + 60
                self.threads.add(threading.current_thread().name)
                self.arrived.notify_all()
                self.arrived.wait_for(
                    lambda: len(self.threads) >= self.expect,
                    timeout=max(0.0, self.until - time.monotonic()),
                )
            super().copy_async(dst, src, size, to_device, stream)

    asked: list[int] = []

    def two_free(most: int, to_device: bool) -> int:
        asked.append(most)
        return 2

    backend = Counting()
    pinned = PinnedStager(12 * MiB, 6, backend=backend, threads_now=two_free)
    try:
        hosts = _arrays(11)
        devices = [np.zeros_like(h) for h in hosts]
        pinned.copy(_segments(hosts, devices), to_device=True, device=0)
        _assert_equal(devices, hosts)
        assert asked == [6] and len(backend.threads) == 2
        backend.threads.clear()
        backend.expect, backend.until = 6, None
        everyone = PinnedStager(12 * MiB, 6, backend=backend)  # no load given: all six
        everyone.copy(_segments(hosts, devices), to_device=True, device=0)
        assert len(backend.threads) == 6
        everyone.close()
    finally:
        pinned.close()


def test_a_ctrl_c_while_a_copy_thread_starts_stops_every_thread_before_it_is_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C (SIGINT, as Jupyter sends it) landing inside the pool's ``submit``, just as it
    started a copy thread: that thread's future was lost, and the interrupt was raised while
    the thread still copied. It is held until every thread is known, then raised once each has
    stopped."""
    backend = FakeBackend(delay=0.01)
    pinned = PinnedStager(4 * MiB, 2, backend=backend)
    real = pinned._pool.submit
    pressed: list[bool] = []

    def submit(*args: Any, **kwargs: Any) -> Any:
        future = real(*args, **kwargs)
        if not pressed:
            pressed.append(True)
            signal.raise_signal(signal.SIGINT)  # handled here, on the main thread
        return future

    monkeypatch.setattr(pinned._pool, "submit", submit)
    try:
        hosts = _arrays(7)
        devices = [np.zeros_like(h) for h in hosts]
        with pytest.raises(KeyboardInterrupt):
            pinned.copy(_segments(hosts, devices), to_device=True, device=0)
        assert pressed == [True]
        assert backend.busy == 0 and backend.in_flight() == 0  # every thread had stopped
        assert _threads_at_work() == []
    finally:
        pinned.close()
