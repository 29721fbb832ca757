"""The Monitor: samples GPUs and clusters on its own thread and hands out Frames.

One Monitor per process: in a kernel it serves every panel of that kernel, in the Jupyter
server every browser tab. It knows its sources and its consumers only through what they
register: the *sources* function given at construction (which clusters to follow), and the
subscriptions and polling requests of its consumers. Its parts, each in its own module:

- :mod:`.consumers` — who wants frames, hence the interval and history;
- :mod:`.sampling` — the thread and one tick: :mod:`.local_gpus` (NVML) and :mod:`.trackers`
  (one per cluster: task stream, progress, workers (:mod:`.workers`) and their heartbeat GPUs,
  asked through a :mod:`.callers` call that never makes one cluster wait for another);
- :mod:`.room_watch` — the room of a shared GPU server, read every few seconds, where the host
  reads one;
- :mod:`.assembly` — a consumer's frame from the buffers, after its :mod:`.cursor`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .. import config
from ..schema.frame import Frame, clamp_history
from .assembly import assemble
from .consumers import Consumers
from .cursor import Cursor
from .room_watch import RoomRead
from .sampling import Sampler, SamplingThread
from .trackers import Source

log = logging.getLogger(__name__)


class Monitor:
    def __init__(
        self, sources: Callable[[], dict[str, Source]], room: RoomRead | None = None
    ) -> None:
        """``sources``: the clusters to follow, by frame key; ``room``: how to read the room of
        a shared GPU server for each frame key's viewer (:mod:`.room_watch`), if this host
        shows it."""
        self._consumers = Consumers(config.get("refresh-interval"), config.get("history"))
        self._sampler = Sampler(sources, room)
        self._thread = SamplingThread(
            self._step,
            lambda: self.interval,
            self._consumers.idle,
            check=self._check,
            on_idle=self._sampler.close,  # nobody asks: no connection is kept
        )
        self._error = ""

    # -- consumers ----------------------------------------------------------------------------

    def subscribe(
        self,
        callback: Callable[[], None],
        interval: float | None = None,
        history: float | None = None,
        processes: bool = False,
    ) -> int:
        """Call ``callback`` on the monitor's thread whenever a frame is due."""
        token = self._consumers.subscribe(callback, interval, history, processes)
        self.start()
        self._thread.wake()
        return token

    def update(self, token: int, **changes: Any) -> None:
        self._consumers.update(token, **changes)
        self._thread.wake()

    def unsubscribe(self, token: int) -> None:
        self._consumers.unsubscribe(token)
        if self._consumers.idle():
            self.stop()

    def request(self, consumer: str, interval: float, key: str | None = None) -> None:
        """A polling consumer (a sidebar) asks for samples at ``interval`` of the cluster
        ``key`` (None: of every cluster); clusters nobody asks for are not sampled."""
        self._consumers.request(consumer, interval, key)
        self.start()

    @property
    def requests(self) -> dict[str, tuple[float, float]]:
        return self._consumers.requests

    @property
    def interval(self) -> float:
        return self._consumers.interval

    @property
    def history(self) -> float:
        return self._consumers.history

    # -- sampling -----------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling and disconnect from the clusters (a new consumer starts it again)."""
        self._thread.stop()
        self._sampler.close()

    @property
    def running(self) -> bool:
        return self._thread.running

    def tick(self, wait: float | None = None) -> bool:
        """One round of sampling; safe to call from any thread (tests do). ``wait``: how long
        to wait for the schedulers' answers (default: half the interval; a one-off snapshot
        waits for the first answer). Returns whether a cluster came, went or stopped."""
        return self._sampler.tick(
            self.interval,
            self.history,
            self._consumers.wants_processes,
            self._consumers.wanted,
            wait,
        )

    def last_look(self, wait: float) -> None:
        """One more round now, for the consumers there are (none: nothing), waiting ``wait``
        seconds at most for the answers: what a cluster about to stop did last, so that a view
        keeps its final counts, not those of the round before."""
        if self._consumers.idle():
            return
        self.tick(wait)
        self._consumers.notify(everyone=True)

    def answers(self, key: str) -> int:
        """How many times cluster ``key``'s scheduler answered (0 for no such cluster): what a
        cluster's sampling rate is measured by."""
        tracker = self._sampler.trackers.get(key)
        return tracker.answers if tracker is not None else 0

    @property
    def ticks(self) -> int:
        return self._sampler.ticks

    def _check(self) -> None:
        try:
            changed = self._sampler.check(self.history)
        except Exception:
            log.debug("reading the monitor's sources failed", exc_info=True)
            return
        if changed:
            self._consumers.notify(everyone=True)

    def _step(self) -> None:
        try:
            changed = self.tick()
        except Exception as err:  # keep sampling; the next frames carry the message
            error = f"monitor error: {type(err).__name__}: {err}"
            level = logging.DEBUG if error == self._error else logging.WARNING
            log.log(level, "a monitor tick failed", exc_info=True)
            self._error = error
            return
        self._error = ""
        self._consumers.notify(everyone=changed)

    # -- frames -------------------------------------------------------------------------------

    def frame(
        self, key: str, since: Cursor | None = None, history: float | None = None
    ) -> tuple[Frame, Cursor]:
        """The frame for cluster ``key`` after ``since`` (None: a snapshot) and the next cursor."""
        history = clamp_history(history or self.history)
        return assemble(self._sampler, key, since, history, self.interval, self._error)
