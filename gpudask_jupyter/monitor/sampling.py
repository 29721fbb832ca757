"""Sampling: one tick reads every source into bounded buffers; a thread ticks while wanted.

The thread never runs on the kernel's main thread or the server's event loop: a long cell does
not stop the panel, and the panel holds the GIL only for the few hundred microseconds a tick
takes. Buffers are bounded twice, by count and by the history consumers asked for.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from ..frame import HISTORY_RANGE, INTERVAL_RANGE, DeviceReading, Processes, Sample
from ..taskstream import SeqBuffer
from .local_gpus import LocalGpus
from .trackers import Source, Trackers, local_hosts

log = logging.getLogger(__name__)

MAX_SAMPLES = math.ceil(HISTORY_RANGE[1] / INTERVAL_RANGE[0]) + 10
THREAD_NAME = "gpudask-monitor"


class Sampler:
    """What has been read: GPU samples (this machine's and heartbeat GPUs), one tracker per
    cluster, GPU processes. ``lock`` guards all of it; frames are assembled under it."""

    def __init__(self, sources: Callable[[], dict[str, Source]]) -> None:
        self.lock = threading.RLock()
        self.samples: SeqBuffer[Sample] = SeqBuffer(MAX_SAMPLES)
        self.trackers = Trackers(sources)
        self.local = LocalGpus()
        self.processes: Processes | None = None
        self._hosts = local_hosts()

    def tick(self, interval: float, history: float, processes: bool) -> None:
        """One round: every cluster, then NVML; safe to call from any thread (tests do)."""
        now = time.time()
        trackers = self.trackers.reconcile(self.lock)
        local_names = self.local.names()
        for tracker in trackers:
            tracker.poll(now, self._hosts, local_names, self.lock)
        readings: dict[str, DeviceReading] = self.local.read(now, interval)
        for tracker in trackers:
            readings.update(tracker.remote_readings)
        found = self.local.processes() if processes else None
        sample = Sample(t=now, values={key: r.values() for key, r in readings.items()})
        with self.lock:
            self.samples.append(now, sample)
            oldest = now - history
            self.samples.prune(oldest)
            for tracker in trackers:
                tracker.tasks.prune(oldest)
            self.processes = found

    def close(self) -> None:
        with self.lock:
            self.trackers.close()


class SamplingThread:
    """Calls ``step`` every ``interval()`` seconds on a daemon thread, until ``idle()`` says
    nobody wants samples or :meth:`stop` is called; :meth:`start` starts it again."""

    def __init__(
        self, step: Callable[[], None], interval: Callable[[], float], idle: Callable[[], bool]
    ) -> None:
        self._step, self._interval, self._idle = step, interval, idle
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
                return
            started = time.monotonic()
            self._step()
            self._wake.wait(max(0.0, self._interval() - (time.monotonic() - started)))
            self._wake.clear()
