"""Helpers shared by the tests: process accounting, free ports, real Dask processes, TLS files,
real kernels and what their cells say, and waits for an event (never for a guessed number of
seconds)."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import queue
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psutil
from stand_ins import room_gpus

from gpudask_jupyter import compat

T = TypeVar("T")


#: seconds from Ctrl-C to the interrupted cell's reply. The promise is two seconds (README); an
#: answer takes a few tenths of a second at most here. The bound leaves room for a loaded 2-core
#: machine (a full run beside a browser test), and still fails a cell that answers only once the
#: command it interrupted is over: a command that hangs, or one that waits out its --timeout
ANSWERED_WITHIN = 5.0


#: what a fork server's command line holds (its children, Dask's workers, share it)
FORK_SERVER = compat.FORK_SERVER_COMMAND


def spawned_workers(root: int | None = None) -> list[psutil.Process]:
    """Descendant processes started by multiprocessing's spawn (they carry its marker on their
    command line), or forked from a fork server (children of one): Dask's worker processes.
    The fork server itself is none of them."""
    parent = psutil.Process(root or os.getpid())
    found = []
    for proc in parent.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            line = " ".join(proc.cmdline())
            forked = FORK_SERVER in line and FORK_SERVER in " ".join(proc.parent().cmdline())
            if forked or "--multiprocessing-fork" in line:
                found.append(proc)
    return found


def wait_gone(procs: list[psutil.Process], timeout: float = 30) -> list[psutil.Process]:
    """The processes of ``procs`` still running after ``timeout`` seconds."""
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def gone_pid() -> int:
    """The pid of a process that has ended (a child that ran and was reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DaskProcesses:
    """A ``dask scheduler`` and ``workers`` (two by default) ``dask worker`` processes on
    loopback: a real small cluster."""

    def __init__(self, workdir: Path, tls: dict[str, str] | None = None, workers: int = 2) -> None:
        self.scheduler_file = workdir / "scheduler.json"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs = workdir
        tls_args: list[str] = []
        if tls:
            tls_args = [
                "--tls-ca-file",
                tls["ca"],
                "--tls-cert",
                tls["cert"],
                "--tls-key",
                tls["key"],
            ]
        port = free_port()
        protocol = "tls" if tls else "tcp"
        self._spawn(
            "scheduler",
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-dashboard",
                "--scheduler-file",
                str(self.scheduler_file),
                "--protocol",
                protocol,
                *tls_args,
            ],
        )
        deadline = time.monotonic() + 60
        while not self.scheduler_file.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(
                    "dask scheduler did not write its file: " + self.log("scheduler")
                )
            time.sleep(0.1)
        self.address = json.loads(self.scheduler_file.read_text())["address"]
        for i in range(workers):
            self._spawn(
                f"worker{i}",
                [
                    "worker",
                    self.address,
                    "--nthreads",
                    "1",
                    "--nworkers",
                    "1",
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                    "--name",
                    f"remote-{i}",
                    "--memory-limit",
                    "1GB",
                    *tls_args,
                ],
            )

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - kept open for the process
        self.procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "dask", *args], stdout=log, stderr=subprocess.STDOUT
            )
        )

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def wait_for_workers(self, n: int = 2, timeout: float = 60, security: object = None) -> None:
        from distributed import Client

        with Client(self.address, security=security, timeout=30) as client:
            client.wait_for_workers(n, timeout=timeout)

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


#: the room's stand-in GPUs: their folder, as the room-reader option names them, and the
#: environment a process needs to read them
STAND_INS = room_gpus.FOLDER
ROOM_READER = room_gpus.READER
stand_in_room = room_gpus.environment


def use_stand_in_room(monkeypatch: Any, gpus: str, memory: Path | str | None = None) -> None:
    """The room's stand-in GPUs (:func:`stand_in_room`) for this process and those it starts."""
    import dask.config

    for name, value in stand_in_room(gpus, memory).items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(STAND_INS))
    # dask read the environment's options when it was imported
    monkeypatch.setitem(dask.config.config.setdefault("gpudask", {}), "room-reader", ROOM_READER)


def write_tls_files(folder: Path) -> dict[str, str]:
    """A self-signed key and certificate as files, as an administrator would hand them out."""
    from distributed import Security

    sec = Security.temporary()
    files = {"ca": sec.tls_ca_file, "cert": sec.tls_client_cert, "key": sec.tls_client_key}
    out = {}
    for role, text in files.items():
        path = folder / f"{role}.pem"
        path.write_text(text)
        path.chmod(0o600)
        out[role] = str(path)
    return out


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    what: str | Callable[[], str],
    step: float = 0.05,
) -> T:
    """Poll ``predicate`` every ``step`` seconds until it gives something true, and return that;
    after ``timeout`` seconds fail, saying what did not happen (``what``: words, or a function
    that gives them at that moment)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"waited {timeout:g} s for {said}")
        time.sleep(step)


def read_iopub(
    kc: Any,
    until: Callable[[dict[str, Any]], bool],
    timeout: float,
    what: str | Callable[[], str] | None = None,
) -> list[dict[str, Any]]:
    """The kernel's iopub messages, read until ``until(message)`` holds for one (the last of
    the list) or ``timeout`` seconds have passed. With ``what``, the latter fails, saying what
    did not come; without, what was read is returned all the same."""
    deadline = time.monotonic() + timeout
    read: list[dict[str, Any]] = []
    while (left := deadline - time.monotonic()) > 0:
        try:
            msg = kc.get_iopub_msg(timeout=left)
        except queue.Empty:
            break
        read.append(msg)
        if until(msg):
            return read
    if what is not None:
        said = what() if callable(what) else what
        kinds = [m["msg_type"] for m in read[-10:]]
        raise AssertionError(
            f"waited {timeout:g} s for {said}; {len(read)} iopub messages read, the last {kinds}"
        )
    return read


def printed(cell: str, text: str) -> Callable[[dict[str, Any]], bool]:
    """For :func:`read_iopub`: whether a message is a stream of the request ``cell`` (its
    msg_id) that holds ``text``."""

    def says(msg: dict[str, Any]) -> bool:
        mine = msg["parent_header"].get("msg_id") == cell and msg["msg_type"] == "stream"
        return mine and text in msg["content"]["text"]

    return says


def run_cell(kc: Any, code: str, timeout: float = 180, **options: Any) -> dict[str, Any]:
    """Execute ``code`` in a kernel and wait, at most ``timeout`` seconds in all, for the
    kernel's idle after it and for its own reply: the reply's content, with ``output``: the
    cell's streams as printed, and each error (name, value, traceback) and displayed text (a
    table's ``text/plain``) on lines of their own. ``options`` go with the request
    (``silent``, ``user_expressions``)."""
    msg_id = kc.execute(code, **options)
    said: list[str] = []

    def line(text: str) -> None:
        if said and not said[-1].endswith("\n"):
            said.append("\n")
        said.append(text + "\n")

    def take(msg: dict[str, Any]) -> bool:
        if msg["parent_header"].get("msg_id") != msg_id:
            return False
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            said.append(content["text"])
        elif kind == "error":
            line(f"{content['ename']}: {content['evalue']}")
            line("\n".join(content["traceback"]))
        elif kind in {"display_data", "execute_result"}:
            line(content["data"].get("text/plain", ""))
        return kind == "status" and content["execution_state"] == "idle"

    def unfinished() -> str:
        return f"the cell {code[:80]!r} to finish; it said {''.join(said)[-2000:]!r}"

    deadline = time.monotonic() + timeout
    read_iopub(kc, take, timeout, unfinished)
    while True:  # a reply left from another request (kernel_info) is not this cell's
        try:
            answer = kc.get_shell_msg(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(
                f"no reply within {timeout:g} s to the cell {code[:80]!r}"
            ) from None
        if answer["parent_header"].get("msg_id") == msg_id:
            break
    reply = dict(answer["content"])
    if reply.get("status") == "error":
        line(f"reply: {reply.get('ename')}: {reply.get('evalue')}")
    reply["output"] = "".join(said)
    return reply


def kernel_value(kc: Any, expression: str, timeout: float = 60) -> str:
    """``expression`` evaluated in the kernel's namespace (its ``text/plain``), asked with a
    silent request: no cell runs, so IPython's ``pre_run_cell`` and ``post_run_cell`` do not
    fire and nothing that follows the cells (the imports made ahead, a displayed panel's
    frames) takes the asking for one."""
    reply = run_cell(kc, "", timeout, silent=True, user_expressions={"value": expression})
    assert reply["status"] == "ok", reply
    value = reply["user_expressions"]["value"]
    assert value["status"] == "ok", value
    return str(value["data"]["text/plain"])


@contextlib.contextmanager
def kernel_factory(runtime_dir: Path) -> Iterator[Any]:
    """A function that starts a real kernel (as jupyter_server does: connection file
    ``kernel-<id>.json`` in ``runtime_dir``) with this process's environment, and returns its
    manager and client; every kernel it started is shut down after."""
    from jupyter_client.manager import KernelManager

    started: list[tuple[Any, Any]] = []

    def start(forward_fds: bool = False) -> tuple[Any, Any]:
        """``forward_fds``: without pytest's variable in its environment, so that the kernel
        shows what its child processes write to stdout and stderr in the cells, as in a
        notebook (ipykernel does not watch those under pytest)."""
        kernel_id = str(uuid.uuid4())
        km = KernelManager(
            kernel_name="python3",
            kernel_id=kernel_id,
            connection_file=str(runtime_dir / f"kernel-{kernel_id}.json"),
        )
        km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        if forward_fds:
            km.start_kernel(env={k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"})
        else:
            km.start_kernel()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        started.append((km, kc))
        return km, kc

    try:
        yield start
    finally:
        for km, kc in started:
            kc.stop_channels()
            if km.is_alive():
                km.shutdown_kernel(now=True)


@contextlib.contextmanager
def cpu_cluster_client(**settings: Any) -> Iterator[Any]:
    """A client of a real two-worker CPU cluster on loopback (worker processes, one thread
    each); ``settings``: dask config set around it."""
    import dask
    from distributed import Client, LocalCluster

    with (
        dask.config.set(settings),
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def held_keys(client: Any) -> int:
    """Keys the workers hold, once released futures have reached the scheduler."""
    gc.collect()
    deadline = time.monotonic() + 10
    while True:
        count = sum(len(keys) for keys in client.has_what().values())
        if count == 0 or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def undertaker_of(kernel_pid: int) -> psutil.Process:
    """The process a kernel starts with its first file, which removes its files once it has
    ended (lifecycle/undertaker.py); a test that plays every process of the user killed at once
    kills it too."""
    (found,) = [
        p
        for p in psutil.Process(kernel_pid).children()
        if "gpudask_jupyter.remains.burial" in " ".join(p.cmdline())
    ]
    return found


def end_server(process: subprocess.Popen[bytes], log: Any) -> None:
    """End a server a test started (SIGTERM, then SIGKILL after a minute) and close its log."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    log.close()


#: screenshots and measured values of a test run, for its reader
ARTIFACTS = Path(__file__).parents[1] / "test-artifacts"


def measured(name: str, value: object) -> None:
    """Keep a value a test measured in ``test-artifacts/measurements.json`` (name -> value),
    beside the screenshots: what the view showed, how long a start took, for the run's reader."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "measurements.json"
    values = json.loads(path.read_text()) if path.exists() else {}
    values[name] = value
    path.write_text(json.dumps(values, indent=1, sort_keys=True))


def this_kernel() -> Any:
    """The kernel's cluster (a ``KernelCluster``) of the extension loaded into this process's
    IPython, as the ``shell`` fixture loads it."""
    from IPython import get_ipython

    from gpudask_jupyter.magics.extension import Extension

    loaded = Extension.of(get_ipython())
    assert loaded is not None, "the extension is not loaded in this process's IPython"
    return loaded.cluster


def this_view() -> Any:
    """What the panels of that kernel share (a ``KernelView``)."""
    from IPython import get_ipython

    from gpudask_jupyter.magics.extension import Extension

    loaded = Extension.of(get_ipython())
    assert loaded is not None, "the extension is not loaded in this process's IPython"
    return loaded.view
