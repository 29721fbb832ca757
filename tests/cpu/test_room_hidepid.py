"""The room where ``/proc`` hides other users' processes (``hidepid=invisible``, as shared servers
mount it): a reader that cannot see another account's kernel still counts its lease while the
kernel holds its lock, and does not count the lease of a kernel that ended whose pid now belongs
to another account's process (the case that counted as alive for ever when liveness asked
``kill``). A real ``/proc`` of this machine's PID namespace is mounted with ``hidepid`` in a mount
namespace of the reader's own; the reader runs with no capability and outside group 0 (which
``hidepid`` exempts by default), so that the mount hides from it what it hides from a student."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from room_locks import StandIn

from gpudask_jupyter.cluster.room.leases import Lease, RoomDir, Share
from gpudask_jupyter.machine import processes

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("setpriv")),
        reason="mounting /proc with hidepid needs root, unshare and setpriv (CI runs as root)",
    ),
]

ALICE, BOB, CAROL = 4_244_001, 4_244_002, 4_244_003
GiB = 2**30
GPU = "GPU-00000000-0000-0000-0000-000000000000"

READER = """
import json, os, sys
from pathlib import Path
from gpudask_jupyter.cluster.room.leases import RoomDir
alice = int(sys.argv[2])
room = RoomDir(Path(sys.argv[1]))
print(json.dumps({
    "sees_alice": os.path.exists(f"/proc/{alice}"),
    "counted": sorted(lease.uid for lease in room.leases()),
}))
"""


@pytest.fixture
def room() -> Iterator[Path]:
    """A room directory as the instructor makes it, where every account can reach it."""
    base = Path(tempfile.mkdtemp(prefix="gpudask-hidepid-", dir="/tmp"))
    base.chmod(0o755)
    path = base / "room"
    assert RoomDir(path).prepare()
    try:
        yield path
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _lease(room: Path, uid: int, user: str, pid: int) -> Path:
    """``uid``'s lease naming ``pid``, in that account's folder, as its kernel writes it."""
    directory = RoomDir(room, uid=uid)
    folder = directory.folder()
    os.chown(folder, uid, -1)
    now = time.time()
    lease = Lease(
        uid, user, pid, processes.process_started(pid) or 0, f"kernel-of-{user}",
        [Share(GPU, 0, 2 * GiB)], now - 60, now,
    )  # fmt: skip
    written = directory.write(lease)
    os.chown(written, uid, -1)
    return folder


def _read_under_hidepid(room: Path, alice: int) -> dict[str, object]:
    """The room as a capability-less reader sees it through a ``/proc`` mounted ``hidepid``."""
    command = (
        "mount -t proc -o hidepid=invisible proc /proc && exec setpriv --regid=65534 "
        "--clear-groups --inh-caps=-all --bounding-set=-all --ambient-caps=-all --no-new-privs "
        f'"{sys.executable}" -c "$0" "$1" "$2"'
    )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", command, READER,
         str(room), str(alice)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_a_hidden_live_kernel_counts_and_a_dead_kernels_reused_pid_does_not(room: Path) -> None:
    alice = StandIn(uid=ALICE)  # alice's kernel: live, holding its lease's lock
    carol = StandIn(uid=CAROL)  # a process of carol's, on the pid bob's ended kernel had
    try:
        alice.hold(_lease(room, ALICE, "alice", alice.pid))
        _lease(room, BOB, "bob", carol.pid)  # bob's kernel ended: nobody holds its lock
        seen = _read_under_hidepid(room, alice.pid)
        assert seen["sees_alice"] is False, seen  # hidepid hides alice's kernel from the reader
        assert seen["counted"] == [ALICE], seen
        # the same room read in full view: the same answer
        assert sorted(lease.uid for lease in RoomDir(room).leases()) == [ALICE]
        alice.stop()
        alice.process.wait(10)
        assert _read_under_hidepid(room, alice.pid)["counted"] == []  # its lock went with it
    finally:
        alice.stop()
        carol.stop()
