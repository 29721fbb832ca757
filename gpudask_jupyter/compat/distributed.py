"""The private parts of distributed this package calls, in the client and inside the scheduler.

The scheduler-side functions run inside a Dask scheduler: :mod:`..monitor.scheduler_probe` calls
them there, and both travel by value (``scheduler_probe.ship_by_value``), so a scheduler elsewhere
needs only dask and distributed. They read the scheduler's state objects, which distributed
documents for its developers but does not promise to keep.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

DISTRIBUTION = "distributed"
BOUNDED = "Client.sync(asynchronous=..., callback_timeout=...) behind Client.run_on_scheduler"
RUN = "Client.run(..., on_error=...) through Client.sync"
RETIRE = "Client.retire_workers(**kwargs) through Client.sync"
HANDSHAKE = "Comm.handshake_info() and Comm.handshake_configuration(local, remote)"
FRAMES = "a TCP message's start: its length, then its number of frames (8-byte integers)"
RUN_FUNCTION = "the scheduler's run_function handler"
SCHEDULER = "the scheduler's state (task groups and prefixes, workers, tasks, unrunnable, ...)"
TASK_STREAM = "Scheduler._task_stream_plugin()"
TRANSITION = "Scheduler.transition(key, finish, stimulus_id=...) and .transitions"
NANNY_NAME = "Nanny.name"
SLOTS = "Security.__slots__"
DEFAULTS = "distributed.yaml beside the package"
NANNY_SEED = "the nanny's hash seed 6640 and its parent's pid variable"
PRELOAD = "distributed.utils._forkserver_preload_set"


#: how many bytes start a Dask message over TCP: its total length, then its number of frames,
#: two 64-bit integers (``TCP.read`` reads the first, ``protocol.utils.unpack_frames`` the
#: second; probed as :data:`FRAMES`)
FRAME_HEADER = 16
#: the most a first message (the handshake, a few small fields) is taken to be
MAX_HANDSHAKE = 2**20


def starts_a_message(first: bytes) -> bool:
    """Whether ``first`` (at least :data:`FRAME_HEADER` bytes) starts a Dask message: a small
    total length, then a frame count of a few, in either byte order. Standard library only:
    the Jupyter server asks it too."""
    import struct

    if len(first) < FRAME_HEADER:
        return False
    for order in "<>":
        total, frames = struct.unpack(f"{order}QQ", first[:FRAME_HEADER])
        if 8 <= total <= MAX_HANDSHAKE and 1 <= frames <= 64:
            return True
    return False


def _frame_header() -> None:
    """Raise unless distributed's TCP comm still reads a message's length, then its frame
    count, as 8-byte integers (what :func:`starts_a_message` expects)."""
    from distributed.comm.tcp import TCP
    from distributed.protocol.utils import unpack_frames

    # lazy: this module travels by value to schedulers, where the package may not be installed
    from .probing import source_holds

    source_holds(TCP.read, 'fmt = "Q"')
    source_holds(unpack_frames, 'fmt = "Q"')


def needs() -> list[tuple[str, Any, str]]:
    """What this module calls, each with a check and what is done without it. (The probe's
    helpers are imported here, not at the top: this module travels by value to schedulers,
    where this package may not be installed.)"""
    import importlib.util
    from pathlib import Path

    from distributed import Client, Nanny, Security
    from distributed.comm.core import Comm
    from distributed.scheduler import Scheduler, SchedulerState, TaskGroup, TaskState, WorkerState

    # lazy: as above (the module travels by value)
    from .probing import sets, source_holds, takes

    def bounded() -> None:
        takes(Client.sync, 1, ("asynchronous", "callback_timeout"))
        source_holds(Client.run_on_scheduler, "self.sync(")

    def state() -> None:
        for name in ("task_groups", "task_prefixes", "workers", "tasks", "unrunnable"):
            sets(SchedulerState, name)
        sets(Scheduler, "idle_since")
        for name in ("states", "prefix"):
            sets(TaskGroup, name)
        for name in ("executing", "identity", "pid", "resources"):
            sets(WorkerState, name)
        for name in ("resource_restrictions", "prefix", "state", "dependencies"):
            sets(TaskState, name)

    def defaults() -> None:
        spec = importlib.util.find_spec("distributed")
        if spec is None or spec.origin is None:
            raise FileNotFoundError("distributed")
        if not Path(spec.origin).with_name("distributed.yaml").is_file():
            raise FileNotFoundError("distributed.yaml")

    def nanny_seed() -> None:
        from distributed import proctitle

        source_holds(Nanny.__init__, f'"{NANNY_HASH_SEED}"')
        source_holds(proctitle, PARENT_PID)

    def preload() -> None:
        import distributed.utils

        getattr(distributed.utils, "_forkserver_preload_set")  # noqa: B009

    views = "the panel's task stream, progress and worker views stay empty for this cluster"
    spawned = "a start's workers are spawned, as they were before the fork server"
    stop = "calls to a scheduler cannot be bounded in time, so they are not made"
    return [
        (BOUNDED, bounded, stop),
        (RUN, lambda: source_holds(Client.run, "on_error=on_error"), stop),
        (RETIRE, lambda: source_holds(Client.retire_workers, "**kwargs"), stop),
        (HANDSHAKE, lambda: takes(Comm.handshake_configuration, 2), views),
        (
            FRAMES,
            _frame_header,
            "attach and join take a Dask scheduler for something else, and say so, until "
            "distributed's own handshake answers",
        ),
        (RUN_FUNCTION, lambda: sets(Scheduler, "run_function"), views),
        (SCHEDULER, state, views),
        (TASK_STREAM, lambda: takes(Scheduler._task_stream_plugin, 1), views),
        (
            TRANSITION,
            lambda: takes(Scheduler.transition, 3, ("stimulus_id",)),
            "a lost partition's tasks wait for a worker instead of failing at once",
        ),
        (NANNY_NAME, lambda: sets(Nanny, "name"), "%gpu_cluster join names its workers by GPU"),
        (SLOTS, lambda: tuple(Security.__slots__), "a cluster's TLS settings cannot travel"),
        (DEFAULTS, defaults, spawned),
        (NANNY_SEED, nanny_seed, spawned),
        (PRELOAD, preload, spawned),
    ]


def run_on_scheduler(client: Any, function: Any, timeout: float, **kwargs: Any) -> Any:
    """Run ``function(dask_scheduler=..., **kwargs)`` in the scheduler, bounded by ``timeout``.

    ``Client.run_on_scheduler`` is public and hands its extra keywords to ``Client.sync``, whose
    ``callback_timeout`` (not documented; probed) bounds the whole round trip.
    """
    return client.run_on_scheduler(function, callback_timeout=timeout, **kwargs)


def submit_on_scheduler(client: Any, function: Any, timeout: float, **kwargs: Any) -> Any:
    """Start ``function(dask_scheduler=..., **kwargs)`` in the scheduler without waiting: a
    ``concurrent.futures.Future`` of its result, failed with ``TimeoutError`` after ``timeout``.

    ``Client.run_on_scheduler`` with ``asynchronous=True`` (a keyword of ``Client.sync``, which
    it hands its extra keywords to; probed) gives the coroutine, run here on the client's own
    event loop (``Client.loop.asyncio_loop``), so the caller's thread is never blocked by a
    scheduler that does not answer.
    """
    import asyncio

    loop = client.loop.asyncio_loop  # before the coroutine: a closed client has no loop

    async def bounded() -> Any:
        call = client.run_on_scheduler(function, asynchronous=True, **kwargs)
        return await asyncio.wait_for(call, timeout)

    return asyncio.run_coroutine_threadsafe(bounded(), loop)


async def open_comm(address: str, timeout: float, connection_args: dict[str, Any]) -> Any:
    """A comm to the Dask server at ``address``, the handshake included, within ``timeout``.

    ``distributed.comm.connect`` bounds the connection but not the handshake that follows (it
    waits for the peer's first message without a limit): a port that accepts and stays silent,
    or a paused scheduler, would hold it for ever, and cancelling it leaves the socket to the
    garbage collector. So this does what it does in bounded steps and aborts the comm on any
    failure: the backend's ``Connector.connect`` (the public backend interface) and the
    handshake of ``Comm.handshake_info`` / ``Comm.handshake_configuration`` and the
    ``remote_info`` / ``local_info`` / ``handshake_options`` attributes (probed).
    """
    import asyncio
    import time

    from distributed.comm import registry
    from distributed.comm.addressing import parse_address

    deadline = time.monotonic() + timeout
    scheme, location = parse_address(address)
    connector = registry.get_backend(scheme).get_connector()
    comm = await asyncio.wait_for(
        connector.connect(location, deserialize=True, **connection_args), timeout
    )
    try:
        local = comm.handshake_info()
        await asyncio.wait_for(comm.write(local), max(0.0, deadline - time.monotonic()))
        remote = await asyncio.wait_for(comm.read(), max(0.0, deadline - time.monotonic()))
        if not isinstance(remote, dict):
            raise OSError(f"{address} does not speak Dask's protocol")
        comm.remote_info = {**remote, "address": comm.peer_address}
        comm.local_info = {**local, "address": comm.local_address}
        comm.handshake_options = comm.handshake_configuration(comm.local_info, comm.remote_info)
    except BaseException:
        comm.abort()
        raise
    return comm


async def run_on_comm(comm: Any, function: Any, **kwargs: Any) -> Any:
    """``function(dask_scheduler=..., **kwargs)`` run in the scheduler at the other end of
    ``comm``, through the scheduler's ``run_function`` handler, as ``Client.run_on_scheduler``
    sends it (a message of the private handler's arguments, the function and its keyword
    arguments pickled with ``distributed.protocol.pickle``). The
    caller bounds it in time and aborts the comm when it fails."""
    from distributed.core import clean_exception
    from distributed.protocol.pickle import dumps

    message = {
        "op": "run_function",
        "function": dumps(function),
        "args": dumps(()),
        "kwargs": dumps(kwargs),
        "wait": True,
        "reply": True,
    }
    await comm.write(message)
    response = await comm.read()
    if not isinstance(response, dict):
        raise OSError("the scheduler's answer is not a message")
    if response.get("status") == "OK":
        return response.get("result")
    _, exc, tb = clean_exception(**response)
    if exc is None:
        raise OSError("the scheduler answered with an error it did not name")
    raise exc.with_traceback(tb)


def retire_workers(client: Any, workers: list[str], timeout: float) -> dict[str, Any]:
    """Retire ``workers`` gracefully (the scheduler copies the data only they hold to its other
     workers, then closes them), bounded by ``timeout``: the workers retired, by address.

     ``Client.retire_workers`` is public but takes no timeout of its own; it passes its extra
     keywords to ``Client.sync``, whose ``callback_timeout`` bounds the whole round trip
    , as for :func:`run_on_scheduler`. The scheduler carries on
     after a timeout; what it has not moved by then is lost with the workers.
    """
    retired = client.retire_workers(workers=workers, close_workers=True, callback_timeout=timeout)
    return dict(retired or {})


def run_on_workers(client: Any, function: Any, timeout: float, *args: Any) -> dict[str, Any]:
    """``function(*args)`` on every worker, bounded by ``timeout``: address → result, or the
    exception that worker raised.

    ``Client.run`` takes no timeout of its own; it hands its extra keywords to ``Client.sync``,
    whose ``callback_timeout`` bounds the round trip, as for :func:`run_on_scheduler`.
    """
    result: dict[str, Any] = client.run(
        function, *args, on_error="return", callback_timeout=timeout
    )
    return result


# -- distributed, inside the scheduler ---------------------------------------------------------
#
# These run inside a Dask scheduler: :mod:`.monitor.scheduler_probe` calls them there, and both
# modules travel by value (``scheduler_probe.ship_by_value``), so a scheduler elsewhere needs only
# dask and distributed. They read the scheduler's state objects, which distributed documents for
# its developers but does not promise to keep.


def task_stream_plugin(scheduler: Any) -> Any:
    """The scheduler's task-stream plugin, installed on first use.

    ``Scheduler._task_stream_plugin`` is private: it returns the ``TaskStreamPlugin`` whose
    ``buffer`` (a deque of task records, each with its ``startstops``) and ``index`` (records
    seen since start) the dashboard's own task stream reads.
    """
    return scheduler._task_stream_plugin()


def task_group_states(scheduler: Any) -> Iterator[tuple[str, Mapping[str, int]]]:
    """(prefix name, tasks by state) of every task group: ``Scheduler.task_groups`` (name →
    ``TaskGroup``), ``TaskGroup.states`` and ``TaskGroup.prefix.name``."""
    for group in list(scheduler.task_groups.values()):
        yield group.prefix.name, group.states


def executing_prefixes(scheduler: Any) -> Iterator[str]:
    """The prefix name of each task a worker said it was running at its last heartbeat:
    ``WorkerState.executing`` (``TaskState`` → seconds) and ``TaskState.prefix.name``."""
    for ws in list(scheduler.workers.values()):
        for ts in list(ws.executing):
            yield ts.prefix.name


def worker_identities(scheduler: Any) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """(address, identity as ``scheduler_info()`` gives it, process id) of every worker:
    ``Scheduler.workers`` (address → ``WorkerState``), ``WorkerState.identity()`` and ``.pid``."""
    for address, ws in list(scheduler.workers.items()):
        yield address, ws.identity(), getattr(ws, "pid", None)


def offered_resources(scheduler: Any) -> Iterator[Mapping[str, Any]]:
    """The resources each worker offers: ``WorkerState.resources``."""
    for ws in list(scheduler.workers.values()):
        yield ws.resources or {}


def idle_since(scheduler: Any) -> float | None:
    """When the scheduler last ran out of work (None: it has work now): ``Scheduler.idle_since``,
    which its own periodic ``check_idle`` keeps."""
    value = getattr(scheduler, "idle_since", 0.0)
    return None if value is None else float(value)


def worker_count(scheduler: Any) -> int:
    """``len(Scheduler.workers)``."""
    return len(scheduler.workers)


def unrunnable_restrictions(scheduler: Any) -> Iterator[Mapping[str, Any]]:
    """The resources each task in the "no-worker" state asks for: ``Scheduler.unrunnable`` (its
    ``TaskState`` objects) and ``TaskState.resource_restrictions``."""
    for ts in list(scheduler.unrunnable):
        yield ts.resource_restrictions or {}


def fail_unrunnable(dask_scheduler: Any, keys: list[Any], message: str) -> list[Any]:
    """Fail those of ``keys`` that can no longer run (restricted to a worker that left: the
    "no-worker" state, or waiting for a dependency in that state), with
    ``RuntimeError(message)``; the keys failed.

    What ``Scheduler._check_unrunnable_task_timeouts`` does to a task whose restrictions stay
    unmet (the ``no-workers-timeout`` option), for these keys and what they wait for, at once:
    ``Scheduler.transition(key, "erred", exception=..., cause=key, ...)``, then
    ``Scheduler.transitions`` on what that recommends; ``TaskState.state`` and
    ``.dependencies``. The dependents fail with the same exception,
    now and whenever they are submitted again.
    """
    import pickle
    import time

    stimulus_id = f"gpudask-lost-partition-{time.time()}"
    unrunnable = ("no-worker", "released", "queued")
    stack = [dask_scheduler.tasks.get(key) for key in keys]
    seen: set[Any] = set()
    targets = []
    while stack:
        ts = stack.pop()
        if ts is None or ts.key in seen:
            continue
        seen.add(ts.key)
        if ts.state in unrunnable:
            targets.append(ts.key)
        elif ts.state == "waiting":  # for a dependency that lived on the same worker
            stack.extend(ts.dependencies)
    recommendations: dict[Any, Any] = {}
    for key in targets:
        if dask_scheduler.tasks[key].state not in unrunnable:
            continue  # already failed, with a dependency failed above
        recommendations.update(
            dask_scheduler.transition(
                key,
                "erred",
                exception=pickle.dumps(RuntimeError(message)),
                exception_text=message,
                cause=key,
                stimulus_id=stimulus_id,
            )
        )
    dask_scheduler.transitions(recommendations, stimulus_id=stimulus_id)
    failed = []
    for key in keys:
        ts = dask_scheduler.tasks.get(key)
        if ts is not None and ts.state == "erred":
            failed.append(key)
    return failed


def name_nanny(nanny: Any, name: str) -> None:
    """Give a nanny that has not started its worker yet that worker's name: ``Nanny.name``, which
    the nanny passes to its worker when it starts it."""
    nanny.name = name


def security_settings(security: Any) -> dict[str, Any]:
    """The settings of a ``distributed.Security`` (its files, ciphers, requirements) by name,
    as ``Security.__slots__`` lists them: what a copy of it made
    elsewhere needs, without what it made from them."""
    from distributed import Security

    return {name: getattr(security, name) for name in Security.__slots__}


#: the hash seed a nanny gives its workers where the configuration names none or "0" (set inline
#: in ``Nanny.__init__``, probed)
NANNY_HASH_SEED = "6640"
#: the variable by which ``distributed.proctitle`` names a worker's parent (probed)
PARENT_PID = "__DASK_PARENT_PID"


def setting_before_import(key: str) -> Any:
    """A setting of distributed's read before distributed is imported: its defaults file
    (``distributed.yaml`` beside the package, which ``distributed.config`` merges into dask's
    configuration as it is imported; probed) under the user's dask configuration.
    None where distributed is not installed or the key has no value."""
    import dask.config

    defaults = _defaults_file()
    if defaults is None:
        return None
    merged = dask.config.merge(defaults, dask.config.config)
    return dask.config.get(key, default=None, config=merged)


def nanny_environ(parent_pid: int) -> dict[str, str]:
    """What a nanny adds to its own process's environment before it starts a worker process,
    foreseen before distributed is imported: ``distributed.nanny.pre-spawn-environ`` (a
    variable already set wins), the hash seed ``Nanny.__init__`` adds, and the parent's pid
    ``distributed.proctitle`` sets."""
    import os

    wanted = setting_before_import("distributed.nanny.pre-spawn-environ") or {}
    env = {k: os.environ.get(k, str(v)) for k, v in wanted.items() if v is not None}
    if env.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = NANNY_HASH_SEED
    env[PARENT_PID] = str(parent_pid)
    return env


@functools.cache
def _defaults_file() -> dict[str, Any] | None:
    """distributed's defaults file, read once (every start asks it; it does not change)."""
    import importlib.util
    from pathlib import Path

    import yaml

    spec = importlib.util.find_spec("distributed")
    if spec is None or spec.origin is None:
        return None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where built: 10x faster
    text = Path(spec.origin).with_name("distributed.yaml").read_text()
    return dict(yaml.load(text, Loader=loader))


def keep_forkserver_preload() -> None:
    """Keep distributed from choosing the fork server's preload: the first time it makes a
    process with the ``forkserver`` method, ``distributed.utils.get_mp_context`` imports a list
    of packages into the calling process (pandas among them: a third of a second, on a start's
    path) and makes that list the preload, unless its flag ``_forkserver_preload_set`` says it
    did already (private). The preload set here stays."""
    import distributed.utils

    distributed.utils._forkserver_preload_set = True  # type: ignore[attr-defined]
