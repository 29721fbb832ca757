"""The private parts of ipykernel this package changes: where a comm's replies go, and the
kernel's shutdown request, which runs the extension's closers first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .probing import NeedTuple, takes

DISTRIBUTION = "ipykernel"
ROUTE = "Comm._reply_subshell_for(data, default)"
SHUTDOWN = "Kernel.do_shutdown(restart)"


def needs() -> list[NeedTuple]:
    from ipykernel.comm.comm import Comm
    from ipykernel.kernelbase import Kernel

    return [
        (
            ROUTE,
            lambda: takes(Comm._reply_subshell_for, 3),
            "the panel's buttons are answered on the main shell, after a running cell "
            "(an ipykernel without subshells)",
        ),
        (
            SHUTDOWN,
            lambda: takes(Kernel.do_shutdown, 2),
            "the cluster is closed at the kernel's exit, not as its shutdown request arrives",
        ),
    ]


#: marks a ``do_shutdown`` this package put on a kernel
_OURS = "gpudask"


def route_replies(comm: Any, choose: Callable[[Any, str | None], str | None]) -> bool:
    """Have ``comm``'s incoming messages handled on the shell ``choose(data, sent_to)`` names
    (None: the main shell). ipykernel (7.4, with subshells) asks the comm's
    ``_reply_subshell_for`` (private; probed) where each message goes; ipykernel's own
    bookkeeping still runs first. False where this ipykernel routes nothing (before subshells)."""
    routed = getattr(comm, "_reply_subshell_for", None)
    if comm is None or not callable(routed):
        return False

    def shell_for(data: Any, sent_to: str | None) -> str | None:
        routed(data, sent_to)
        return choose(data, sent_to)

    comm._reply_subshell_for = shell_for
    return True


def wrap_shutdown(kernel: Any, before: Callable[[bool], None]) -> bool:
    """Run ``before(restart)`` on the kernel's shutdown request, then ipykernel's own: the
    kernel's ``do_shutdown`` (a method ipykernel's shutdown handler calls; replaced on the
    instance; probed). False where the kernel has none or it is already ours."""
    original = getattr(kernel, "do_shutdown", None)
    if original is None or getattr(original, _OURS, False):
        return False

    def do_shutdown(restart: bool) -> Any:
        before(restart)
        return original(restart)

    setattr(do_shutdown, _OURS, True)
    kernel.do_shutdown = do_shutdown
    return True


def unwrap_shutdown(kernel: Any) -> None:
    """Put back the kernel's own ``do_shutdown`` where :func:`wrap_shutdown` replaced it."""
    if getattr(kernel.__dict__.get("do_shutdown"), _OURS, False):
        del kernel.do_shutdown
