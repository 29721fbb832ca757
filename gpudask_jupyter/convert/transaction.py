"""Move several names as one transaction: all are rebound, or none is.

:func:`transact` is the one engine of ``%%to_gpu`` / ``%%to_cpu`` and of ``--distribute`` /
``--gather``. Every result goes into a staging dict first (``a = b = df``: moved once, the
aliasing kept); only when all have succeeded are the names rebound. On any failure, or Ctrl-C,
what was made elsewhere is undone (the caller's ``undo``: partitions on the workers; after
Ctrl-C on a thread of its own, so that control comes back at once), the staged results are
dropped, the failure's frames are cleared (IPython keeps the last traceback, whose
frames would hold half-built device arrays and futures), device memory is given back (CuPy's
cached blocks included, so NVML sees it free again), and the error names the variable, the
cause and what to do. The originals are never touched. A Ctrl-C that a finaliser swallowed is
raised at the next step, or before the names are rebound (:mod:`..lifecycle.interrupts`).
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from ..errors import ConversionError, GpuDaskError, NoGpuError
from ..lifecycle import interrupts
from . import room_hooks
from .converter import Context, Converter, Direction
from .failures import describe
from .lookup import find
from .report import Moved, Report, kind_of, nbytes_of, shape_of

log = logging.getLogger(__name__)


def release_device_memory() -> None:
    """Return memory freed by dropped objects to the device (not only to CuPy's cache)."""
    gc.collect()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()


def _synchronize() -> None:
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        cupy.cuda.runtime.deviceSynchronize()


Move = Callable[[str, Any], Any]
"""(name, object) → what the name is rebound to, or None to leave it."""
Fail = Callable[[str, Any, Exception], ConversionError]
"""(name, object, what the library raised) → the error the user reads."""


def _undo_later(undo: Callable[[], object]) -> None:
    """After Ctrl-C: undo (cancel what was placed on the workers, give device memory back) on a
    thread of its own, so that the interrupted cell returns at once; it takes a moment."""

    def finish() -> None:
        try:
            undo()
        except Exception:
            log.warning("undoing an interrupted transfer failed", exc_info=True)
        release_device_memory()

    threading.Thread(target=finish, name="gpudask-undo-transfer", daemon=True).start()


def transact(
    namespace: MutableMapping[str, Any],
    names: Iterable[str],
    move: Move,
    fail: Fail,
    undo: Callable[[], object] = lambda: None,
    check: Callable[[str, Any], None] = lambda name, obj: None,
) -> None:
    """Rebind every name of ``names`` to ``move(name, object)``, or none of them (see the
    module's docstring); raises ``fail(...)``, this package's own error, or the interrupt.
    ``check(name, object)`` is asked of every name before anything moves (it raises to refuse)."""
    staged: dict[str, Any] = {}
    by_identity: dict[int, Any] = {}
    name, obj, new = "", None, None
    names = list(names)
    with interrupts.InterruptGuard() as guard:
        try:
            for name in names:
                obj = namespace[name]
                check(name, obj)
            for name in names:
                obj = namespace[name]
                if id(obj) in by_identity:
                    staged[name] = by_identity[id(obj)]
                    continue
                new = move(name, obj)
                if new is not None:
                    staged[name] = by_identity[id(obj)] = new
                guard.checkpoint()
            guard.checkpoint()  # a Ctrl-C a finaliser swallowed still undoes everything
        except BaseException as err:
            staged.clear()  # this frame stays in the error's traceback: it must hold nothing
            by_identity.clear()
            new = None
            traceback.clear_frames(err.__traceback__)
            if not isinstance(err, Exception):  # Ctrl-C: control back at once, the undo follows
                _undo_later(undo)
                raise
            undo()
            release_device_memory()
            if isinstance(err, GpuDaskError):
                raise  # ours already speaks to the user
            log.debug("moving %s failed", name, exc_info=err)
            error = fail(name, obj, err)
            error.details = "".join(traceback.format_exception(err))
            raise error from None
        namespace.update(staged)


def convert_one(
    name: str, obj: Any, converter: Converter, device: int | None, notes: list[str] | None = None
) -> tuple[Any, Moved]:
    """``obj`` converted and what the report says of it; what the converter noted of it goes to
    ``notes``, prefixed with ``name``."""
    context = Context(device=device)
    started = time.perf_counter()
    new = converter.convert(obj, context)
    if not converter.lazy:
        _synchronize()
    elapsed = time.perf_counter() - started
    # the size of the host side: a cuDF frame's memory_usage sums on the device (a visible share
    # of a large frame's way back), a pandas frame's on the host
    host_side = new if converter.direction == "cpu" else obj
    moved = Moved(
        name=name,
        label=converter.label,
        shape=shape_of(obj),
        nbytes=None if converter.lazy else nbytes_of(host_side),
        seconds=None if converter.lazy else elapsed,
        path="lazy" if converter.lazy else context.path,
    )
    if notes is not None:
        notes.extend(f"{name}: {note}" for note in context.notes)
    return new, moved


def _plan(
    namespace: MutableMapping[str, Any],
    names: Iterable[str],
    direction: Direction,
    report: Report,
    required_by: str | None,
    leave_on_host: str | None,
) -> tuple[list[tuple[str, Any, Converter]], list[str]]:
    """What to convert with which converter, and why GPU work was skipped; what is left alone
    goes in ``report``. ``required_by`` (what made a GPU required) turns a skip into an error;
    an object the target cannot hold is refused here, before anything moves."""
    unavailable: list[str] = []
    plan = []
    for name in names:
        obj = namespace[name]
        converter = find(obj, direction)
        if converter is None:
            report.skipped.append((name, kind_of(obj)))
            continue
        if converter.skip is not None:
            report.skipped.append((name, converter.skip))
            continue
        why = converter.unavailable()
        if why is not None:
            log.debug("%s stays on the host: %s", name, why)
            if required_by is not None:
                raise NoGpuError(
                    f"{name} stays on the host: {why}. Nothing was converted ({required_by})."
                )
            unavailable.append(why)
            report.skipped.append((name, f"{converter.source}: {why}"))
            continue
        refused = converter.refuse(obj)
        if refused is not None:
            raise ConversionError(name, *describe(refused, name, obj, leave_on_host))
        plan.append((name, obj, converter))
    return plan, unavailable


def convert_names(
    namespace: MutableMapping[str, Any],
    names: Iterable[str],
    direction: Direction,
    *,
    device: int | None = None,
    require_gpu: bool = False,
    required_by: str = "--require-gpu",
    leave_on_host: str | None = None,
) -> tuple[Report, list[str]]:
    """Convert ``names`` in ``namespace``; returns the report and why GPU work was skipped.

    Raises :class:`ConversionError` (nothing rebound) or :class:`NoGpuError` (``require_gpu``,
    which the message says was set by ``required_by``). ``leave_on_host`` is how the user keeps
    an object on the host, for the error's hint (the magic's ``--exclude`` by default).
    """
    if direction == "gpu":  # before CUDA starts here: the room may pin the kernel to its GPU
        room_hooks.before_gpu_work()
    report = Report(direction)
    plan, unavailable = _plan(
        namespace, names, direction, report, required_by if require_gpu else None, leave_on_host
    )
    converters = {name: converter for name, _, converter in plan}

    def move(name: str, obj: Any) -> Any:
        new, moved = convert_one(name, obj, converters[name], device, report.notes)
        report.moved.append(moved)
        return new

    def fail(name: str, obj: Any, err: Exception) -> ConversionError:
        return ConversionError(name, *describe(err, name, obj, leave_on_host))

    transact(namespace, list(converters), move, fail)
    return report, unavailable
