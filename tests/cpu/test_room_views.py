"""The room in the views' frames, from real lease files in a room directory of the test's own (the
GPUs through the room's test seam): the viewer's own lease marked "you", other students as counts
unless the room-names option shows names, no room part where there is no room, a room that
cannot be read said in a sentence, and the room read every few seconds on the monitor's thread."""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dask.config
import pytest
from room_locks import StandIn, write_held
from support import use_stand_in_room

from gpudask_jupyter.cluster.room import frame_part, holder, holding, measure, reading
from gpudask_jupyter.cluster.room.leases import Lease, RoomDir, Share
from gpudask_jupyter.machine import nvml, processes
from gpudask_jupyter.monitor import THREAD_NAME, Monitor
from gpudask_jupyter.monitor.room_watch import READ_EVERY, RoomParts
from gpudask_jupyter.registry.kernel_id import kernel_id
from gpudask_jupyter.text.units import format_bytes
from gpudask_jupyter.widget.shared_monitor import KEY, kernel_room

pytest_plugins = ["pytest_jupyter.jupyter_server"]

GiB = 2**30
MiB = 2**20
#: what each holder's two CUDA contexts take off a GPU (placement.CONTEXT_RESERVE, twice)
CONTEXTS = 2 * 512 * MiB
#: uids of the other students (root writes their leases and gives the files to them)
ALICE, BOB = 4_242_001, 4_242_002


@pytest.fixture
def room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RoomDir]:
    """A shared machine with two 16 GiB GPUs (the test seam), planned for four students (the
    shares the leases name are the ones shown), and an empty room directory."""
    use_stand_in_room(monkeypatch, "2:16GiB")
    directory = RoomDir(tmp_path / "room")
    assert directory.prepare(), directory.problem
    options = {
        "gpudask.room-dir": str(directory.path),
        "gpudask.shared-machine": True,
        "gpudask.room-gpus": 1,  # the tests' conftest turns the room off
        "gpudask.room-names": "none",
        "gpudask.room-students": 4,
    }
    with dask.config.set(options):
        yield directory


NOTEBOOK = "02_pandas_to_cudf.ipynb"


@pytest.fixture
def other_process() -> Iterator[StandIn]:
    """A live process of this user that is not this one, holding the lock of the leases that
    name it: another kernel, started as Jupyter's server starts a notebook's kernel (its
    notebook in the environment)."""
    child = StandIn(env={**os.environ, "JPY_SESSION_NAME": f"course/{NOTEBOOK}"})
    try:
        yield child
    finally:
        child.stop()


@pytest.fixture
def student() -> Iterator[Callable[[int], StandIn]]:
    """Kernels of other students: a process of account ``uid`` each (made by root)."""
    made: list[StandIn] = []

    def make(uid: int) -> StandIn:
        made.append(StandIn(uid=uid))
        return made[-1]

    yield make
    for process in made:
        process.stop()


def write_lease(
    room: RoomDir,
    kernel_process: int | StandIn,
    kernel: str,
    gpu: int,
    share: int,
    idle_for: float = 5.0,
    uid: int | None = None,
    user: str = "me",
    elastic: bool = False,
) -> Lease:
    """A lease file as a kernel writes it (``uid``: another user's, in a folder given to them:
    needs root)."""
    device = holder.room_devices()[gpu]
    now = time.time()
    pid = kernel_process if isinstance(kernel_process, int) else kernel_process.pid
    lease = Lease(
        os.getuid() if uid is None else uid,
        user,
        pid,
        processes.process_started(pid) or 0,
        kernel,
        [Share(device.uuid, device.index, share)],
        now - 60,
        now - idle_for,
        elastic=elastic,
    )
    theirs = room if uid is None else RoomDir(room.path, uid=uid)
    if uid is not None:
        os.chown(theirs.folder(), uid, -1)
    if isinstance(kernel_process, StandIn):
        kernel_process.hold(theirs.folder())
        path = theirs.write(lease)
    else:
        path = write_held(theirs, lease)
    if uid is not None:
        os.chown(path, uid, -1)
    return lease


def kernel_frame(room_read: Any = kernel_room) -> dict[str, Any]:
    """The frame a panel of this kernel gets after one tick (no cluster)."""
    monitor = Monitor(lambda: {}, room=room_read)
    try:
        monitor.tick()
        frame, _ = monitor.frame(KEY)
    finally:
        monitor.stop()
    json.dumps(frame)  # what the widget sends
    return dict(frame)


def unknown_use() -> int | None:
    """A holder's memory in use on the seam's GPUs: unknown without NVML; with it, none of the
    real GPU's processes is on a made-up GPU."""
    return 0 if nvml.status().available else None


def test_the_panels_frame_carries_the_room_from_its_lease_files(
    room: RoomDir, other_process: StandIn
) -> None:
    write_lease(room, os.getpid(), kernel_id(), gpu=0, share=3 * GiB, idle_for=5)
    write_lease(room, other_process, "k-other", gpu=1, share=2 * GiB, idle_for=3600)
    before = time.time()
    frame = kernel_frame()
    part = frame["room"]
    assert part["names"] is False and part["idle_after"] == 600
    first, second = part["gpus"]
    devices = holder.room_devices()
    assert (first["id"], first["label"], first["name"]) == (devices[0].uuid, "0", "room test GPU")
    assert first["memory_total"] == 16 * GiB
    assert first["holders"] == 1 and first["others"] == 0
    assert first["not_promised"] == 16 * GiB - 3 * GiB - CONTEXTS  # 12 GiB
    (you,) = first["shown"]
    assert you["who"] == "you" and you["you"] is True
    assert you["share"] == 3 * GiB and you["used"] == unknown_use()
    assert abs(you["last_work"] - (before - 5)) < 1.5
    assert you["idle"] is False and you["above"] is False
    assert you["relied_on"] is None  # a planned room: the share itself is promised
    # the same user's other kernel: shown, not as the kernel this panel follows, and idle
    (mine,) = second["shown"]
    assert mine["who"] == f"you ({NOTEBOOK})" and mine["you"] is False
    assert mine["idle"] is True and mine["share"] == 2 * GiB
    assert second["not_promised"] == 16 * GiB - 2 * GiB - CONTEXTS
    assert frame["messages"] == []


def test_the_sidebar_marks_the_notebook_in_focus_as_you(
    room: RoomDir, other_process: StandIn
) -> None:
    from gpudask_jupyter.server.registry_monitor import server_room

    write_lease(room, other_process, "k-focus", gpu=1, share=4 * GiB)
    parts = server_room(time.time())
    assert parts is not None
    focused = parts("k-focus")["gpus"][1]["shown"][0]
    assert (focused["who"], focused["you"]) == ("you", True)
    elsewhere = parts("k-another")["gpus"][1]["shown"][0]
    assert (elsewhere["who"], elsewhere["you"]) == (f"you ({NOTEBOOK})", False)


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"gpudask_jupyter": True},
            "allow_unauthenticated_access": False,
        }
    }


async def test_the_sidebars_route_serves_the_room_of_the_notebook_in_focus(
    jp_fetch: Any, room: RoomDir, other_process: StandIn
) -> None:
    from gpudask_jupyter.server import registry_monitor

    write_lease(room, other_process, "k-focus", gpu=0, share=4 * GiB)
    try:
        deadline = time.monotonic() + 30
        while True:
            params = {"kernel": "k-focus", "cursor": "", "interval": "0.25"}
            reply = await jp_fetch("gpudask", "api", "frame", params=params)
            frame = json.loads(reply.body)["frame"]
            if frame["room"] is not None:
                break
            assert time.monotonic() < deadline, frame["messages"]
            await asyncio.sleep(0.2)
    finally:
        registry_monitor.stop_server_monitor()
    assert frame["cluster"] is None  # a kernel without a cluster still sees the room
    first, second = frame["room"]["gpus"]
    assert [(h["who"], h["you"], h["share"]) for h in first["shown"]] == [("you", True, 4 * GiB)]
    assert first["holders"] == 1 and second["holders"] == 0 and second["shown"] == []
    assert second["not_promised"] == 16 * GiB


needs_root = pytest.mark.skipif(
    os.getuid() != 0,
    reason="another user's lease file is theirs: only root can make one (CI runs as root)",
)


@needs_root
def test_a_student_sees_other_students_as_counts_an_instructor_by_name(
    room: RoomDir, student: Callable[[int], StandIn]
) -> None:
    alice, bob = student(ALICE), student(BOB)
    write_lease(room, os.getpid(), kernel_id(), gpu=0, share=3 * GiB)
    write_lease(room, alice, "k-alice", 0, 3 * GiB, idle_for=3600, uid=ALICE, user="alice")
    write_lease(room, bob, "k-bob", 0, 3 * GiB, idle_for=10, uid=BOB, user="bob")
    frame = kernel_frame()
    gpu = frame["room"]["gpus"][0]
    assert gpu["holders"] == 3 and [h["who"] for h in gpu["shown"]] == ["you"]
    assert (gpu["others"], gpu["others_idle"], gpu["others_above"]) == (2, 1, 0)
    assert gpu["not_promised"] == 16 * GiB - 3 * (3 * GiB + CONTEXTS)
    text = json.dumps(frame)
    for secret in ("alice", "bob", "k-alice", "k-bob", str(ALICE), str(alice.pid)):
        assert secret not in text, secret

    with dask.config.set({"gpudask.room-names": f"teacher,{getpass.getuser()}"}):
        frame = kernel_frame()
    gpu = frame["room"]["gpus"][0]
    assert frame["room"]["names"] is True
    assert [(h["who"], h["you"], h["idle"]) for h in gpu["shown"]] == [
        ("you", True, False),
        ("alice", False, True),
        ("bob", False, False),
    ]
    assert gpu["others"] == 0 and gpu["holders"] == 3


def test_holders_above_their_share_are_counted_or_named() -> None:
    """Memory in use needs NVML's process list: given here as NVML would give it."""
    devices = [nvml.Device(0, "GPU-test-0", "test GPU", 16 * GiB)]
    now = time.time()
    me = processes.process_started(os.getpid()) or 0
    uuid = devices[0].uuid
    own = Lease(os.getuid(), "me", os.getpid(), me, "k-me", [Share(uuid, 0, 2 * GiB)], now, now)
    alice = Lease(ALICE, "alice", 3999999, 0, "k-a", [Share(uuid, 0, GiB)], now, now - 30)
    # within the share; above 1 GiB and its contexts
    used = {os.getpid(): GiB, 3999999: 3 * GiB}
    memory = measure.traced({uuid: holding.GpuMemory(uuid, 16 * GiB, 4 * GiB, used)})
    for names in (False, True):
        with dask.config.set({"gpudask.room-students": 2}):  # the shares the leases name
            built = reading.build(devices, [own, alice], memory, now, names, "room")
        gpu = frame_part.part(built, "k-me", now)["gpus"][0]
        you = gpu["shown"][0]
        assert (you["who"], you["used"], you["above"]) == ("you", GiB, False)
        if names:
            assert gpu["others"] == 0
            assert (gpu["shown"][1]["who"], gpu["shown"][1]["used"]) == ("alice", 3 * GiB)
            assert gpu["shown"][1]["above"] is True and gpu["shown"][1]["idle"] is False
        else:
            assert len(gpu["shown"]) == 1
            assert (gpu["others"], gpu["others_above"], gpu["others_idle"]) == (1, 1, 0)


def test_no_room_no_part(room: RoomDir, tmp_path: Path) -> None:
    # a room directory without a lease: nobody holds a share
    assert kernel_frame()["room"] is None
    write_lease(room, os.getpid(), kernel_id(), gpu=0, share=GiB)
    assert kernel_frame()["room"] is not None
    # a machine nobody else uses, or where the room is turned off: the views do not change
    with dask.config.set({"gpudask.shared-machine": False}):
        assert kernel_frame()["room"] is None
    with dask.config.set({"gpudask.room-gpus": 0}):
        assert kernel_frame()["room"] is None
    # no room directory at all
    with dask.config.set({"gpudask.room-dir": str(tmp_path / "nowhere")}):
        frame = kernel_frame()
    assert frame["room"] is None and frame["messages"] == []
    # a monitor of a host that shows no room (the text snapshot's)
    assert kernel_frame(room_read=None)["room"] is None


def test_a_room_that_cannot_be_read_is_said_in_a_sentence(
    room: RoomDir, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    write_lease(room, os.getpid(), kernel_id(), gpu=0, share=GiB)
    monkeypatch.setenv("GPUDASK_ROOM_TEST_GPUS", "two:16GiB")  # an inventory the room cannot read
    caplog.set_level(logging.DEBUG, logger="gpudask_jupyter.monitor.room_watch")
    frame = kernel_frame()
    assert frame["room"] is None
    (message,) = frame["messages"]
    assert message.startswith("The room cannot be read now (ValueError: ")
    assert message.endswith("; see the log.")
    logged = [r for r in caplog.records if r.name == "gpudask_jupyter.monitor.room_watch"]
    assert [r.levelname for r in logged] == ["WARNING"] and logged[0].exc_info


def test_the_room_is_read_every_few_seconds_on_the_monitors_thread(room: RoomDir) -> None:
    write_lease(room, os.getpid(), kernel_id(), gpu=0, share=GiB)
    threads: list[str] = []

    def read(now: float) -> RoomParts | None:
        threads.append(threading.current_thread().name)
        return kernel_room(now)

    monitor = Monitor(lambda: {}, room=read)
    frames: list[dict[str, Any]] = []
    token = monitor.subscribe(lambda: frames.append(dict(monitor.frame(KEY)[0])), interval=0.25)
    try:
        deadline = time.monotonic() + 10
        while len(frames) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        monitor.unsubscribe(token)
        monitor.stop()
    assert len(frames) >= 6  # six ticks, a quarter of a second apart
    assert READ_EVERY >= 2 and threads == [THREAD_NAME]  # one reading, on the monitor's thread
    assert all(f["room"]["gpus"][0]["shown"][0]["who"] == "you" for f in frames)


def test_elastic_shares_are_shown_as_the_machine_measures_them(
    room: RoomDir, other_process: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no plan, each holder's share is what every holder computes from what the machine
    shows: a lease's own figures (here a share of the whole GPU) count for nothing."""
    device = holder.room_devices()[0]
    write_lease(room, os.getpid(), kernel_id(), gpu=0, share=GiB, elastic=True)
    write_lease(room, other_process, "k-greedy", gpu=0, share=16 * GiB, elastic=True)
    seam = tmp_path / "memory.json"
    seam.write_text(json.dumps({device.uuid: {"processes": {str(other_process.pid): 10 * GiB}}}))
    monkeypatch.setenv("GPUDASK_ROOM_TEST_MEMORY", str(seam))
    with dask.config.set({"gpudask.room-students": 0}):
        gpu = kernel_frame()["room"]["gpus"][0]
    shares = {h["who"]: h["share"] for h in gpu["shown"]}
    greedy = 10 * GiB - CONTEXTS // 2  # what its process holds, its context set aside
    # both kernels are this account's: its contexts are set aside once, for the processes
    # NVML shows (one) and never fewer than a kernel's and a worker's
    usable = 16 * GiB - CONTEXTS
    assert shares == {"you": usable - greedy, f"you ({NOTEBOOK})": greedy}
    assert gpu["not_promised"] == 16 * GiB - greedy - CONTEXTS
    with dask.config.set({"gpudask.room-students": 0}):
        text = str(reading.table(reading.read()))  # %gpu_cluster room says it too
    assert f"{format_bytes(greedy)} lent ({format_bytes(greedy)} relied on)" in text, text
    # lent shares say what each holder can rely on whoever comes: its own holding here
    relied = {h["who"]: h["relied_on"] for h in gpu["shown"]}
    assert relied[f"you ({NOTEBOOK})"] == greedy, relied
    assert all(
        isinstance(v, int) and 0 <= v <= h
        for v, h in zip(relied.values(), shares.values(), strict=True)
    )
