"""Every option of the package, documented once, here.

Values come from, in order: IPython's ``%config GpuDaskMagics.<name> = ...`` in this kernel, then
``dask.config`` under the key ``gpudask`` (so YAML files and ``DASK_GPUDASK__<NAME>`` environment
variables work as for any Dask setting), then the default below. ``%gpu_cluster config`` prints the
table with the values in effect; the README's table is generated from :data:`OPTIONS` and a test
keeps the two equal.

dask is imported on the first :func:`get`, never at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .gpu_time.facts import CHOICES
from .text.units import format_bytes, parse_bytes, parse_seconds


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off", ""}:
            return False
        raise ValueError(f"not a boolean: {value!r}")
    return bool(value)


def _auto_or_bool(value: Any) -> str | bool:
    """``"auto"``, or a boolean in any spelling :func:`_bool` takes."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return _bool(value)


def _positive_int(value: Any) -> int:
    number = int(value)
    if number < 0:
        raise ValueError(f"must be 0 or more: {value!r}")
    return number


def _reader(value: Any) -> str:
    """``nvml``, or an importable ``module:attribute``."""
    text = str(value).strip()
    module, colon, attribute = text.partition(":")
    if text != "nvml" and not (colon and module and attribute.isidentifier()):
        raise ValueError(f"expected nvml or module:attribute, not {value!r}")
    return text


def _gpu_time(value: Any) -> str:
    """One of the GPU-time sources' choices (:data:`.gpu_time.facts.CHOICES`)."""
    text = str(value).strip().lower()
    if text not in CHOICES:
        raise ValueError(f"expected one of {', '.join(CHOICES)}, not {value!r}")
    return text


def parse_share(value: Any) -> str | float | int:
    """A room share: ``auto``, a fraction of a GPU in (0, 1] or a size (``12GiB``)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return parse_bytes(value)
    if 0 < number <= 1:
        return number
    if number > 1 and number.is_integer():
        return int(number)
    raise ValueError(f"a share is auto, a fraction in (0, 1] or a size, not {value!r}")


def _names(value: Any) -> str:
    """``none``, ``all`` or a comma-separated list of user names."""
    text = str(value).strip()
    if not text:
        return "none"
    if text.lower() in {"none", "all"}:
        return text.lower()
    names = [name.strip() for name in text.split(",")]
    if not all(
        name and name.replace("-", "").replace("_", "").replace(".", "").isalnum() for name in names
    ):
        raise ValueError(f"expected none, all or user names separated by commas, not {value!r}")
    return ",".join(names)


@dataclass(frozen=True)
class Option:
    name: str
    default: Any
    parse: Callable[[Any], Any]
    doc: str
    limits: tuple[float, float] | None = None
    """Values outside are clamped to this range (the panel's interval and history)."""

    @property
    def default_value(self) -> Any:
        """The default, parsed (``"5min"`` is 300.0)."""
        return self.parse(self.default)

    def clamp(self, value: float) -> float:
        """``value`` within :attr:`limits` (an option without limits: unchanged)."""
        if self.limits is None:
            return float(value)
        low, high = self.limits
        return min(high, max(low, float(value)))

    def show(self, value: Any) -> str:
        """A parsed value written the way a user would type it."""
        if self.parse is parse_bytes:
            return format_bytes(value)
        if self.parse is parse_seconds:
            return f"{value:g}s"
        return str(value)

    @property
    def attr(self) -> str:
        """The spelling for ``%config GpuDaskMagics.<attr>``."""
        return self.name.replace("-", "_")


def _clamped_seconds(name: str, default: str, doc: str, limits: tuple[float, float]) -> Option:
    """A duration option whose values are clamped; its documentation states the range."""
    low, high = limits
    return Option(name, default, parse_seconds, f"{doc}; clamped to {low:g}–{high:g}.", limits)


OPTIONS: dict[str, Option] = {
    opt.name: opt
    for opt in [
        Option(
            "require-gpu",
            False,
            _bool,
            "Make `%gpu_cluster start` and `%%to_gpu` fail when no GPU is usable, instead of "
            "falling back to the CPU with a warning.",
        ),
        Option(
            "nvml",
            True,
            _bool,
            "Read this machine's GPUs through NVML. `false` hides them from the package (the "
            "cluster falls back to the CPU and the panel shows only the task stream).",
        ),
        Option(
            "shared-machine",
            "auto",
            _auto_or_bool,
            "Whether other people use this machine. On a shared machine `%gpu_cluster start` "
            "serves no dashboard unless asked (it has no authentication: every local user could "
            "read it), and a start takes its share of the GPUs (the room). `auto` looks for "
            "other people here now: processes of other people (a uid from `UID_MIN` on), other "
            "users logged in, other JupyterHub servers of this account; an account alone is no "
            "one. `true` or `false` decides without looking.",
        ),
        Option(
            "prewarm",
            True,
            _bool,
            "Once the kernel has idled a second after a cell, import in the background what "
            "`%gpu_cluster start` needs (dask, distributed, its dashboard), so that the first "
            "start is not slower than later ones. Starts no process; a command that comes "
            "meanwhile waits for the imports (Ctrl-C ends that wait at once).",
        ),
        Option(
            "launch-ahead",
            True,
            _bool,
            "Launch a fork server for the workers as a start begins, so that their imports "
            "overlap the kernel's own, and fork the workers from it (it stays for the kernel's "
            "life: a later start forks at once). Only time depends on it: `false` spawns every "
            "worker when its nanny asks, as distributed does.",
        ),
        Option(
            "startup-timeout",
            "60s",
            parse_seconds,
            "Seconds `%gpu_cluster start`, `join`, `scale` and `restart` wait for workers before "
            "failing.",
        ),
        Option(
            "worker-timeout",
            "30s",
            parse_seconds,
            "Seconds `--distribute` / `--gather` wait for a worker that stops answering (no "
            "heartbeat: stopped, frozen, swapped out) before they fail and undo what they did.",
        ),
        Option(
            "pinned-buffer",
            "128MiB",
            parse_bytes,
            "Most page-locked host memory the fast transfer path holds (allocated once on first "
            "use, reused, released by `%unload_ext`); below 128KiB, none (the library's copy).",
        ),
        Option(
            "distribute-shm-limit",
            "0",
            parse_bytes,
            "Most shared memory (`/dev/shm`) one `--distribute` / `--gather` transfer holds at "
            "once; larger data crosses in rounds. 0: three quarters of what is free there.",
        ),
        Option(
            "distribute-cuda-ipc",
            True,
            _bool,
            "Whether `--distribute` / `--gather` copy straight into and out of the GPU memory of "
            "workers on this machine (CUDA IPC); off: through shared memory.",
        ),
        Option(
            "transfer-threshold",
            "16MiB",
            parse_bytes,
            "Arrays and columns at least this large go through the pinned, pipelined copy; "
            "smaller ones use the library's own copy.",
        ),
        Option(
            "transfer-threads",
            0,
            _positive_int,
            "Host threads that fill and drain the pinned buffers; 0 picks, of the cores the "
            "kernel may use, all but two host→device and all of them device→host (2 to 16), "
            "and fewer while other processes keep those cores busy.",
        ),
        Option(
            "room-dir",
            "/tmp",
            str,
            "The directory where the kernels of a shared machine record their leases of the "
            "GPUs, each account in a folder of its own. It must belong to root (or to you): "
            "another owner could remove everybody's leases. `/tmp` is; any other is made once "
            "by the instructor with `install -d -m 1777 -o root DIR`. Every student's kernel "
            "must see the same one.",
        ),
        Option(
            "room-gpus",
            1,
            _positive_int,
            "GPUs `%gpu_cluster start` without `--gpus` takes on a shared machine, placed on "
            "those with the fewest holders; 0 takes every GPU (no placement, no share).",
        ),
        Option(
            "room-share",
            "auto",
            parse_share,
            "The part of a GPU's memory each holder may take on a shared machine, half for the "
            "kernel and half for its worker: `auto` (with `room-students` 0, an equal part of "
            "what the GPU's holders do not hold, following them as they come and go; with "
            "`room-students`, the GPU divided among the students planned; CUDA contexts set "
            "aside either way), a fraction (`0.25`) or a size (`12GiB`).",
        ),
        Option(
            "room-students",
            0,
            _positive_int,
            "Students the shared machine is planned for (the `auto` share divides each GPU "
            "among them, spread over the GPUs); 0: no plan, shares follow the holders present.",
        ),
        Option(
            "room-kernels",
            12,
            _positive_int,
            "Kernels one student may hold GPUs from at once on a shared machine (a notebook per "
            "chapter fits); a start beyond it names the student's notebooks that hold the room. "
            "Whatever the number, a student's kernels share that student's part of a GPU. "
            "0: no limit.",
        ),
        Option(
            "room-names",
            "none",
            _names,
            "Who sees other holders' names in `%gpu_cluster room` and the room views: `none` "
            "(everybody sees counts), `all`, or the instructors' user names, comma-separated.",
        ),
        Option(
            "room-reader",
            "nvml",
            _reader,
            "Where the room reads the GPUs it places students on and the memory each process "
            "holds there: `nvml`, or `module:attribute`, an object with `devices()` and "
            "`memory(devices)` as `gpudask_jupyter.RoomReader` describes (a "
            "site's own inventory, or stand-in GPUs on a machine without any). Every kernel of "
            "the room must use the same one.",
        ),
        Option(
            "gpu-time",
            "auto",
            _gpu_time,
            "How GPU time, memory peaks and bus bytes are measured per task prefix and per "
            "cell (`%gpu_cluster profile`, the views' GPU time): `auto` (CUPTI where "
            "`cupti-python` is installed, else NVML's per-process samples), `cupti`, `nvml`, "
            "or `off`.",
        ),
        _clamped_seconds(
            "room-idle",
            "10min",
            "Seconds without work after which the room view marks a holder idle",
            (60.0, 86400.0),
        ),
        _clamped_seconds(
            "refresh-interval",
            "1s",
            "Seconds between panel and sidebar samples",
            (0.25, 10.0),
        ),
        _clamped_seconds(
            "history",
            "5min",
            "Seconds of GPU history and task stream the panel keeps",
            (10.0, 3600.0),
        ),
    ]
}

_overrides: dict[str, Any] = {}


def get(name: str) -> Any:
    """The value in effect for option ``name`` (parsed, so callers get bytes and seconds)."""
    option = OPTIONS[name]
    if name in _overrides:
        return _overrides[name]
    import dask.config

    raw = dask.config.get(f"gpudask.{name}", default=None)
    if raw is None:
        return option.parse(option.default)
    try:
        return option.parse(raw)
    except (TypeError, ValueError) as err:
        raise ValueError(f"dask config gpudask.{name}: {err}") from None


def require_gpu(asked: bool | None = None) -> bool:
    """Whether a missing GPU is an error: ``asked`` (a ``--require-gpu`` flag or argument) when
    given, else the ``require-gpu`` option. The one place this rule is decided."""
    return bool(get("require-gpu")) if asked is None else bool(asked)


def set_override(name: str, value: Any) -> None:
    """Set from IPython's ``%config``; ``None`` removes the override."""
    option = OPTIONS[name]
    if value is None:
        _overrides.pop(name, None)
    else:
        _overrides[name] = option.parse(value)


def clear_overrides() -> None:
    _overrides.clear()


def markdown_table() -> str:
    """The README's option table (the README must contain exactly this)."""
    lines = [
        "| option (`dask.config` key `gpudask.<option>`) | `%config GpuDaskMagics.<name>` "
        "| default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for opt in OPTIONS.values():
        lines.append(f"| `{opt.name}` | `{opt.attr}` | `{opt.default}` | {opt.doc} |")
    return "\n".join(lines)
