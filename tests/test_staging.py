"""The pinned pipeline's logic on the CPU, against a backend whose copies really are asynchronous.

The fake backend's "DMA" runs only when an event or stream behind it is waited for, the way a
real copy may still be in flight: a buffer refilled before its DMA ran, or drained before its DMA
landed, gives wrong bytes here too. Device memory is host memory.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gpudask_jupyter.convert.staging import MiB, PinnedStager, Segment, _Pieces, layout


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
    def __init__(self, fail_only: int | None = None, delay: float = 0) -> None:
        self.pinned: dict[int, Any] = {}
        self.streams: list[FakeStream] = []
        self.copies = 0
        self.fail_only = fail_only  # only this copy (1-based) fails
        self.delay = delay
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
        if self.delay:
            time.sleep(self.delay)
        stream.queue.append(lambda: ctypes.memmove(dst, src, size))
        with self._lock:
            self.busy -= 1


SIZES = [5 * MiB + 17, 1, 3 * MiB, 0, 2 * MiB - 5, 7 * MiB + 4093]


def _arrays(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, n, dtype=np.uint8) for n in SIZES]


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


def test_layout_fits_the_budget() -> None:
    for capacity in (4 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB):
        for threads in (1, 2, 8, 14, 16):
            depth, chunk = layout(capacity, threads)
            assert 2 <= depth <= 8
            assert chunk % (64 * 1024) == 0 and chunk >= MiB
            if capacity >= 2 * threads * MiB:
                assert depth * chunk * threads <= capacity
    assert layout(256 * MiB, 8) == (8, 4 * MiB)


def test_pieces_cover_every_byte_once_and_stop_at_segment_ends() -> None:
    sizes = [25, 0, 7, 8]
    segments = [Segment(10_000 * i, 99_000_000 + 10_000 * i, n) for i, n in enumerate(sizes)]
    pieces = _Pieces(segments, chunk=8)
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
    backend = FakeBackend(delay=0.01)
    pinned = PinnedStager(4 * MiB, 2, backend=backend)

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        hosts = _arrays(7)
        devices = [np.zeros_like(h) for h in hosts]
        signal.setitimer(signal.ITIMER_REAL, 0.03)
        with pytest.raises(KeyboardInterrupt):
            pinned.copy(_segments(hosts, devices), to_device=True, device=0)
        assert backend.busy == 0 and backend.in_flight() == 0  # every thread had stopped
        copies = backend.copies
        assert 0 < copies < PIECES  # it was cut short...
        time.sleep(0.1)
        assert backend.copies == copies  # ...and no thread goes on once the error is raised
        assert backend.in_flight() == 0
        pinned.copy(_segments(hosts, devices), to_device=True, device=0)  # the lock is free
        _assert_equal(devices, hosts)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        pinned.close()
