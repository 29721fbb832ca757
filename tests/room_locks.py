"""Kernels' lease locks for the room's tests (:mod:`gpudask_jupyter.cluster.room.proof`): a lease
counts only while the process it names holds the lock beside it, as a kernel does.

* :func:`write_held`: a lease of this test process, its lock taken here first;
* :class:`StandIn`: a process standing in for another kernel (or a student's ``sleep``), which
  takes the lock of its own leases in whatever room folder it is told, as the folder's owner;
* :func:`pretend_held`: where the kernel is a process a test cannot make take a lock (the test
  process's parent, as a worker's kernel is), the machine's lock table shows it holding one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpudask_jupyter.cluster.room import proof
from gpudask_jupyter.cluster.room.leases import SUFFIX, Lease, RoomDir

_HELD: list[int] = []  # locks this test process holds for leases naming it, until it ends

STAND_IN = """
import os, sys, time
from pathlib import Path
from gpudask_jupyter.cluster.room import proof
uid = int(sys.argv[1])
print(os.getpid(), flush=True)
for line in sys.stdin:
    folder = Path(line.strip())
    fd, path = proof.hold(folder, str(os.getpid()))
    owner = os.stat(folder).st_uid
    if os.geteuid() == 0 and owner != 0:
        os.chown(path, owner, -1)
    if uid >= 0 and os.getuid() != uid:
        # the student's process from here on, its lock kept; it became the student only now,
        # as the room's folder may lie where only root can reach (a test's own temporary)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    print("held", flush=True)
time.sleep(3600)
"""


def write_held(room: RoomDir, lease: Lease) -> Path:
    """Write ``lease`` (which names this process) as its kernel does: its lock first."""
    assert lease.pid == os.getpid(), "a lease of this process"
    fd, _ = room.hold(lease)
    _HELD.append(fd)
    return room.write(lease)


class StandIn:
    """A live process, not this one, that holds the locks of leases naming it."""

    def __init__(self, *, uid: int | None = None, env: dict[str, str] | None = None) -> None:
        """``uid``: the account it runs as (root starts it: a student's process); ``env``: its
        environment (the notebook Jupyter gives a kernel, for instance)."""
        self.process = subprocess.Popen(
            [sys.executable, "-c", STAND_IN, str(-1 if uid is None else uid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd="/",
        )
        assert self.process.stdout is not None
        self.pid = int(self.process.stdout.readline())

    def hold(self, folder: Path) -> None:
        """Take the lock of this process's lease in ``folder`` (an account's room folder)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{folder}\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "held", "the stand-in did not lock"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


def pretend_held(monkeypatch: Any, lease_path: Path, pid: int) -> None:
    """The machine's lock table, with the lock of the lease at ``lease_path`` held by ``pid``
    (its lock file made, owner-only, where missing)."""
    lock = proof.lock_path(lease_path, SUFFIX)
    if not lock.exists():
        lock.touch(mode=proof.LOCK_MODE)
        os.chmod(lock, proof.LOCK_MODE)
    info = os.stat(lock)
    ident = (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)
    real = proof.lock_table

    def table(path: str = proof.LOCKS) -> dict[proof.LockId, int] | None:
        found = real(path)
        return {**(found or {}), ident: pid}

    monkeypatch.setattr(proof, "lock_table", table)
