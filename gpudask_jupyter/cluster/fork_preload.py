"""The first import of a kernel's fork server (:mod:`.fork_server`), and only there.

The server was launched by multiprocessing with the kernel's environment. Its kernel left it a
request: what a spawned worker's interpreter would have been launched with besides, the kernel's
module path, and what to import. Some variables are read only as an interpreter starts (the hash
seed, the allocator's), so where its environment lacks any of them the server starts again in
place (``execve``: the same process and command line, the environment asked for), before
anything else is imported. It then leaves the kernel's process group, so that a Ctrl-C meant for
the cell reaches neither it nor a worker it forks (each worker takes a group of its own as it
starts: :mod:`.worker_setup`), and makes the imports; one that fails is left to the worker,
where its own import reports it.
Without a request (a server this package did not launch) nothing is done.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys
from typing import Any

from .fork_server import Launch, read_request

log = logging.getLogger(__name__)

#: what the server was launched with (:class:`.fork_server.Launch`): a probe forked from it
#: reports it
# per process: this fork server's own launch, in the fork server's process
LAUNCHED: Any = None


def _serve() -> None:
    global LAUNCHED

    request = read_request(os.getppid())
    if request is None:
        return
    # until it has left the kernel's process group, a Ctrl-C meant for the cell would end the
    # server (ignoring a signal lasts through execve, and Python keeps it so as it starts)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    launch, modules = request
    if dict(os.environ) != launch.environ:
        try:
            os.execve(sys.executable, sys.orig_argv, launch.environ)
        except OSError:  # its probe reports the environment it has: the kernel spawns instead
            log.warning("the fork server could not take its environment", exc_info=True)
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a spawned worker has it
    sys.path[:] = launch.path  # as spawn gives its child the kernel's, before any import
    LAUNCHED = Launch(dict(os.environ), tuple(sys.path))
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            log.debug("importing %s ahead failed", name, exc_info=True)


_serve()
