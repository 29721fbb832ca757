"""Secure by default: who can reach a started cluster and its dashboard, decided and shown.

The decisions are checked without starting anything; then, where the tests run as root (CI),
with a real second local user: it cannot run code on a default cluster, and it can on a
``--no-tls`` one (so the test would notice if the default stopped protecting anything).
"""

from __future__ import annotations

import os
import pwd
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from local_user import act_as, second_user
from support import spawned_workers, this_kernel

from gpudask_jupyter import registry
from gpudask_jupyter.cluster.options import StartOptions
from gpudask_jupyter.cluster.security import decide, is_loopback
from gpudask_jupyter.errors import ClusterError
from gpudask_jupyter.machine import local_users

START = "start --n-workers 1 --threads-per-worker 1 --memory-limit 1GB"
ALONE = local_users.Others()
SHARED = local_users.Others(running=("alice", "bob"))

# -- who else is here: accounts and processes ----------------------------------------------------


def _files(tmp_path: Path, passwd: str, login_defs: str = "") -> tuple[Path, Path]:
    (tmp_path / "passwd").write_text(passwd)
    (tmp_path / "login.defs").write_text(login_defs)
    return tmp_path / "passwd", tmp_path / "login.defs"


#: a cloud or container image: root, system accounts, and an idle default login account
IMAGE_PASSWD = (
    "root:x:0:0:root:/root:/bin/bash\n"
    "daemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n"
    "ubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\n"
    "nobody:x:65534:65534::/nonexistent:/bin/sh\n"
    "broken line\n"
)


def _proc(tmp_path: Path, *owners: int) -> Path:
    """A /proc of a container: one entry per process, owned by ``owners``, with a command line
    and an empty environment."""
    proc = tmp_path / "proc"
    proc.mkdir()
    for pid, uid in enumerate(owners, start=1):
        entry = proc / str(pid)
        entry.mkdir()
        (entry / "cmdline").write_bytes(b"python\0-m\0ipykernel_launcher\0")
        (entry / "environ").write_bytes(b"")
        os.chown(entry, uid, uid)
    return proc


def test_an_idle_account_of_the_image_is_no_one(tmp_path: Path) -> None:
    """Root alone in a container whose image has an ``ubuntu`` account with a login shell:
    the account exists, nobody is here, the machine is not shared."""
    passwd, defs = _files(tmp_path, IMAGE_PASSWD)
    found = local_users.others(passwd, defs, _proc(tmp_path, 0, 0), own_uid=0, sessions=[])
    assert not found
    assert found.describe() == ""


def test_a_process_of_another_person_makes_it_shared_and_says_so(tmp_path: Path) -> None:
    passwd, defs = _files(tmp_path, IMAGE_PASSWD)
    found = local_users.others(passwd, defs, _proc(tmp_path, 0, 1000), own_uid=0, sessions=[])
    assert found.running == ("ubuntu",)
    assert found.describe() == "ubuntu"
    assert found.evidence() == (
        "processes of ubuntu (set the shared-machine option to false if this is yours alone)"
    )
    (tmp_path / "daemons").mkdir()
    daemons = _proc(tmp_path / "daemons", 1, 65534)
    system = local_users.others(passwd, defs, daemons, own_uid=0, sessions=[])
    assert not system  # daemons and nobody are not people


def test_a_login_session_of_another_user_makes_it_shared(tmp_path: Path) -> None:
    passwd, defs = _files(tmp_path, IMAGE_PASSWD)
    found = local_users.others(passwd, defs, _proc(tmp_path, 0), own_uid=0, sessions=["ubuntu"])
    assert found.sessions == ("ubuntu",) and found
    assert "ubuntu logged in" in found.evidence()


def test_other_jupyterhub_servers_of_one_shared_account_are_other_people(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Students of a hub that runs every server as one account are told apart by the hub user
    each server's environment names."""
    passwd, defs = _files(tmp_path, IMAGE_PASSWD)
    proc = _proc(tmp_path, os.getuid(), os.getuid())
    for pid, user in ((1, b"student-1"), (2, b"student-2")):
        (proc / str(pid) / "cmdline").write_bytes(b"python\0/usr/bin/jupyterhub-singleuser\0")
        (proc / str(pid) / "environ").write_bytes(b"HOME=/home\0JUPYTERHUB_USER=" + user + b"\0")
    monkeypatch.setenv("JUPYTERHUB_USER", "student-1")
    found = local_users.others(passwd, defs, proc, own_uid=os.getuid(), sessions=[])
    assert found.hub == ("student-2",)
    assert "the JupyterHub servers of student-2" in found.evidence()


def test_uid_min_comes_from_login_defs(tmp_path: Path) -> None:
    passwd, defs = _files(
        tmp_path, "old:x:600:600::/home/old:/bin/sh\n", "# comment\nUID_MIN   500\n"
    )
    assert local_users.uid_min(defs) == 500
    found = local_users.others(passwd, defs, _proc(tmp_path, 600), own_uid=0, sessions=[])
    assert found.running == ("old",)
    assert local_users.uid_min(tmp_path / "missing") == local_users.DEFAULT_UID_MIN


@pytest.fixture(scope="module")
def other() -> Iterator[pwd.struct_passwd]:
    with second_user() as user:
        yield user


def test_a_real_second_user_counts_only_while_its_processes_run(
    other: pwd.struct_passwd,
) -> None:
    assert other.pw_name not in local_users.others(sessions=[]).running  # an account alone
    sleeper = subprocess.Popen(["sleep", "60"], user=other.pw_uid, group=other.pw_gid)
    try:
        time.sleep(0.2)
        assert other.pw_name in local_users.others(sessions=[]).running
        empty = Path("/nonexistent-passwd")  # without its account: the process alone tells
        assert local_users.others(passwd=empty, sessions=[]).running  # shown as "uid N"
    finally:
        sleeper.kill()
        sleeper.wait()


# -- what a start may do, decided before anything starts ------------------------------------------


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("10.0.0.5", False),
        ("myhost", False),
        ("::", False),
    ],
)
def test_loopback(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected


def test_tls_is_the_default_and_the_dashboard_follows_who_is_here() -> None:
    alone = decide(StartOptions(), ALONE)
    assert alone.tls and alone.dashboard == "127.0.0.1:0" and alone.warnings == ()
    shared = decide(StartOptions(), SHARED)
    assert shared.tls and shared.dashboard is None and shared.warnings == ()
    assert (
        "dashboard: off (other people use this machine: processes of alice, bob (set the "
        "shared-machine option to false if this is yours alone))"
    ) in shared.reach(None)
    assert "only holders of this cluster's own TLS certificate" in shared.reach(None)


def test_an_explicit_dashboard_on_a_shared_machine_warns_who_can_read_it() -> None:
    access = decide(StartOptions(dashboard_address="8787"), SHARED)
    assert access.dashboard == "127.0.0.1:8787"
    (warning,) = access.warnings
    assert "no authentication" in warning and "alice, bob" in warning
    assert "every local user (alice, bob), no authentication" in access.reach("http://x")


def test_no_tls_warns_that_local_users_can_run_code() -> None:
    access = decide(StartOptions(tls=False), ALONE)
    (warning,) = access.warnings
    assert "any local user" in warning and "run code as you" in warning
    assert "every local user (plain TCP)" in access.reach(None)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.5", "myhost.example"])
def test_plain_tcp_beyond_loopback_needs_its_own_flag(host: str) -> None:
    with pytest.raises(ClusterError, match=rf"--host {host} without TLS.*--allow-insecure-network"):
        decide(StartOptions(tls=False, host=host), ALONE)
    allowed = decide(StartOptions(tls=False, host=host, allow_insecure_network=True), ALONE)
    assert f"anyone who can reach {host}" in allowed.warnings[0]
    assert decide(StartOptions(host=host), ALONE).tls  # with TLS: no flag needed


def test_ucx_has_no_tls_so_it_needs_no_tls() -> None:
    with pytest.raises(ClusterError, match=r"--protocol ucx has no TLS.*Pass --no-tls"):
        decide(StartOptions(protocol="ucx"), ALONE)
    assert not decide(StartOptions(protocol="ucx", tls=False), ALONE).tls


# -- in a real shell ------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _cpu_only() -> None:
    from gpudask_jupyter.machine import nvml

    if nvml.status().available:
        pytest.skip("these tests start the CPU fallback; this machine has a GPU")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("start --no-tls --host 0.0.0.0", "--host 0.0.0.0 without TLS would let anyone"),
        ("start --protocol ucx", "--protocol ucx has no TLS"),
    ],
)
def test_refusals_start_nothing(shell, line: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        shell.run_line_magic("gpu_cluster", line)
    assert this_kernel().current() is None and spawned_workers() == []


def test_shared_machine_option_decides_the_dashboard(shell, capsys) -> None:
    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'true'")
    shell.run_line_magic("gpu_cluster", START)
    out = capsys.readouterr().out
    assert this_kernel().current().dashboard_link is None
    assert "dashboard: off (other people use this machine: the shared-machine option" in out
    assert "who can reach it: cluster: only holders of this cluster's own TLS" in out
    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'false'")
    shell.run_line_magic("gpu_cluster", START + " --replace")
    assert this_kernel().current().dashboard_link.startswith("http://127.0.0.1:")


# -- a real second local user ---------------------------------------------------------------------


def test_a_lone_user_beside_an_idle_account_gets_the_dashboard_and_no_room(
    shell, other: pwd.struct_passwd, capsys
) -> None:
    """As root in a container whose image has a login account nobody uses (an ``ubuntu``):
    on ``auto`` the machine is this user's alone, so the cluster has its dashboard and the
    start is not placed on a share."""
    here = local_users.others()
    if here:  # on this machine someone else is really here: auto rightly says shared
        pytest.skip(f"other people use this machine now: {here.evidence()}")
    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'auto'")
    shell.run_line_magic("config", "GpuDaskMagics.room_gpus = 1")
    shell.run_line_magic("gpu_cluster", START)
    out = capsys.readouterr().out
    assert this_kernel().current().dashboard_link.startswith("http://127.0.0.1:"), out
    assert "room:" not in out and "other people use this machine" not in out, out


def test_another_user_cannot_use_a_default_cluster(
    shell, other: pwd.struct_passwd, runtime_dir: Path
) -> None:
    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'auto'")
    # the other user is here now (a process of theirs runs): the machine counts as shared
    here = subprocess.Popen(["sleep", "120"], user=other.pw_uid, group=other.pw_gid)
    try:
        client = shell.run_line_magic("gpu_cluster", START)
    finally:
        here.kill()
        here.wait()
    (entry,) = registry.read_all(runtime_dir).values()
    assert entry.tls is not None
    http = this_kernel().current().kind.cluster.scheduler.http_server.port
    result = act_as(
        other,
        address=client.scheduler.address,
        own_certificate=True,
        read=list(entry.tls.values()),
        url=f"http://127.0.0.1:{http}/json/identity.json",
    )
    assert "ran_as" not in result, result
    assert "TLS" in str(result.get("error")), result  # refused at the handshake
    assert set(result["read"].values()) == {"PermissionError"}  # type: ignore[union-attr]
    assert result["http"] == 404  # no dashboard, no JSON: only a health check
    assert client.submit(os.getuid).result() == os.getuid()  # the owner still can


def test_another_user_can_use_a_no_tls_cluster(shell, other: pwd.struct_passwd) -> None:
    """The other side: without TLS the same attempt succeeds, so the test above can fail."""
    client = shell.run_line_magic("gpu_cluster", START + " --no-tls --dashboard-address 0")
    dashboard = this_kernel().current().dashboard_link
    result = act_as(other, address=client.scheduler.address, url=dashboard)
    assert result.get("ran_as") == os.getuid(), result  # its code ran as the notebook's user
    assert result["http"] == 200  # and it read the dashboard


def _http_status(url: str) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as err:
        return err.code


def test_without_a_dashboard_the_http_ports_answer_only_health(shell) -> None:
    shell.run_line_magic("config", "GpuDaskMagics.shared_machine = 'true'")
    client = shell.run_line_magic("gpu_cluster", START)
    shell.run_line_magic("gpu_cluster", "scale 2")  # nannies made later get the same routes
    ports = [this_kernel().current().kind.cluster.scheduler.http_server.port]
    ports += [w["services"]["dashboard"] for w in client.scheduler_info()["workers"].values()]
    assert len(ports) == 3
    for port in ports:
        base = f"http://127.0.0.1:{port}"
        assert _http_status(f"{base}/health") == 200
        for page in ("/metrics", "/json/identity.json", "/info/main/workers.html", "/status"):
            assert _http_status(base + page) == 404, base + page


# -- the certificates and the SSL contexts made from them ----------------------------------------

ROLES = ("client", "scheduler", "worker")


def temporary_tls_security(kernel: str) -> Any:
    from gpudask_jupyter.cluster.options import temporary_tls

    return temporary_tls(kernel)[0]


def test_each_cluster_has_its_own_certificate_and_owner_only_files(runtime_dir: Path) -> None:
    from gpudask_jupyter.cluster.options import temporary_tls

    (_, first), (_, second) = temporary_tls("kernel-a"), temporary_tls("kernel-b")
    assert Path(first["cert_file"]).read_text() != Path(second["cert_file"]).read_text()
    folder = Path(first["key_file"]).parent
    assert folder.stat().st_mode & 0o777 == 0o700
    assert all(Path(path).stat().st_mode & 0o777 == 0o600 for path in first.values())


def test_one_context_per_use_shared_by_every_role(runtime_dir: Path) -> None:
    security = temporary_tls_security("kernel-a")
    contexts = {id(security.get_connection_args(r)["ssl_context"]) for r in ROLES}
    listening = {id(security.get_listen_args(r)["ssl_context"]) for r in ROLES}
    assert len(contexts) == len(listening) == 1 and contexts != listening
    assert security.get_listen_args("scheduler")["ssl_context"].num_tickets == 0
    assert security.get_connection_args("client")["require_encryption"] is True


def test_every_context_takes_a_close_without_close_notify_as_an_end(runtime_dir: Path) -> None:
    """tornado closes TLS connections without TLS's closing message; with OpenSSL 3.5 and newer
    the error that raised broke other connections of the process (a cluster lost its client).
    The contexts of a started cluster and of an attached one take such a close as an end of
    stream; scripts/test_pythons.sh runs the notebooks where OpenSSL is that new."""
    import ssl

    from gpudask_jupyter.cluster.target import AttachTarget

    security = temporary_tls_security("kernel-a")
    files = security.get_tls_config_for_role("client")
    target = AttachTarget("tls://127.0.0.1:1", files["ca_file"], files["cert"], files["key"])
    contexts = [
        security.get_connection_args("client")["ssl_context"],
        security.get_listen_args("scheduler")["ssl_context"],
        target.security().get_connection_args("client")["ssl_context"],
        target.worker_security().get_listen_args("worker")["ssl_context"],
    ]
    assert all(context.options & ssl.OP_IGNORE_UNEXPECTED_EOF for context in contexts)


def test_a_worker_gets_the_settings_and_makes_its_own_contexts(runtime_dir: Path) -> None:
    import pickle

    security = temporary_tls_security("kernel-a")
    context = security.get_connection_args("worker")["ssl_context"]
    copy = pickle.loads(pickle.dumps(security))
    assert type(copy) is type(security) and repr(copy) == repr(security)
    assert copy.get_connection_args("worker")["ssl_context"] is not context


def test_a_certificate_of_another_cluster_is_refused(runtime_dir: Path) -> None:
    import asyncio

    from distributed.comm import connect, listen

    ours, theirs = temporary_tls_security("kernel-a"), temporary_tls_security("kernel-b")

    async def attempt(security: Any) -> str:
        async def answer(comm: Any) -> None:
            await comm.write("hello")
            await comm.close()

        listener = listen("tls://127.0.0.1:0", answer, **ours.get_listen_args("scheduler"))
        await listener.start()
        try:
            args = security.get_connection_args("client")
            comm = await connect(listener.contact_address, timeout=5, **args)
            message = str(await comm.read())
            await comm.close()
            return message
        except OSError as err:
            return type(err).__name__
        finally:
            listener.stop()

    assert asyncio.run(attempt(ours)) == "hello"
    assert asyncio.run(attempt(theirs)) == "FatalCommClosedError"  # refused at the handshake
