"""Worker interpreters launched ahead of their nannies: a first start's workers are the very
interpreters launched ahead, behave as spawned ones (hash seed, environment, process group,
descriptors), and whatever is not taken, differs, or outlives its kernel is ended."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from support import wait_gone

from gpudask_jupyter.cluster import worker_spawn

FIRST_START = """
import json, os, sys
import psutil
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "gpudask_jupyter")
assert "distributed" not in sys.modules
from gpudask_jupyter.cluster import worker_spawn
launches, _launch = [], worker_spawn._launch
def noting(*args):
    launches.append(sorted(m for m in ("distributed", "cryptography") if m in sys.modules))
    return _launch(*args)
worker_spawn._launch = noting
ip.run_line_magic("gpu_cluster", "start --n-workers 2 --memory-limit 1GB --oversubscribe")
from distributed import default_client
client = default_client()

def facts():
    import os
    return {"pid": os.getpid(), "pgid": os.getpgid(0), "hash": hash("a string"),
            "seed": os.environ.get("PYTHONHASHSEED"),
            "mine": os.environ.get("GPUDASK_TEST_PRE_SPAWN")}

def cmdline(pid):
    return " ".join(psutil.Process(pid).cmdline())

first = list(client.run(facts).values())
for f in first:
    f["launched_ahead"] = "child_main" in cmdline(f["pid"])
    f["parent"] = psutil.Process(f["pid"]).ppid()
total = client.submit(sum, range(10)).result()
ip.run_line_magic("gpu_cluster", "restart")
again = list(client.run(facts).values())
for f in again:
    f["launched_ahead"] = "child_main" in cmdline(f["pid"])
ip.run_line_magic("gpu_cluster", "stop")
fds = len(os.listdir("/proc/self/fd"))
ip.run_line_magic("gpu_cluster", "start --n-workers 2 --memory-limit 1GB --oversubscribe")
ip.run_line_magic("gpu_cluster", "stop")
left = [p.pid for p in psutil.Process().children(recursive=True)
        if "child_main" in " ".join(p.cmdline())]
print(json.dumps({"first": first, "again": again, "total": total, "kernel": os.getpid(),
                  "imported_at_launch": launches[0],
                  "left": left, "fds": [fds, len(os.listdir("/proc/self/fd"))]}))
"""


def test_a_first_start_runs_its_workers_in_the_interpreters_launched_ahead(
    tmp_path: Path,
) -> None:
    """In a fresh interpreter, as in a fresh kernel; the user's own ``pre-spawn-environ`` (a
    dask config file) must reach the interpreters launched ahead as it reaches spawned ones.
    They are launched before the kernel imports distributed (or the certificates' library), so
    that their imports overlap the kernel's from the first."""
    (tmp_path / "nanny.yaml").write_text(
        "distributed:\n  nanny:\n    pre-spawn-environ:\n      GPUDASK_TEST_PRE_SPAWN: 3\n"
    )
    env = {**os.environ, "DASK_CONFIG": str(tmp_path), "DASK_GPUDASK__PREWARM": "false"}
    env.pop("GPUDASK_TEST_PRE_SPAWN", None)  # a variable already set would win over the file
    out = subprocess.run(
        [sys.executable, "-c", FIRST_START],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    first, again = seen["first"], seen["again"]
    assert [f["launched_ahead"] for f in first] == [True, True], out.stderr[-3000:]
    assert seen["imported_at_launch"] == []
    assert {f["parent"] for f in first} == {seen["kernel"]}  # the kernel's children
    assert all(f["pgid"] == f["pid"] for f in first)  # out of the kernel's process group
    assert seen["total"] == 45
    # a restart spawns as before; both kinds agree on what a spawn would have given them: the
    # hash seed, and the user's own pre-spawn variable
    assert [f["launched_ahead"] for f in again] == [False, False]
    assert {f["hash"] for f in first + again} == {first[0]["hash"]}
    assert {(f["seed"], f["mine"]) for f in first + again} == {("6640", "3")}
    assert seen["left"] == []
    assert seen["fds"][1] <= seen["fds"][0]  # a start and stop more leave no descriptor open


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_until(check: object, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _reaped(pid: int) -> bool:
    """Gone and collected: no zombie left of this process's child."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_interpreters_not_taken_are_ended_and_wait_outside_the_process_group() -> None:
    with worker_spawn.ahead(2, ["json"]) as launched:
        pids = [w.pid for w in launched._waiting]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        # they leave the kernel's group at once: a Ctrl-C in the cell does not reach them
        assert _wait_until(lambda: all(os.getpgid(p) == p for p in pids))
    assert all(_reaped(p) for p in pids)


def test_none_are_launched_where_workers_are_not_spawned() -> None:
    import dask.config

    fork = {"distributed.worker.multiprocessing-method": "fork"}
    with dask.config.set(fork), worker_spawn.ahead(2, ["json"]) as launched:
        assert launched._waiting == []


def test_none_are_offered_to_nannies_that_do_not_spawn() -> None:
    """A start method set after the launch (or by other means) wins: the nannies make their
    processes with it, and the interpreters launched ahead are ended."""
    import dask.config
    import distributed.process

    with worker_spawn.ahead(1, ["json"]) as launched:
        (pid,) = [w.pid for w in launched._waiting]
        fork = {"distributed.worker.multiprocessing-method": "fork"}
        with dask.config.set(fork), launched.offered():
            assert distributed.process.get_mp_context().get_start_method() == "fork"
        assert launched._waiting == [] and _reaped(pid)


def test_a_default_socket_timeout_in_the_kernel_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A notebook's ``socket.setdefaulttimeout`` would make the interpreter's end of the socket
    non-blocking: it would stop waiting and die as soon as it had reported."""
    import socket

    before = socket.getdefaulttimeout()
    socket.setdefaulttimeout(5)
    try:
        with worker_spawn.ahead(1, ["json"]) as launched:
            for name, value in worker_spawn.spawn_environ().items():  # as the nanny sets them
                monkeypatch.setenv(name, value)
            taken = launched.take()
            assert taken is not None
            time.sleep(0.5)
            assert not taken.exited(), "the interpreter stopped waiting for its process"
            taken.end()
    finally:
        socket.setdefaulttimeout(before)


def test_the_module_path_is_the_one_spawn_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    """IPython puts "" on the path; spawn sends the directory it stood for at start-up, and an
    interpreter launched ahead imports from that one too, wherever ``%cd`` went since."""
    from multiprocessing import process

    monkeypatch.setattr(sys, "path", ["", *sys.path])
    path = worker_spawn._launch_key().path
    assert "" not in path and path[0] == process.ORIGINAL_DIR


def test_a_launch_that_no_longer_matches_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    with worker_spawn.ahead(2, ["json"]) as launched:
        pids = [w.pid for w in launched._waiting]
        monkeypatch.setenv("GPUDASK_TEST_CHANGED", "1")  # the environment a spawn would get
        assert launched.take() is None
        assert launched.taken == 0
        assert not any(_alive(p) for p in pids)


def test_what_the_cluster_sets_as_it_is_made_counts_as_set_at_launch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dask-cuda's cluster sets a variable in the kernel as it is made, before its nannies
    spawn: interpreters launched with it are taken once the kernel has it, and not before."""
    monkeypatch.delenv("GPUDASK_TEST_MADE", raising=False)
    for name, value in worker_spawn.spawn_environ().items():  # as the nanny sets them
        monkeypatch.setenv(name, value)
    with worker_spawn.ahead(1, ["json"], {"GPUDASK_TEST_MADE": "1"}) as launched:
        assert "GPUDASK_TEST_MADE" not in os.environ  # set for the launch alone
        assert launched.take() is None  # the kernel never set it: a spawn would differ
    with worker_spawn.ahead(1, ["json"], {"GPUDASK_TEST_MADE": "1"}) as launched:
        monkeypatch.setenv("GPUDASK_TEST_MADE", "1")  # as the cluster sets it
        taken = launched.take()
        assert taken is not None
        taken.end()


def test_one_that_exited_after_its_report_is_not_taken() -> None:
    import select

    with worker_spawn.ahead(1, ["json"]) as launched:
        (waiting,) = launched._waiting
        assert select.select([waiting.sock], [], [], 20)[0], "no report"
        os.kill(waiting.pid, signal.SIGKILL)
        assert _wait_until(lambda: psutil.Process(waiting.pid).status() == psutil.STATUS_ZOMBIE)
        assert launched.take() is None
        assert _reaped(waiting.pid)


def test_what_differs_is_named(tmp_path: Path) -> None:
    """The module path may grow at its front (distributed puts its scratch directory there),
    unless what it adds holds a module imported ahead."""
    key = worker_spawn._launch_key()
    assert worker_spawn._differs(key, key, ["distributed.nanny"]) == ""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    grown = key._replace(path=(str(scratch), *key.path))
    assert worker_spawn._differs(key, grown, ["distributed.nanny"]) == ""
    (scratch / "distributed").mkdir()
    assert worker_spawn._differs(key, grown, ["distributed.nanny"]) == "module path"
    shrunk = key._replace(path=key.path[1:])
    assert worker_spawn._differs(key, shrunk, []) == "module path"
    env = key._replace(environ={**key.environ, "OMP_NUM_THREADS": "7"})
    assert worker_spawn._differs(key, env, []) == "environment (OMP_NUM_THREADS)"
    moved = key._replace(cwd=str(tmp_path))
    assert worker_spawn._differs(key, moved, []) == "directory"
    other = {"executable": "/usr/bin/python9", "flags": ("-X", "dev"), "tracker": (-1, 0)}
    for part, value in other.items():
        named = worker_spawn._differs(key, key._replace(**{part: value}), [])
        assert named == {"flags": "interpreter flags", "tracker": "resource tracker"}.get(
            part, part
        )


WORKERS_OF_A_KERNEL = """
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "gpudask_jupyter")
client = ip.run_line_magic("gpu_cluster", "start --n-workers 2 --memory-limit 1GB --oversubscribe")
print("pids", *client.run(__import__("os").getpid).values(), flush=True)
__import__("time").sleep(120)
"""


def test_workers_in_interpreters_launched_ahead_end_with_their_kernel() -> None:
    """SIGKILL leaves no time to close anything: the workers must see their parent's end."""
    env = {**os.environ, "DASK_GPUDASK__PREWARM": "false"}
    kernel = subprocess.Popen(
        [sys.executable, "-c", WORKERS_OF_A_KERNEL], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert kernel.stdout is not None
        line = ""
        while not line.startswith("pids "):  # what the start printed comes first
            line = kernel.stdout.readline()
            assert line, "the kernel ended before its workers started"
        pids = [int(p) for p in line.split()[1:]]
        assert len(pids) == 2
        workers = [psutil.Process(p) for p in pids]
        assert all("child_main" in " ".join(w.cmdline()) for w in workers)
        kernel.kill()
        kernel.wait(10)
        assert wait_gone(workers, 30) == [], "workers outlived it"
    finally:
        kernel.kill()
        kernel.wait(10)


LAUNCHER = """
import sys, time
from gpudask_jupyter.cluster import worker_spawn
with worker_spawn.ahead(1, ["json"]) as launched:
    print(launched._waiting[0].pid, flush=True)
    time.sleep(120)
"""


def test_an_interpreter_whose_kernel_died_exits() -> None:
    kernel = subprocess.Popen([sys.executable, "-c", LAUNCHER], stdout=subprocess.PIPE, text=True)
    try:
        assert kernel.stdout is not None
        launched = psutil.Process(int(kernel.stdout.readline()))
        assert _alive(launched.pid)
        kernel.kill()  # SIGKILL: nothing of the kernel's runs after it
        kernel.wait(10)
        assert wait_gone([launched], 20) == [], "the interpreter outlived its kernel"
    finally:
        kernel.kill()
        kernel.wait(10)


def test_what_its_own_imports_set_counts_as_set_at_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import that sets a variable sets it in the kernel too, before the nanny spawns: the
    interpreter that made the same import is still taken; one whose imports set something else
    is not."""
    (tmp_path / "sets_a_variable.py").write_text(
        "import os\nos.environ['GPUDASK_TEST_IMPORTED'] = 'yes'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("GPUDASK_TEST_IMPORTED", raising=False)
    with worker_spawn.ahead(2, ["sets_a_variable"]) as launched:
        pids = [w.pid for w in launched._waiting]
        for name, value in worker_spawn.spawn_environ().items():  # as the nanny sets them
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("GPUDASK_TEST_IMPORTED", "yes")  # the kernel's own import
        taken = launched.take()
        assert taken is not None and taken.pid == pids[0]
        taken.end()
        monkeypatch.setenv("GPUDASK_TEST_IMPORTED", "no")
        assert launched.take() is None
    assert not any(_alive(p) for p in pids)


def test_a_launch_changes_nothing_of_the_kernels_environment() -> None:
    """What the cluster and the nanny will add goes to the interpreters launched ahead alone."""
    before = dict(os.environ)
    with worker_spawn.ahead(1, ["json"], {"GPUDASK_TEST_LAUNCH": "yes"}) as launched:
        assert dict(os.environ) == before
        (pid,) = [w.pid for w in launched._waiting]
        theirs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"GPUDASK_TEST_LAUNCH=yes" in theirs
        assert os.getpgid(pid) == pid  # in a group of its own from its first instruction


def test_the_option_off_launches_none() -> None:
    from gpudask_jupyter import config
    from gpudask_jupyter.cluster.connect import workers_ahead
    from gpudask_jupyter.cluster.options import StartOptions

    config.set_override("launch-ahead", False)
    try:
        with workers_ahead(StartOptions(n_workers=2), [], {}) as launched:
            assert launched._waiting == []
    finally:
        config.set_override("launch-ahead", None)
    with workers_ahead(StartOptions(n_workers=2), [], {}) as launched:
        assert len(launched._waiting) == 2
