"""The undertaker's own process (:mod:`..lifecycle.undertaker`): it reads the kernel's pipe until
the kernel has ended, then removes what the kernel left where the kernel said its files went. A
module of its own, imported by nobody in the kernel: it reaches the registry, the fork server,
the room and shared memory, which tell the undertaker where their files go.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

#: seconds the undertaker waits, once the pipe closed, for the kernel's process to be gone
GONE_WAIT = 60.0


def _bury(pid: int, started: int, lines: list[str]) -> None:
    """The kernel's pipe has closed: once its process is gone, remove what it left."""
    # lazy: the undertaker lives as long as its kernel; it imports what it tidies with once the
    # kernel's pipe has closed, so that each kernel's undertaker stays small while it waits
    from ..machine import processes

    deadline = time.monotonic() + GONE_WAIT
    while processes.same_process(pid, started):
        if time.monotonic() > deadline:
            log.warning("kernel %s closed its undertaker's pipe but still runs", pid)
            return
        time.sleep(0.02)
    # lazy: as above
    from .. import registry
    from ..cluster import fork_server
    from ..cluster.room.leases import RoomDir
    from ..convert.distribute import shared_memory

    told: dict[str, set[str]] = {"runtime": set(), "room": set()}
    for line in lines:
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            for kind, directory in json.loads(line).items():
                told[kind].add(str(directory))
    tidy: list[Callable[[], object]] = [
        functools.partial(registry.prune, Path(d)) for d in told["runtime"]
    ]
    tidy += [functools.partial(fork_server.prune_requests, Path(d)) for d in told["runtime"]]
    tidy += [RoomDir(Path(d)).prune for d in told["room"]]
    tidy.append(shared_memory.remove_stale)
    for step in tidy:
        try:
            step()
        except Exception:
            log.warning("removing what kernel %s left failed", pid, exc_info=True)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING, format="gpudask undertaker: %(message)s")
    pid, started = int(argv[0]), int(argv[1])
    lines = [line.decode(errors="replace") for line in sys.stdin.buffer]  # until the kernel ends
    _bury(pid, started, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
