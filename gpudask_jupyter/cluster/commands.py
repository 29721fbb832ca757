"""What each ``%gpu_cluster`` subcommand does to the kernel's session, as one operation that
Ctrl-C cannot cut in half (:mod:`.operations`).

A ``start``, ``attach`` or ``join`` first checks everything it can before anything stops or
starts (:func:`plan_start`, :func:`plan_attach`, :func:`plan_join`): a refused request, with
``--replace`` or without, changes nothing, and the running cluster keeps what it holds. Only then
is the old session closed and the new one made. ``stop``, ``scale`` and ``restart`` run as
operations too: interrupted, they finish on their own thread, and the next command waits for them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from ..machine.local_users import shared_machine
from . import gateway, logs, operations, room, security
from .connect import check_answers
from .join import Retirement
from .options import (
    ATTACH_TIMEOUT,
    LEAVE_TIMEOUT,
    StartOptions,
    Warn,
    check_listen_host,
    resolve_workers,
)
from .room import holder as room_holder
from .session import ClusterSession, JoinPlan, KernelCluster, StartPlan
from .target import AttachTarget


def stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def keep_current(
    kernel: KernelCluster, asked: str, replace: bool, warn: Warn = stderr
) -> ClusterSession | None:
    """The rule for a second ``start``, ``attach`` or ``join`` (``asked``): a live session is
    kept, and the user told how to replace it, unless ``replace``. Returns the kept session (the
    request is refused), or None (go ahead: plan the new one, then close it)."""
    session = kernel.current()
    if session is not None and session.alive and not replace:
        warn(
            f"A cluster is already running in this kernel ({session.mode}, scheduler "
            f"{session.address}); nothing was changed. Use %gpu_cluster stop first, "
            f"or {asked} --replace."
        )
        return session
    return None


def plan_start(opts: StartOptions, warn: Warn = stderr) -> StartPlan:
    """Every check of a start, before anything stops or starts: who may reach it (TLS, the
    address, the protocol), the GPUs or the CPU fallback, the worker count, whether this
    machine can listen on ``--host``, and on a shared machine the kernel's place in the room.
    A :class:`~..errors.GpuDaskError` here changes nothing (a lease it took is given back by
    :func:`room.undone_on_failure` around it)."""
    access = security.decide(opts)
    devices, reason = resolve_workers(opts, warn)
    check_listen_host(opts.host)
    held, devices, worker_caps = room.place(opts, devices, shared=bool(access.others))
    for message in access.warnings:
        warn(message)
    return StartPlan(opts, access, devices, reason, held, worker_caps)


def plan_attach(
    address: str | None,
    scheduler_file: str | None,
    timeout: float = ATTACH_TIMEOUT,
    tls_ca_file: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> AttachTarget:
    """The scheduler an attach aims at, checked and found answering within ``timeout`` (the
    check given up, its connection closed, once ``cancelled()``)."""
    target = AttachTarget.resolve(address, scheduler_file, tls_ca_file, tls_cert, tls_key)
    check_answers(target, timeout, cancelled)
    return target


def plan_join(
    target: AttachTarget,
    opts: StartOptions,
    timeout: float = ATTACH_TIMEOUT,
    warn: Warn = stderr,
    cancelled: Callable[[], bool] = lambda: False,
) -> JoinPlan:
    """A join's workers decided and its scheduler found answering within ``timeout``."""
    devices, reason = resolve_workers(opts, warn, joining=True)
    check_answers(target, timeout, cancelled)
    held, devices, worker_caps = room.place(opts, devices, shared=bool(shared_machine()))
    return JoinPlan(target, opts, devices, reason, timeout, held, worker_caps)


def _close(session: ClusterSession) -> None:
    session.close()


def start(
    kernel: KernelCluster,
    opts: StartOptions,
    replace: bool = False,
    warn: Warn = stderr,
    starting: Callable[[], object] = lambda: None,
) -> tuple[ClusterSession, bool]:
    """``%gpu_cluster start``: (the session, True), or (the running one, False) when it is kept.
    ``starting`` is called once the checks passed, just before the cluster starts."""
    kept = keep_current(kernel, "start", replace, warn)
    if kept is not None:
        return kept, False

    def work(operation: operations.Operation[ClusterSession]) -> ClusterSession:
        with room_holder.this_process.undone_on_failure():
            plan = plan_start(opts, warn)
            operation.check()
            kernel.close(release_room=False)  # a --replace keeps the kernel's place
            operation.check()
            starting()
            return kernel.hold(ClusterSession.start(plan))

    return kernel.operations.run("start", work, undo=_close), True


def attach(
    kernel: KernelCluster,
    address: str | None,
    scheduler_file: str | None,
    replace: bool = False,
    timeout: float = ATTACH_TIMEOUT,
    tls_files: tuple[str | None, str | None, str | None] = (None, None, None),
    warn: Warn = stderr,
) -> tuple[ClusterSession, bool]:
    """``%gpu_cluster attach``; ``tls_files``: (CA file, certificate, key)."""
    kept = keep_current(kernel, "attach", replace, warn)
    if kept is not None:
        return kept, False

    def work(operation: operations.Operation[ClusterSession]) -> ClusterSession:
        interrupted = operation.interrupted.is_set
        target = plan_attach(address, scheduler_file, timeout, *tls_files, cancelled=interrupted)
        operation.check()
        kernel.close()
        operation.check()
        return kernel.hold(ClusterSession.attach(target, timeout, interrupted))

    return kernel.operations.run("attach", work, undo=_close), True


def join(
    kernel: KernelCluster,
    target: AttachTarget,
    opts: StartOptions,
    replace: bool = False,
    timeout: float = ATTACH_TIMEOUT,
    warn: Warn = stderr,
    joining: Callable[[], object] = lambda: None,
) -> tuple[ClusterSession, bool]:
    """``%gpu_cluster join`` to ``target`` (resolved by the caller, before anything else)."""
    kept = keep_current(kernel, "join", replace, warn)
    if kept is not None:
        return kept, False

    def work(operation: operations.Operation[ClusterSession]) -> ClusterSession:
        with room_holder.this_process.undone_on_failure():
            plan = plan_join(target, opts, timeout, warn, operation.interrupted.is_set)
            operation.check()
            kernel.close(release_room=False)
            operation.check()
            joining()
            return kernel.hold(ClusterSession.join(plan))

    return kernel.operations.run("join", work, undo=_close), True


def start_gateway(
    kernel: KernelCluster, plan: gateway.GatewayPlan, replace: bool = False, warn: Warn = stderr
) -> tuple[ClusterSession, bool]:
    """``%gpu_cluster start --gateway`` (and ``attach --gateway NAME``, a ``plan`` with a
    name): (the session, True), or the running one, kept (False)."""
    asked = "attach" if plan.name else "start"
    kept = keep_current(kernel, asked, replace, warn)
    if kept is not None:
        return kept, False

    def work(operation: operations.Operation[ClusterSession]) -> ClusterSession:
        made = gateway.reconnect(plan) if plan.name else gateway.start(plan)
        try:
            operation.check()
            kernel.close()
            operation.check()
        except BaseException:
            made.close(plan.timeout)
            raise
        return kernel.hold(ClusterSession.from_gateway(made, plan.timeout))

    return kernel.operations.run(asked, work, undo=_close), True


def gateway_clusters(
    address: str | None, auth: str | None, timeout: float
) -> tuple[str, list[Any], gateway.Offered]:
    """``%gpu_cluster gateway``: (the gateway's address, this user's clusters, its options)."""
    where = gateway.address_of(address)
    return where, gateway.listing(where, auth, timeout), gateway.options_of(where, auth, timeout)


def gateway_options(address: str, auth: str | None, timeout: float) -> gateway.Offered:
    """``start --gateway --help``: the cluster options the gateway at ``address`` offers."""
    return gateway.options_of(address, auth, timeout)


def adapt(kernel: KernelCluster, minimum: int, maximum: int) -> None:
    """``%gpu_cluster scale --adapt MIN MAX``."""
    session = kernel.require()
    kernel.operations.run("scale", lambda operation: session.adapt(minimum, maximum))


def stop(
    kernel: KernelCluster, keep: bool = False
) -> tuple[ClusterSession | None, Retirement | None]:
    """``%gpu_cluster stop``: (the session it stopped, the retirement of a joined one's workers);
    ``keep``: a gateway cluster is left running."""
    session = kernel.current()
    if session is None:
        kernel.operations.wait_pending()
        return None, None
    if keep:
        session.kind.keep_running()

    def work(operation: operations.Operation[Retirement | None]) -> Retirement | None:
        return session.kind.stop(session)

    return session, kernel.operations.run("stop", work)


def leave(
    kernel: KernelCluster, timeout: float = LEAVE_TIMEOUT
) -> tuple[ClusterSession | None, Retirement | None]:
    """``%gpu_cluster leave``."""
    session = kernel.current()
    if session is None:
        return None, None
    return session, kernel.operations.run("leave", lambda operation: session.leave(timeout))


def scale(kernel: KernelCluster, n: int) -> int:
    """``%gpu_cluster scale``: how many computed results went with the workers it removed
    (Dask recomputes them when they are needed; a --distribute collection's cannot be)."""
    session = kernel.require()
    started = time.time()
    kernel.operations.run("scale", lambda operation: session.scale(n))
    return logs.lost_results(logs.since(started))


def restart(kernel: KernelCluster) -> None:
    session = kernel.require()
    kernel.operations.run("restart", lambda operation: session.restart())


# -- what a command says once done: printed by the magic, returned by a view's button ------------


def started_lines(session: ClusterSession, workers: int) -> list[str]:
    """What a start said, in a line, for a view (the magic shows the summary table instead)."""
    kind = {"gpu": "GPU", "cpu": "CPU"}.get(session.mode, session.mode)
    return [
        f"Started a {kind} cluster: {workers} worker{'s' * (workers != 1)}, "
        f"scheduler {session.address}."
    ]


def stopped_lines(session: ClusterSession | None, retirement: Retirement | None) -> list[str]:
    """What ``stop`` says: what became of the cluster, and the room's share the kernel keeps
    while it holds GPU data of its own."""
    if session is None:
        return ["No cluster to stop."]
    lines = [session.kind.stopped(session, retirement)]
    kept = room_holder.this_process.current()
    if kept is not None:
        gpus = ", ".join(f"GPU {share.index}" for share in kept.gpus)
        lines.append(
            f"This kernel keeps its share of {gpus} while it holds GPU data of its own; "
            "the share ends with the kernel (or restart it to give the share back now)."
        )
    return lines


def scaled_lines(n: int, lost: int) -> list[str]:
    """What ``scale N`` says: the workers running, and the computed results that went."""
    lines = [f"{n} worker{'s' * (n != 1)} running."]
    if lost:
        lines.append(
            f"The workers removed held {lost} computed result{'s' * (lost != 1)}: Dask "
            "computes them again when they are needed (a collection spread with "
            "%%to_gpu --distribute cannot be: spread it again)."
        )
    return lines


RESTARTED = "Workers restarted."
