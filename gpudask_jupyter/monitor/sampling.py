"""The monitor's thread and what one tick reads: this machine's GPUs, every cluster followed.

Sampling runs on its own daemon thread, never on the kernel's main thread or the server's event
loop: a long cell does not stop the panel, and the panel holds the GIL only for the few hundred
microseconds a tick takes. A tick asks every cluster at once and waits for the answers for at
most half an interval: a cluster that does not answer delays nobody, its call ends by its own
timeout and the cluster shows as unreachable. Between ticks the thread checks, every
CHECK_SECONDS, whether a cluster went away (stopped, its kernel gone), so that the views say so
within a couple of seconds even at a long interval. Buffers are bounded twice, by count and by
the history consumers asked for.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import threading
import time
from collections.abc import Callable

from ..schema.frame import HISTORY_RANGE, INTERVAL_RANGE, DeviceReading, Processes, Sample
from .local_gpus import LocalGpus
from .room_watch import RoomRead, RoomWatch
from .taskstream import SeqBuffer
from .trackers import CALL_TIMEOUT, ClusterTracker, Source, Trackers, local_hosts

log = logging.getLogger(__name__)

MAX_SAMPLES = math.ceil(HISTORY_RANGE[1] / INTERVAL_RANGE[0]) + 10
THREAD_NAME = "gpudask-monitor"
CHECK_SECONDS = 0.5
"""How often, between ticks, the sources are read again for clusters that went away."""


def answer_budget(interval: float) -> float:
    """How long a tick waits for the schedulers' answers: half an interval, so that one that
    answers late is read at the next tick and the rate holds."""
    return min(CALL_TIMEOUT, max(0.05, 0.5 * interval))


def _everything(key: str) -> bool:
    return True


class Sampler:
    """What has been read: GPU samples (this machine's and heartbeat GPUs), one tracker per
    cluster, GPU processes, the room where the host reads one. ``lock`` guards all of it; frames
    are assembled under it."""

    def __init__(
        self, sources: Callable[[], dict[str, Source]], room: RoomRead | None = None
    ) -> None:
        self.lock = threading.RLock()
        self.samples: SeqBuffer[Sample] = SeqBuffer(MAX_SAMPLES)
        self.trackers = Trackers(sources)
        self.local = LocalGpus()
        self.room = RoomWatch(room)
        self.processes: Processes | None = None
        self.ticks = 0
        self._hosts = local_hosts()
        self._tick_lock = threading.Lock()

    def check(self, history: float) -> bool:
        """Read the sources again; whether a cluster came, went or stopped."""
        with self._tick_lock:
            return self.trackers.reconcile(time.time(), history, self.lock)

    def tick(
        self,
        interval: float,
        history: float,
        processes: bool,
        wanted: Callable[[str], bool] = _everything,
        wait: float | None = None,
    ) -> bool:
        """One round: every cluster ``wanted`` (the others' connections are let go), then NVML.
        ``wait``: how long to wait for the schedulers' answers (default: :func:`answer_budget`).
        Safe to call from any thread (tests do); ticks never overlap. Returns whether a cluster
        came, went or stopped."""
        with self._tick_lock:
            now = time.time()
            changed = self.trackers.reconcile(now, history, self.lock)
            polled = self._ask(now, wanted, answer_budget(interval) if wait is None else wait)
            readings: dict[str, DeviceReading] = self.local.read(now, interval)
            for tracker in polled:
                readings.update(tracker.remote_readings)
            listing = None
            if processes or any(t.local_pids for t in polled):
                listing = self.local.process_list()
            for tracker in polled:
                tracker.held_memory(listing)
            sample = Sample(t=now, values={key: r.values() for key, r in readings.items()})
            self.room.tick()  # every few seconds only
            with self.lock:
                self.samples.append(now, sample)
                oldest = now - history
                self.samples.prune(oldest)
                for _, tracker in self.trackers.live():
                    tracker.tasks.prune(oldest)
                self.processes = (
                    self.local.processes(listing) if processes and listing is not None else None
                )
                self.ticks += 1
        return changed

    def _ask(self, now: float, wanted: Callable[[str], bool], wait: float) -> list[ClusterTracker]:
        """Ask every wanted cluster at once and take the answers that come within ``wait``."""
        polled = []
        for key, tracker in self.trackers.live():
            if wanted(key):
                polled.append(tracker)
            else:
                tracker.close()  # nobody looks at it: no idle connection kept
        futures = [f for t in polled if (f := t.begin(now)) is not None]
        if futures:
            concurrent.futures.wait(futures, timeout=wait)
        local_names = self.local.names()
        for tracker in polled:
            tracker.collect(time.time(), self._hosts, local_names, self.lock)
        return polled

    def close(self) -> None:
        with self.lock:
            self.trackers.close()


class SamplingThread:
    """Calls ``step`` every ``interval()`` seconds on a daemon thread, and ``check`` every
    CHECK_SECONDS between steps, until ``idle()`` says nobody wants samples (then ``on_idle``)
    or :meth:`stop` is called; :meth:`start` starts it again."""

    def __init__(
        self,
        step: Callable[[], None],
        interval: Callable[[], float],
        idle: Callable[[], bool],
        check: Callable[[], None] = lambda: None,
        on_idle: Callable[[], None] = lambda: None,
    ) -> None:
        self._step, self._interval, self._idle, self._check = step, interval, idle, check
        self._on_idle = on_idle
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()

    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop and wait for the thread (unless called from it: a callback unsubscribing)."""
        with self._lock:
            thread, self._thread = self._thread, None
        self._stop.set()
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    def wake(self) -> None:
        """Tick now instead of at the end of the current wait (the interval changed)."""
        self._wake.set()

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._idle():
                with self._lock:
                    if self._thread is threading.current_thread():
                        self._thread = None
                self._on_idle()
                return
            due = time.monotonic() + self._interval()
            self._step()
            self._wait_until(due)

    def _wait_until(self, due: float) -> None:
        """Wait for ``due`` (or a wake), checking the sources every CHECK_SECONDS meanwhile."""
        while not self._stop.is_set():
            left = due - time.monotonic()
            if left <= 0:
                return
            if self._wake.wait(min(left, CHECK_SECONDS)):
                self._wake.clear()
                return
            if due - time.monotonic() > CHECK_SECONDS / 2:
                self._check()
