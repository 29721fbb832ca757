"""A dask-gateway worker bound to one GPU: ``worker_cmd`` of a gateway whose workers run on GPU
machines through its local (or jobqueue) backend.

dask-gateway knows nothing of GPUs: its local backend starts each worker as a plain process, and
``dask cuda worker`` as its worker command starts one process per GPU it sees, which the gateway
then counts as one worker. So each worker first takes one GPU of its machine that no other
worker holds (an exclusive ``flock`` on that GPU's file in a lock directory, held for the worker's
whole life: the descriptor passes to the worker through ``exec``, and the lock goes with its
process, however it ends), then becomes ``dask cuda worker`` with ``CUDA_VISIBLE_DEVICES`` that
GPU alone, with the gateway's own arguments (scheduler address, name, threads, memory limit)
and its TLS settings (from the environment the gateway gives it). Where every GPU is held, it
exits saying so, and the gateway reports the worker failed.

    c.ClusterConfig.worker_cmd = ["/path/to/python", "-m", "gpudask_jupyter.cluster.gateway_worker"]
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

from ..machine import gpus
from .room import holder

#: where the GPUs' lock files are (the administrator makes it: install -d -m 1777 -o root DIR)
LOCKS = "GPUDASK_GATEWAY_GPU_LOCKS"
DEFAULT_LOCKS = "/tmp/gpudask-gateway-gpus"
#: the command run once the GPU is held, instead of ``dask cuda worker`` (whitespace-separated:
#: a site's wrapper, a worker of another environment)
WORKER = "GPUDASK_GATEWAY_WORKER_COMMAND"


def _gpus() -> list[str]:
    """This machine's GPUs (MIG instances count as GPUs), by UUID, as this process may see
    them (``CUDA_VISIBLE_DEVICES`` set for the gateway is kept)."""
    found = holder.machine_gpus()
    return [d.uuid for d in gpus.select(None, found, gpus.kernel_restriction())]


def _open_lock(path: Path) -> int:
    """A descriptor of ``path`` to lock, kept open across ``exec``: an existing file is opened
    without ``O_CREAT`` (which ``fs.protected_regular`` refuses on another user's file)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            fd = os.open(path, flags)
    os.set_inheritable(fd, True)
    return fd


def take_gpu(directory: Path) -> tuple[str, int] | None:
    """A GPU no other worker holds, and the locked descriptor that holds it (None: all held)."""
    for uuid in _gpus():
        fd = _open_lock(directory / f"{uuid}.lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return uuid, fd
    return None


def main(argv: list[str]) -> int:
    directory = Path(os.environ.get(LOCKS, DEFAULT_LOCKS))
    if not directory.is_dir():
        print(
            f"gpudask gateway worker: {directory} does not exist; the administrator makes it "
            f"once: install -d -m 1777 -o root {directory} (or sets {LOCKS})",
            file=sys.stderr,
        )
        return 2
    taken = take_gpu(directory)
    if taken is None:
        print(
            "gpudask gateway worker: every GPU of this machine is held by another worker",
            file=sys.stderr,
        )
        return 3
    uuid, _ = taken
    os.environ["CUDA_VISIBLE_DEVICES"] = uuid
    command = os.environ.get(WORKER, "").split() or [sys.executable, "-m", "dask", "cuda", "worker"]
    os.execv(command[0], [*command, *argv])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
