"""What a kernel of this user that was killed left behind, removed when the next one loads the
extension, and by the Jupyter server extension as it runs (:mod:`..server.tidy`).

SIGKILL runs no handler, and SIGTERM's closers may be cut short: a registry entry, a TLS folder
(the cluster's private key), a start's request to its fork server, shared-memory segments, a
lease of the room can stay. Each is named
by the process that made it (pid and start time), so anything whose process no longer runs is
removed here, on ``%load_ext``, and again before every start and every transfer that would make
new ones. Nothing another user owns is touched.
"""

from __future__ import annotations

import logging

from .. import registry
from ..cluster import fork_server
from ..cluster.room import holder
from ..convert.distribute import shared_memory

log = logging.getLogger(__name__)


def remove() -> None:
    """Remove what killed kernels of this user left; a failure only costs the tidy-up."""
    tidies = (registry.prune, fork_server.prune_requests, shared_memory.remove_stale)
    for tidy in (*tidies, lambda: holder.this_process.room_dir().prune()):
        try:
            tidy()
        except Exception:
            log.debug("%s failed", tidy.__qualname__, exc_info=True)
