"""A Ctrl-C that lands in a finaliser is not lost: the guard records it and the command's next
checkpoint raises it (lifecycle/interrupts.py), in the transaction of every %%to_gpu / %%to_cpu.
Without the guard each case here ends with "DID NOT RAISE": Python drops the interrupt."""

from __future__ import annotations

import _thread
import signal
import threading
from typing import Any

import pytest

from gpudask_jupyter.convert.transaction import transact
from gpudask_jupyter.errors import ConversionError
from gpudask_jupyter.lifecycle import interrupts

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


class SwallowsCtrlC:
    """Presses Ctrl-C from its finaliser: Python handles the signal there, inside ``__del__``,
    reports the ``KeyboardInterrupt`` as ignored and drops it."""

    def __del__(self) -> None:
        _thread.interrupt_main()
        for _ in range(1000):  # the handler runs at one of these jumps, still in __del__
            pass


def test_python_drops_an_interrupt_raised_in_a_finaliser() -> None:
    """The premise: without a guard, nothing is raised (if this fails, Python changed)."""
    SwallowsCtrlC()
    for _ in range(1000):
        pass


def _swallowed_then(step: Any) -> None:
    SwallowsCtrlC()
    step()


def test_the_guard_raises_it_at_its_checkpoint() -> None:
    with interrupts.InterruptGuard() as guard:
        assert guard.pressed is False
        with pytest.raises(KeyboardInterrupt):
            _swallowed_then(guard.checkpoint)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_checkpoint_deep_in_a_command_finds_the_guard() -> None:
    with interrupts.InterruptGuard(), pytest.raises(KeyboardInterrupt):
        _swallowed_then(interrupts.checkpoint)
    interrupts.checkpoint()  # no guard now: nothing to raise


def test_an_interrupt_raised_as_usual_goes_through_and_the_handler_comes_back() -> None:
    def press() -> None:
        _thread.interrupt_main()
        for _ in range(1000):
            pass

    with pytest.raises(KeyboardInterrupt), interrupts.InterruptGuard():
        press()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_nested_guards_share_the_outer_handler() -> None:
    with interrupts.InterruptGuard() as outer:
        handler = signal.getsignal(signal.SIGINT)
        with interrupts.InterruptGuard() as inner:
            assert inner is outer
            assert signal.getsignal(signal.SIGINT) == handler
        assert signal.getsignal(signal.SIGINT) == handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_off_the_main_thread_a_guard_changes_nothing() -> None:
    seen: list[Any] = []

    def body() -> None:
        with interrupts.InterruptGuard() as guard:
            seen.append(signal.getsignal(signal.SIGINT))
            guard.checkpoint()

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]


def test_an_ignored_sigint_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts.InterruptGuard():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_running_cell_is_recognised_under_a_guard() -> None:
    """The kernel's shutdown interrupts a running cell only where SIGINT raises: a guard over
    Python's handler still does."""
    assert interrupts.raises_keyboard_interrupt(signal.default_int_handler)
    with interrupts.InterruptGuard():
        assert interrupts.raises_keyboard_interrupt(signal.getsignal(signal.SIGINT))
    assert not interrupts.raises_keyboard_interrupt(signal.SIG_IGN)


def test_a_transaction_interrupted_in_a_finaliser_rebinds_nothing_and_undoes() -> None:
    namespace = {"a": 1, "b": 2}
    undone = threading.Event()

    def move(name: str, obj: Any) -> Any:
        if name == "a":
            SwallowsCtrlC()  # the interrupt lands while the first name moves, and is dropped
        return obj * 10

    def fail(name: str, obj: Any, err: Exception) -> ConversionError:
        return ConversionError(name, str(err))

    with pytest.raises(KeyboardInterrupt):
        transact(namespace, ["a", "b"], move, fail, undo=undone.set)
    assert namespace == {"a": 1, "b": 2}
    assert undone.wait(60)


def test_a_transaction_interrupted_in_its_last_move_rebinds_nothing() -> None:
    namespace = {"a": 1}

    def move(name: str, obj: Any) -> Any:
        SwallowsCtrlC()
        return obj * 10

    with pytest.raises(KeyboardInterrupt):
        transact(namespace, ["a"], move, lambda n, o, e: ConversionError(n, str(e)))
    assert namespace == {"a": 1}


def test_ctrl_c_while_a_commands_thread_starts_is_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C that lands inside ``Thread.start`` of a command's work (a room fault test saw
    it at the first moment of a start): the work runs on, so its result must be undone. Without
    the guard's ``held`` the interrupt left start() before anyone waited for the work: the
    start placed a lease and made a cluster after its cell had failed, and nobody undid them."""
    from gpudask_jupyter.cluster.operations import Operations

    ops = Operations()
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        real_start(self)
        if self.name == "gpudask-probe":
            signal.raise_signal(signal.SIGINT)  # handled in here, before start() returns
            for _ in range(1000):
                pass

    monkeypatch.setattr(threading.Thread, "start", start)
    go_on = threading.Event()
    undone = threading.Event()

    def work(operation: Any) -> str:
        go_on.wait(30)
        return "a cluster"

    with pytest.raises(KeyboardInterrupt):
        ops.run("probe", work, undo=lambda made: undone.set())
    go_on.set()
    assert undone.wait(30), "the work finished after Ctrl-C and was never undone"
    ops.wait_pending()
