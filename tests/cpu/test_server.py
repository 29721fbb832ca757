"""The server extension against a real jupyter_server: auth, authorization, frames, registry."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError

from gpudask_jupyter import registry
from gpudask_jupyter.schema.frame import VERSION
from gpudask_jupyter.server import handlers, registry_monitor

pytest_plugins = ["pytest_jupyter.jupyter_server"]


class DenyGpudask(Authorizer):
    """Lets everything through except the gpudask resource: proves @authorized is applied."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return resource != "gpudask"


@pytest.fixture
def jp_server_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    config: dict[str, Any] = {
        "ServerApp": {
            "jpserver_extensions": {"gpudask_jupyter": True},
            "allow_unauthenticated_access": False,
        }
    }
    if request.node.get_closest_marker("deny_gpudask"):
        config["ServerApp"]["authorizer_class"] = DenyGpudask
    return config


@pytest.fixture(autouse=True)
def _stop_sampler() -> Iterator[None]:
    yield
    registry_monitor.stop_server_monitor()


async def _get(jp_fetch: Any, route: str, **params: str) -> dict[str, Any]:
    response = await jp_fetch("gpudask", "api", route, params=params)
    assert response.code == 200
    return dict(json.loads(response.body))


async def test_frame_without_cluster_says_why(jp_fetch) -> None:
    body = await _get(jp_fetch, "frame", kernel="abc-123", cursor="", interval="1")
    frame = body["frame"]
    assert frame["version"] == VERSION and frame["kind"] == "snapshot"
    assert frame["cluster"] is None  # the sidebar says, in its words, how to start one
    assert body["cursor"].count(".") == 2


async def test_interval_is_clamped(jp_fetch) -> None:
    await _get(jp_fetch, "frame", kernel="", interval="0.001")
    monitor = registry_monitor.server_monitor()
    assert monitor.interval == 0.25
    await _get(jp_fetch, "frame", kernel="", interval="1000")
    assert max(v[0] for v in monitor.requests.values()) == 10


@pytest.mark.parametrize(
    "params",
    [
        {"kernel": "../../etc/passwd"},
        {"cursor": "x"},
        {"cursor": ".."},
        {"cursor": "1.2"},
        {"interval": "fast"},
        {"kernel": "a" * 200},
    ],
)
async def test_bad_parameters_are_refused(jp_fetch, params: dict[str, str]) -> None:
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudask", "api", "frame", params=params)
    assert info.value.code == 400


async def test_a_cursor_from_another_monitor_gets_a_snapshot(jp_fetch) -> None:
    body = await _get(jp_fetch, "frame", kernel="abc-123", cursor="999999.0.5", interval="1")
    assert body["frame"]["kind"] == "snapshot"
    body = await _get(jp_fetch, "frame", kernel="abc-123", cursor=body["cursor"], interval="1")
    assert body["frame"]["kind"] == "delta"


async def test_every_route_refuses_unauthenticated_requests(
    recwarn, jp_serverapp, http_server_client, jp_base_url
) -> None:
    # jupyter_server warns about every endpoint without an authentication rule; none is ours
    assert not [w for w in recwarn if "gpudask" in str(w.message)]
    ours = [
        rule
        for rule in jp_serverapp.web_app.wildcard_router.rules
        if getattr(rule.target, "__module__", "").startswith("gpudask_jupyter")
    ]
    ours += [
        rule
        for app_rule in jp_serverapp.web_app.default_router.rules
        for rule in getattr(app_rule.target, "rules", [])
        if getattr(rule.target, "__module__", "").startswith("gpudask_jupyter")
    ]
    assert {rule.target for rule in ours} == {h for _, h in handlers.ROUTES}
    for route, handler in handlers.ROUTES:
        for method in ("get", "post", "put", "delete", "patch"):
            function = getattr(handler, method, None)
            if function is not None and method == "get":
                assert not getattr(function, "__allow_unauthenticated", False), (route, method)
        response = await http_server_client.fetch(
            jp_base_url + route, raise_error=False, headers={"Authorization": ""}
        )
        assert response.code == 403, (route, response.code)


@pytest.mark.deny_gpudask
@pytest.mark.parametrize("route", [r for r, _ in handlers.ROUTES])
async def test_every_route_is_authorized(jp_fetch, route: str) -> None:
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(*route.split("/"))
    assert info.value.code == 403


async def test_frames_follow_a_kernels_cluster_from_the_registry(jp_fetch) -> None:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    )
    client = Client(cluster)
    try:
        registry.write(registry.Entry("k-1", os.getpid(), "cpu", cluster.scheduler_address, None))
        kernels = await _get(jp_fetch, "kernels")
        assert [k["kernel_id"] for k in kernels["kernels"]] == ["k-1"]
        body = await _get(jp_fetch, "frame", kernel="k-1", cursor="", interval="0.25")
        deadline = time.monotonic() + 30
        while not body["frame"]["workers"]:  # the server has read the scheduler once
            assert time.monotonic() < deadline, body["frame"]["messages"]
            await asyncio.sleep(0.2)
            body = await _get(jp_fetch, "frame", kernel="k-1", cursor="", interval="0.25")
        cursor = body["cursor"]
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: client.gather(client.map(lambda x: x + 1, range(10)))
        )
        deadline = time.monotonic() + 30
        tasks: list[dict[str, Any]] = []
        while True:
            body = await _get(jp_fetch, "frame", kernel="k-1", cursor=cursor, interval="0.25")
            frame, cursor = body["frame"], body["cursor"]
            tasks = frame["tasks"] if frame["kind"] == "snapshot" else tasks + frame["tasks"]
            if frame["cluster"] and frame["workers"] and len(tasks) >= 10:
                break
            assert time.monotonic() < deadline, frame["messages"]
            await asyncio.sleep(0.3)
        assert frame["cluster"]["state"] == "running"
        assert frame["cluster"]["address"] == cluster.scheduler_address
        assert len({t["key"] for t in tasks}) == len(tasks) == 10  # each task once
        assert {t["prefix"] for t in tasks} == {"lambda"}
        body = await _get(jp_fetch, "frame", kernel="k-1", cursor=cursor, interval="0.25")
        assert body["frame"]["kind"] == "delta"
        assert body["frame"]["tasks"] == []
    finally:
        registry.remove("k-1")
        client.close()
        cluster.close()


async def test_loose_registry_entries_are_ignored(jp_fetch) -> None:
    path = registry.write(registry.Entry("k-2", os.getpid(), "cpu", "tcp://127.0.0.1:1", None))
    path.chmod(0o644)
    kernels = await _get(jp_fetch, "kernels")
    assert kernels["kernels"] == []


@pytest.mark.parametrize("interval", ["nan", "NaN", "inf", "-inf", "1e400", "-1e400"])
async def test_an_interval_that_is_not_a_finite_number_is_refused(jp_fetch, interval) -> None:
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("gpudask", "api", "frame", params={"kernel": "k", "interval": interval})
    assert info.value.code == 400


def _write_raw_entry(runtime: Any, name: str, fields: dict[str, Any]) -> None:
    path = runtime / f"{registry.ENTRY_PREFIX}{name}.json"
    path.write_text(json.dumps(fields))
    path.chmod(0o600)


@pytest.mark.parametrize(
    "bad",
    [
        {"pid": "123"},
        {"pid": 2**70},
        {"pid": None},
        {"pid": 1.5},
        {"tls": "yes"},
        {"tls": ["a"]},
        {"kernel_id": ["k"]},
        {"scheduler_address": 7},
    ],
)
async def test_a_malformed_entry_never_makes_a_route_fail(jp_fetch, runtime_dir, bad) -> None:
    good = {
        "kernel_id": "k-bad",
        "pid": os.getpid(),
        "mode": "cpu",
        "scheduler_address": "tcp://127.0.0.1:1",
        "dashboard_link": None,
        "tls": None,
        "created": time.time(),
        "version": registry.SCHEMA_VERSION,
    }
    _write_raw_entry(runtime_dir, "k-bad", good | bad)
    kernels = await _get(jp_fetch, "kernels")
    for kernel in kernels["kernels"]:
        assert isinstance(kernel["kernel_id"], str)
        assert isinstance(kernel["scheduler_address"], str)
    for _ in range(3):  # the sampler reads the entry on its thread meanwhile
        body = await _get(jp_fetch, "frame", kernel="k-bad", cursor="", interval="0.25")
        assert body["frame"]["version"] == VERSION
        await asyncio.sleep(0.3)


async def _until_state(
    jp_fetch: Any, kernel: str, states: set[str], timeout: float = 30
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = await _get(jp_fetch, "frame", kernel=kernel, cursor="", interval="0.25")
        cluster = body["frame"]["cluster"]
        if cluster is not None and cluster["state"] in states:
            return dict(body["frame"])
        assert time.monotonic() < deadline, body["frame"]
        await asyncio.sleep(0.1)


async def test_a_stopped_cluster_is_said_and_its_history_kept(jp_fetch, caplog) -> None:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)
    client = Client(cluster)
    try:
        registry.write(registry.Entry("k-3", os.getpid(), "cpu", cluster.scheduler_address))
        await _until_state(jp_fetch, "k-3", {"running"})
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: client.gather(client.map(lambda x: x + 1, range(5)))
        )
        frame = await _until_state(jp_fetch, "k-3", {"running"})
        deadline = time.monotonic() + 30
        while len(frame["tasks"]) < 5:
            assert time.monotonic() < deadline, frame
            frame = await _until_state(jp_fetch, "k-3", {"running"})
        caplog.set_level(logging.DEBUG, logger="distributed")
        registry.remove("k-3")  # %gpu_cluster stop
        await asyncio.get_running_loop().run_in_executor(None, client.close)
        await asyncio.get_running_loop().run_in_executor(None, cluster.close)
        frame = await _until_state(jp_fetch, "k-3", {"stopped"}, timeout=10)
        assert frame["cluster"]["stopped_at"] is not None
        assert len(frame["tasks"]) >= 5 and frame["workers"]  # the history stays
        await asyncio.sleep(1.0)
        assert "Failed to reconnect" not in caplog.text
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    finally:
        registry.remove("k-3")
        client.close()
        cluster.close()


async def _kernel(jp_fetch: Any) -> str:
    reply = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    return str(json.loads(reply.body)["id"])


async def test_a_kernel_shut_down_by_the_server_stops_its_cluster_within_two_seconds(
    jp_fetch,
) -> None:
    from distributed import Client, LocalCluster

    kernel_id = await _kernel(jp_fetch)
    cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)
    client = Client(cluster)
    try:
        # the entry's process stays alive (this one): only the kernel manager can tell
        registry.write(registry.Entry(kernel_id, os.getpid(), "cpu", cluster.scheduler_address))
        await _until_state(jp_fetch, kernel_id, {"running"})
        asked = time.monotonic()
        shutdown = asyncio.ensure_future(jp_fetch("api", "kernels", kernel_id, method="DELETE"))
        frame = await _until_state(jp_fetch, kernel_id, {"stopped"}, timeout=20)
        assert time.monotonic() - asked < 2.0
        assert "kernel" in frame["cluster"]["message"]
        await shutdown
        await asyncio.sleep(1.0)
        frame = await _until_state(jp_fetch, kernel_id, {"stopped"})  # and stays so
        assert frame["cluster"]["message"] == "the notebook's kernel was shut down"
    finally:
        registry.remove(kernel_id)
        client.close()
        cluster.close()


async def test_a_kernel_restarted_by_the_server_stops_its_cluster_within_two_seconds(
    jp_fetch, jp_serverapp
) -> None:
    from distributed import Client, LocalCluster

    kernel_id = await _kernel(jp_fetch)
    pid = jp_serverapp.kernel_manager.get_kernel(kernel_id).provisioner.pid
    cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)
    client = Client(cluster)
    try:
        registry.write(registry.Entry(kernel_id, pid, "cpu", cluster.scheduler_address))
        await _until_state(jp_fetch, kernel_id, {"running"})
        asked = time.monotonic()
        restart = asyncio.ensure_future(
            jp_fetch("api", "kernels", kernel_id, "restart", method="POST", body="{}")
        )
        frame = await _until_state(jp_fetch, kernel_id, {"stopped"}, timeout=20)
        assert time.monotonic() - asked < 2.0, frame["cluster"]
        await restart
        frame = await _until_state(jp_fetch, kernel_id, {"stopped"})  # the new kernel has none
        assert frame["workers"]  # what the old one showed stays, greyed
    finally:
        registry.remove(kernel_id)
        await jp_fetch("api", "kernels", kernel_id, method="DELETE")
        client.close()
        cluster.close()


@pytest.fixture
def quick_tidy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's tidy-up every fifth of a second instead of every few seconds."""
    from gpudask_jupyter.server import tidy

    monkeypatch.setattr(tidy, "EVERY", 0.2)


def _killed_kernel_leftovers(runtime: Path, room: Path) -> list[str]:
    """A real kernel with a placed cluster and a shared-memory segment, ended by SIGKILL; what
    it held just before the kill (each seen there then): its registry entry, its TLS folder, its
    lease and its segment. A tidy-up may remove them as soon as the kernel is gone."""
    import signal

    from support import kernel_factory, run_cell, spawned_workers, undertaker_of, wait_gone

    from gpudask_jupyter.cluster.room import proof

    with kernel_factory(runtime) as start:
        km, kc = start()
        reply = run_cell(
            kc,
            "%load_ext gpudask_jupyter\n"
            "client = %gpu_cluster start --n-workers 1 --memory-limit 1GB\n"
            "import os\n"
            "from gpudask_jupyter.convert.distribute import shared_memory\n"
            "segments = shared_memory.Segments().__enter__()\n"
            "print('SEGMENT', os.path.basename(segments.create()))",
        )
        assert reply["status"] == "ok", reply["output"]
        segment = reply["output"].split("SEGMENT ")[1].split()[0]
        pid = km.provisioner.process.pid
        held = [
            f"gpudask-kernel-{km.kernel_id}.json",
            f"gpudask-kernel-{km.kernel_id}-tls",
            f"{proof.pid_namespace()}-{pid}.lease.json",  # its PID namespace and pid
            segment,
        ]
        assert _still_there(runtime, room, held) == held  # all there while the kernel lives
        workers = spawned_workers(pid)
        undertaker_of(pid).kill()  # every process of the kernel killed at once
        os.kill(pid, signal.SIGKILL)
        km.provisioner.process.wait(timeout=10)
        assert wait_gone(workers) == []
    return held


def _still_there(runtime: Path, room: Path, names: list[str]) -> list[str]:
    from gpudask_jupyter.convert.distribute import shared_memory

    here = {p.name for p in runtime.iterdir()} | {p.name for p in room.glob("*/*")}
    here |= set(shared_memory.ours())
    return [name for name in names if name in here]


async def test_the_server_removes_what_a_killed_kernel_left(
    quick_tidy: None, room_env: Path, jp_serverapp: Any
) -> None:
    """No next kernel of the user loads the extension: the server's own tidy-up removes the
    killed kernel's entry, its TLS folder (the cluster's private key), its lease and its
    shared-memory segment."""
    import dask.config

    loop = asyncio.get_running_loop()
    runtime = Path(os.environ["JUPYTER_RUNTIME_DIR"])
    # the server's room is the kernels' (dask may have read the environment before the fixture)
    with dask.config.set({"gpudask.room-dir": str(room_env)}):
        left = await loop.run_in_executor(None, _killed_kernel_leftovers, runtime, room_env)
        deadline = time.monotonic() + 10
        while _still_there(runtime, room_env, left):
            assert time.monotonic() < deadline, _still_there(runtime, room_env, left)
            await asyncio.sleep(0.1)
