"""The server extension against a real jupyter_server: auth, authorization, frames, registry."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError

from gpudask_jupyter import registry
from gpudask_jupyter.frame import VERSION
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
