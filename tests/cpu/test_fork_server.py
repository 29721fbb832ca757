"""Workers forked from the kernel's fork server: a first start's workers are forked from a server
launched as it began, start as spawned ones would (hash seed, environment, process group), a
later start forks from the same server, and whatever differs is spawned; nothing outlives the
kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from support import FORK_SERVER, gone_pid, wait_gone

from gpudask_jupyter.cluster import fork_server

FIRST_START = """
import json, os, sys
import psutil
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "gpudask_jupyter")
assert "distributed" not in sys.modules
from gpudask_jupyter import compat
from gpudask_jupyter.cluster import fork_server
launches, _ahead = [], fork_server.ahead
def noting(*args, **kwargs):
    launches.append(sorted(m for m in ("distributed", "cryptography") if m in sys.modules))
    return _ahead(*args, **kwargs)
fork_server.ahead = noting
before = dict(os.environ)
def changed():
    return sorted(k for k in os.environ if os.environ[k] != before.get(k))
start = "start --n-workers 2 --memory-limit 1GB --oversubscribe"
ip.run_line_magic("gpu_cluster", start)
from distributed import default_client
client = default_client()

def facts():
    import os
    return {"pid": os.getpid(), "pgid": os.getpgid(0), "hash": hash("a string"),
            "seed": os.environ.get("PYTHONHASHSEED"),
            "mine": os.environ.get("GPUDASK_TEST_PRE_SPAWN")}

def described(found):
    for f in found:
        parent = psutil.Process(f["pid"]).parent()
        f["parent"] = parent.pid
        f["forked"] = compat.FORK_SERVER_COMMAND in " ".join(parent.cmdline())
        f["grandparent"] = parent.ppid()
    return found

first = described(list(client.run(facts).values()))
server = first[0]["parent"]
request = os.path.exists(fork_server.request_path(os.getpid()))
total = client.submit(sum, range(10)).result()
ip.run_line_magic("gpu_cluster", "restart")
again = described(list(client.run(facts).values()))
ip.run_line_magic("gpu_cluster", "stop")
fds = len(os.listdir("/proc/self/fd"))
ip.run_line_magic("gpu_cluster", start)
later = described(list(default_client().run(facts).values()))
ip.run_line_magic("gpu_cluster", "stop")
print(json.dumps({"first": first, "again": again, "later": later, "total": total,
                  "kernel": os.getpid(), "server": server, "request_left": request,
                  "server_pgid": os.getpgid(server), "imported_at_launch": launches[0],
                  "environ_changed": changed(),
                  "fds": [fds, len(os.listdir("/proc/self/fd"))]}))
"""


def _run(code: str, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "DASK_GPUDASK__PREWARM": "false", **(env or {})},
        timeout=180,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_first_start_forks_its_workers_from_a_server_launched_ahead(tmp_path: Path) -> None:
    """In a fresh interpreter, as in a fresh kernel; the user's own ``pre-spawn-environ`` (a dask
    config file) must reach the forked workers as it reaches spawned ones. The server is launched
    before the kernel imports distributed (or the certificates' library), so that its imports
    overlap the kernel's from the first; a later start forks from the same server."""
    (tmp_path / "nanny.yaml").write_text(
        "distributed:\n  nanny:\n    pre-spawn-environ:\n      GPUDASK_TEST_PRE_SPAWN: 3\n"
    )
    env = {"DASK_CONFIG": str(tmp_path)}
    os.environ.pop("GPUDASK_TEST_PRE_SPAWN", None)  # a variable already set would win
    seen = _run(FIRST_START, env)
    first, again, later = seen["first"], seen["again"], seen["later"]
    assert [f["forked"] for f in first] == [True, True]
    assert seen["imported_at_launch"] == []
    assert {f["grandparent"] for f in first} == {seen["kernel"]}  # the server is the kernel's
    assert all(f["pgid"] == f["pid"] for f in first)  # out of the kernel's process group
    assert seen["server_pgid"] == seen["server"]  # and so is the server
    assert seen["total"] == 45
    # a restart spawns as before; both kinds agree on what a spawn would have given them: the
    # hash seed, and the user's own pre-spawn variable
    assert [f["forked"] for f in again] == [False, False]
    assert {f["parent"] for f in again} == {seen["kernel"]}
    assert {f["hash"] for f in first + again} == {first[0]["hash"]}
    assert {(f["seed"], f["mine"]) for f in first + again} == {("6640", "3")}
    # the next start forks from the server already running
    assert {(f["forked"], f["parent"]) for f in later} == {(True, seen["server"])}
    assert not seen["request_left"]
    # what the kernel's environment gained, distributed's nanny set itself (its pre-spawn
    # variables, "even if this means poisoning the process running the Nanny"), with dask's
    # worker log and the variable that names the workers' parent: nothing of the fork server's
    assert set(seen["environ_changed"]) <= {
        "GPUDASK_TEST_PRE_SPAWN",
        "PYTHONHASHSEED",
        "MALLOC_TRIM_THRESHOLD_",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "GPUDASK_WORKER_LOG",
        "__DASK_PARENT_PID",
    }
    assert seen["fds"][1] <= seen["fds"][0]  # a start and stop more leave no descriptor open


AHEAD = """
import json, os, sys
from gpudask_jupyter.cluster import fork_server
out = {}
with fork_server.ahead(["json"], {"GPUDASK_TEST_LAUNCH": "yes"}) as launched:
    out["unchanged"] = "GPUDASK_TEST_LAUNCH" not in os.environ
    CHANGE
    import distributed  # as the cluster class has, when the cluster is made
    with launched.offered():
        import dask.config
        out["method"] = dask.config.get("distributed.worker.multiprocessing-method")
    out["forked"] = launched.forked
    launched.settle(60)
known, running = fork_server.this_process.running()
out["known"], out["running"] = known is not None, running
print(json.dumps(out))
"""


@pytest.mark.parametrize(
    ("change", "forked"),
    [
        ("", True),
        ("os.environ['GPUDASK_TEST_CHANGED'] = '1'", False),  # the environment a spawn would get
        ("sys.path.insert(0, '/nowhere')", False),  # the module path a spawn would get
        (  # a start method set meanwhile wins
            "import dask.config; dask.config.set("
            "{'distributed.worker.multiprocessing-method': 'fork'})",
            False,
        ),
    ],
)
def test_workers_are_forked_only_where_a_spawn_would_start_alike(change: str, forked: bool) -> None:
    """What the start and its cluster class will set counts as set (``GPUDASK_TEST_LAUNCH``);
    anything else that differs from the server's launch as the cluster is made sends the
    workers the old way. The server is known either way once it reported."""
    seen = _run(AHEAD.replace("CHANGE", change))
    assert seen["unchanged"]  # the kernel's environment is never changed
    assert seen["forked"] is forked
    assert seen["method"] == (
        "forkserver" if forked else "spawn" if "fork'" not in change else "fork"
    )
    assert seen["known"] and seen["running"]


def test_nothing_is_launched_where_workers_are_not_spawned() -> None:
    seen = _run(
        AHEAD.replace("CHANGE", ""),
        {"DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD": "fork"},
    )
    assert seen == {
        "unchanged": True,
        "method": "fork",
        "forked": False,
        "known": False,
        "running": False,
    }


FOREIGN = """
import json, multiprocessing
context = multiprocessing.get_context("forkserver")
process = context.Process(target=print)
process.start(); process.join()
from gpudask_jupyter.cluster import fork_server
with fork_server.ahead(["json"]) as launched:
    with launched.offered():
        pass
print(json.dumps({"forked": launched.forked, "running": fork_server.this_process.running()[1]}))
"""


def test_a_fork_server_this_package_did_not_launch_is_not_used() -> None:
    """What a worker forked from it would start with is not known: the workers are spawned."""
    assert _run(FOREIGN) == {"forked": False, "running": True}


SERVER = """
import json, os, psutil
from gpudask_jupyter.cluster import fork_server
with fork_server.ahead(["json"], {"GPUDASK_TEST_LAUNCH": "yes"}) as launched:
    launched.settle(60)
from gpudask_jupyter import compat
children = psutil.Process().children()
(server,) = [p for p in children if compat.FORK_SERVER_COMMAND in " ".join(p.cmdline())]
theirs = [t.decode() for t in open(f"/proc/{server.pid}/environ", "rb").read().split(b"\\0")]
print(json.dumps({"launch": "GPUDASK_TEST_LAUNCH=yes" in theirs,
                  "seed": "PYTHONHASHSEED=6640" in theirs,
                  "pgid": os.getpgid(server.pid) == server.pid,
                  "mine": "GPUDASK_TEST_LAUNCH" in os.environ}))
"""


def test_the_server_takes_what_a_spawn_would_get_and_leaves_the_process_group() -> None:
    assert _run(SERVER) == {"launch": True, "seed": True, "pgid": True, "mine": False}


def test_a_request_is_read_only_where_private_and_whole(tmp_path: Path) -> None:
    path = fork_server.request_path(os.getpid())
    try:
        written = fork_server.write_request({"GPUDASK_TEST_ADD": "1"}, ["/a"], ["json"])
        assert written == path and (path.stat().st_mode & 0o777) == 0o600
        launch, modules = fork_server.read_request(os.getpid()) or (None, None)
        assert launch is not None and launch.environ["GPUDASK_TEST_ADD"] == "1"
        assert launch.path == ("/a",) and modules == ["json"]
        path.chmod(0o644)  # another user could read it: not one of this user's requests
        assert fork_server.read_request(os.getpid()) is None
        path.chmod(0o600)
        path.write_text(json.dumps({"environ": {"A=B": "1"}, "path": [], "modules": []}))
        assert fork_server.read_request(os.getpid()) is None
        path.write_text("[1, 2")
        assert fork_server.read_request(os.getpid()) is None
    finally:
        path.unlink(missing_ok=True)


def test_the_requests_of_gone_kernels_are_pruned(tmp_path: Path) -> None:
    left = tmp_path / f"{fork_server.REQUEST_PREFIX}{gone_pid()}.json"
    mine = tmp_path / f"{fork_server.REQUEST_PREFIX}{os.getpid()}.json"
    for path in (left, mine):
        path.write_text("{}")
    fork_server.prune_requests(tmp_path)
    assert not left.exists() and mine.exists()


def test_the_option_off_launches_nothing() -> None:
    from gpudask_jupyter import config
    from gpudask_jupyter.cluster.connect import workers_ahead

    config.set_override("launch-ahead", False)
    try:
        with workers_ahead([], {}) as launched, launched.offered():
            assert launched._launch is None
        assert not launched.forked
    finally:
        config.set_override("launch-ahead", None)


WORKERS_OF_A_KERNEL = """
import os, psutil
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "gpudask_jupyter")
client = ip.run_line_magic("gpu_cluster", "start --n-workers 2 --memory-limit 1GB --oversubscribe")
pids = list(client.run(os.getpid).values())
print("pids", *pids, psutil.Process(pids[0]).ppid(), flush=True)
__import__("time").sleep(120)
"""


def test_forked_workers_and_their_server_end_with_their_kernel() -> None:
    """SIGKILL leaves no time to close anything: the workers must see their parent's end, and
    the server its last client's."""
    kernel = subprocess.Popen(
        [sys.executable, "-c", WORKERS_OF_A_KERNEL],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "DASK_GPUDASK__PREWARM": "false"},
    )
    try:
        assert kernel.stdout is not None
        line = ""
        while not line.startswith("pids "):  # what the start printed comes first
            line = kernel.stdout.readline()
            assert line, "the kernel ended before its workers started"
        *pids, server = (int(p) for p in line.split()[1:])
        assert len(pids) == 2
        processes = [psutil.Process(p) for p in (*pids, server)]
        assert FORK_SERVER in " ".join(processes[-1].cmdline())
        kernel.kill()
        kernel.wait(10)
        assert wait_gone(processes, 30) == [], "the workers or their server outlived it"
    finally:
        kernel.kill()
        kernel.wait(10)
