"""The kernel's undertaker: what the kernel made that outlives it is removed once it has ended,
however it ended.

The closers (:mod:`.shutdown`) run on a shutdown request, on SIGTERM and on ``%unload_ext``,
but not when the process ends without running Python again: when JupyterHub stops a server
(its idle culler, an admin, the hub's own shutdown), the single-user server exits and each
kernel ends through ipykernel's parent poller (``os._exit``); a SIGKILL, an out-of-memory kill,
or a SIGTERM in the first second of a start do the same. What then stays (a registry entry, a
TLS folder with the cluster's private key, a room lease, shared-memory segments) used to wait
for the user's next login. So the first time the kernel makes such a file, it starts a small
process of its own session (out of reach of a signal to the kernel's process group) holding the
read end of a pipe whose write end only the kernel holds: the kernel's end, however it comes,
closes it, and the undertaker then removes what the kernel left, exactly as the next start would
(:mod:`..remains.leftovers`: only what names a process that no longer runs, only this user's),
in :mod:`..remains.burial`, a process started by module name (this folder imports nothing
above it). The kernel tells it, over the same pipe, which directories its files went to.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from ..machine import processes

log = logging.getLogger(__name__)


class Undertaker:
    """This process's undertaker: started once (again in a forked child), told where files go."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._pid = 0
        self._told: set[tuple[str, str]] = set()
        self.process: subprocess.Popen[bytes] | None = None

    def tell(self, kind: str, directory: Path | str) -> None:
        """The kernel's files of ``kind`` (``runtime``: registry entries and TLS folders;
        ``room``: leases) are in ``directory``; starts the undertaker where it has not been."""
        with self._lock:
            try:
                self._ensure()
                key = (kind, str(directory))
                if key in self._told or self._fd is None:
                    return
                os.write(self._fd, (json.dumps({kind: key[1]}) + "\n").encode())
                self._told.add(key)
            except OSError:
                log.warning("the kernel's undertaker cannot be started or told", exc_info=True)

    def _ensure(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            return

        self._told.clear()
        read, write = os.pipe()  # neither end is inherited by what the kernel starts
        package = str(Path(__file__).resolve().parent.parent.parent)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([package, os.environ.get("PYTHONPATH", "")]),
        }
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gpudask_jupyter.remains.burial",
                    str(os.getpid()),
                    str(processes.process_started(os.getpid()) or 0),
                ],
                stdin=read,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
                close_fds=True,
            )
        finally:
            os.close(read)
        self._fd, self._pid = write, os.getpid()


#: the one undertaker of this process
# per process: the undertaker watches this process, whatever runs in it
undertaker = Undertaker()


def tell(kind: str, directory: Path | str) -> None:
    """See :meth:`Undertaker.tell`."""
    undertaker.tell(kind, directory)
