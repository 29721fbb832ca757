"""Convert several names as one transaction: all are rebound, or none is.

Every conversion writes into a staging dict first; only when all have succeeded are the names
rebound. On any failure the staged results are dropped, device memory they took is given back
(CuPy's cached blocks included, so NVML sees it free again), and the error names the variable,
the cause and what to do. The originals are never touched.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
import traceback
from collections.abc import Iterable, MutableMapping
from typing import Any

from ..errors import ConversionError, GpuDaskError, NoGpuError
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


class _Failed(Exception):
    """Carries which name failed out of the conversion loop."""

    def __init__(self, name: str, obj: Any, error: Exception) -> None:
        super().__init__(name)
        self.name, self.obj, self.error = name, obj, error


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


def _run(
    plan: list[tuple[str, Any, Converter]], device: int | None, report: Report
) -> dict[str, Any]:
    staged: dict[str, Any] = {}
    by_identity: dict[int, Any] = {}
    for name, obj, converter in plan:
        if id(obj) in by_identity:  # a = b = df: one conversion, aliasing kept
            staged[name] = by_identity[id(obj)]
            continue
        try:
            new, moved = convert_one(name, obj, converter, device, report.notes)
        except GpuDaskError:
            raise
        except Exception as err:
            raise _Failed(name, obj, err) from None
        staged[name] = by_identity[id(obj)] = new
        report.moved.append(moved)
    return staged


def _plan(
    namespace: MutableMapping[str, Any],
    names: Iterable[str],
    direction: Direction,
    report: Report,
    required_by: str | None,
) -> tuple[list[tuple[str, Any, Converter]], list[str]]:
    """What to convert with which converter, and why GPU work was skipped; what is left alone
    goes in ``report``. ``required_by`` (what made a GPU required) turns a skip into an error."""
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
    report = Report(direction)
    plan, unavailable = _plan(
        namespace, names, direction, report, required_by if require_gpu else None
    )
    failure: BaseException | None = None
    try:
        staged = _run(plan, device, report)
    except _Failed as failed:
        log.debug("converting %s failed", failed.name, exc_info=failed.error)
        cause, hint = describe(failed.error, failed.name, failed.obj, leave_on_host)
        error = ConversionError(failed.name, cause, hint)
        error.details = "".join(traceback.format_exception(failed.error))
        # the frames of a failed conversion hold its half-built device objects
        traceback.clear_frames(failed.error.__traceback__)
        failure = error
    except GpuDaskError as err:
        failure = err
    except BaseException:  # KeyboardInterrupt: roll back, then let it through unchanged
        release_device_memory()
        raise
    if failure is not None:
        release_device_memory()
        raise failure
    namespace.update(staged)
    return report, unavailable
