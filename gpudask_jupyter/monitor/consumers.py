"""Who wants frames, and so how often the monitor samples and how much it keeps.

Two kinds of consumer: *subscribers* (panels in the kernel) are called back when a frame is due;
*polling requests* (sidebar tabs) ask through the server and count for 30 s after their last
request. The monitor samples at the shortest interval any consumer asked for and keeps the
longest history any subscriber asked for, both clamped to the options' ranges. With no consumer
left it has nothing to do, and its thread stops.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..schema.frame import clamp_history, clamp_interval

log = logging.getLogger(__name__)

REQUEST_SECONDS = 30.0
"""How long a polling consumer counts after its last request."""


@dataclass
class Subscriber:
    callback: Callable[[], None]
    interval: float
    history: float
    processes: bool = False
    last: float = field(default=0.0)  # time.monotonic() of the last call


class Consumers:
    def __init__(self, default_interval: float, default_history: float) -> None:
        self.default_interval = clamp_interval(default_interval)
        self.default_history = clamp_history(default_history)
        self._lock = threading.Lock()
        self._subscribers: dict[int, Subscriber] = {}
        self._tokens = itertools.count(1)
        self._requests: dict[str, tuple[float, float]] = {}  # consumer -> (interval, when)
        self._asked_for: dict[str, str | None] = {}  # consumer -> the cluster it polls

    def subscribe(
        self,
        callback: Callable[[], None],
        interval: float | None = None,
        history: float | None = None,
        processes: bool = False,
    ) -> int:
        """Call ``callback`` when a frame is due; the token identifies the subscription."""
        subscriber = Subscriber(
            callback,
            clamp_interval(interval or self.default_interval),
            clamp_history(history or self.default_history),
            processes,
        )
        token = next(self._tokens)
        with self._lock:
            self._subscribers[token] = subscriber
        return token

    def update(self, token: int, **changes: Any) -> None:
        """Change a subscription's ``interval``, ``history`` or ``processes``."""
        with self._lock:
            sub = self._subscribers.get(token)
            if sub is None:
                return
            if "interval" in changes:
                sub.interval = clamp_interval(changes["interval"])
            if "history" in changes:
                sub.history = clamp_history(changes["history"])
            if "processes" in changes:
                sub.processes = bool(changes["processes"])

    def unsubscribe(self, token: int) -> None:
        with self._lock:
            self._subscribers.pop(token, None)

    def request(self, consumer: str, interval: float, key: str | None = None) -> None:
        """A polling consumer asks for samples at ``interval``, of the cluster ``key`` (None:
        of every cluster); kept for REQUEST_SECONDS."""
        with self._lock:
            self._requests[consumer] = (clamp_interval(interval), time.monotonic())
            self._asked_for[consumer] = key

    def wanted(self, key: str) -> bool:
        """Whether anybody looks at cluster ``key``: a subscriber (a panel follows its kernel's
        cluster, whatever it is) or a polling consumer that asked for it. Without any consumer
        (a one-off tick) every cluster is."""
        requests = self.requests
        with self._lock:
            if self._subscribers or not requests:
                return True
            return any(self._asked_for.get(c, key) in {key, None} for c in requests)

    @property
    def requests(self) -> dict[str, tuple[float, float]]:
        """The polling consumers that still count: name -> (interval, time.monotonic())."""
        now = time.monotonic()
        with self._lock:
            self._requests = {
                k: v for k, v in self._requests.items() if now - v[1] < REQUEST_SECONDS
            }
            self._asked_for = {k: v for k, v in self._asked_for.items() if k in self._requests}
            return dict(self._requests)

    @property
    def interval(self) -> float:
        """Seconds between samples: the shortest any consumer asked for."""
        polled = [interval for interval, _ in self.requests.values()]
        with self._lock:
            asked = [s.interval for s in self._subscribers.values()] + polled
        return min(asked) if asked else self.default_interval

    @property
    def history(self) -> float:
        """Seconds of history to keep: the longest any subscriber asked for."""
        with self._lock:
            asked = [s.history for s in self._subscribers.values()]
        return max(asked) if asked else self.default_history

    @property
    def wants_processes(self) -> bool:
        with self._lock:
            return any(s.processes for s in self._subscribers.values())

    def idle(self) -> bool:
        """Nobody subscribed and no request in the last REQUEST_SECONDS: sampling is wasted."""
        requests = self.requests
        with self._lock:
            return not self._subscribers and not requests

    def notify(self, everyone: bool = False) -> None:
        """Call back every subscriber whose interval has passed since its last call (or
        ``everyone``: a cluster came or went)."""
        now = time.monotonic()
        with self._lock:
            due = [
                s
                for s in self._subscribers.values()
                if everyone or now - s.last >= s.interval * 0.95
            ]
            for sub in due:
                sub.last = now
        for sub in due:
            try:
                sub.callback()
            except Exception:  # a broken consumer must not stop the others
                log.debug("a monitor subscriber's callback failed", exc_info=True)
