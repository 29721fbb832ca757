"""Host↔device transfer: %%to_gpu / %%to_cpu against cupy.asarray, cudf.from_pandas and back.

For each case (``array``: a 2 GiB float64 array, ``frame``: a 2 GiB mixed numeric DataFrame,
``strings``: the same frame with a string column and a categorical column, ``objects``: the
same with the strings as Python objects, which take cuDF's own path) and each direction, every
repetition measures, interleaved so that a host that slows down mid-run slows all three alike:

  ceiling  one cudaMemcpyAsync of the same number of bytes from/to one page-locked buffer
  anchor   cupy.asarray / cudf.from_pandas  (host→device),  .get() / .to_pandas()  (device→host)
  ours     the %%to_gpu / %%to_cpu cell magic, in a real IPython shell

and the table gives the median and the spread (min–max) of each in GB/s over ``--repeat`` runs
(5), and the ratios of the medians. For device→host of the array and the numeric frame, extra
rows time ours with the destination allocated as before huge pages (``numpy.empty``, faulted in
by the copy itself), on huge pages without faulting ahead, and on 4 KiB pages faulted ahead.

Beside the table, what bounds a transfer on this host: its own copy rate (memcpy between memory
already faulted in, one thread, the copy threads, every core), how fast fresh memory is faulted
in, by writing it or by ``MADV_POPULATE_WRITE``, on 4 KiB pages and on transparent huge pages
(every device→host copy, ours and the anchor's, writes into fresh memory), memcpy into fresh
memory in pieces of 1 MiB, the pipeline's size and 16 MiB (the CPU's whole share of a
device→host transfer once the bytes are in the pinned ring), the pinned ceiling
and the route that registers the source with the driver instead of copying it.

    python benchmarks/transfer.py [--gib 2] [--repeat 5] [--busy N] [--cases array,frame]
                                  [--sweep [--sweep-pinned MIB,...]] [--host-only]

``--busy N`` runs N CPU-bound processes (pure-Python loops) beside everything, as on a shared
server; the tables say so. ``--sweep`` first times the pinned pipeline alone for several thread
counts and buffer sizes. ``--host-only`` prints only the host's figures (no GPU needed).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

CASES = ("array", "frame", "strings", "objects")
SWEEP_PINNED = (32, 64, 128)  # MiB of pinned buffers the sweep tries by default

# -- figures -------------------------------------------------------------------------------------


def gbps(nbytes: int, seconds: Sequence[float]) -> list[float]:
    return [nbytes / s / 1e9 for s in seconds]


def spread(rates: Sequence[float]) -> str:
    """``median (min–max)`` of rates in GB/s: one decimal, three below 1 GB/s (a loaded
    host's rate must not print as 0.0)."""
    if not rates:
        return "n/a"

    def rate(value: float) -> str:
        return f"{value:.1f}" if value >= 1 else f"{value:.3f}"

    return f"{rate(statistics.median(rates))} ({rate(min(rates))}–{rate(max(rates))})"


def ratio(ours: Sequence[float], other: Sequence[float], percent: bool = False) -> str:
    if not ours or not other:
        return "n/a"
    value = statistics.median(ours) / statistics.median(other)
    return f"{value:.0%}" if percent else f"{value:.2f}×"


# -- busy processes ------------------------------------------------------------------------------

_BUSY_LOOP = (
    "import os\n"
    "parent = os.getppid()\n"
    "while os.getppid() == parent:  # stop on our own if the benchmark is killed\n"
    "    for _ in range(10**6):\n"
    "        pass\n"
)


@contextlib.contextmanager
def busy(count: int) -> Iterator[None]:
    """``count`` CPU-bound processes beside the body; each is stopped when the body ends."""
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            processes.append(subprocess.Popen([sys.executable, "-c", _BUSY_LOOP]))
        yield
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# -- the host's own rates ------------------------------------------------------------------------


def pipeline_piece(threads: int, to_device: bool = True) -> int:
    """What one copy thread of the pipeline moves at a time in this direction, with ``threads``
    threads sharing the pinned buffer."""
    from gpudask_jupyter import config
    from gpudask_jupyter.convert.pinned import ring

    shape = ring.shape(int(config.get("pinned-buffer")), threads)
    return ring.piece_size(shape.chunk, to_device) if shape is not None else 0


def _in_pieces(
    nbytes: int, threads: int, work: Callable[[int, int], Any], piece: int | None = None
) -> float:
    """Seconds ``threads`` threads take to run ``work(offset, size)`` over ``nbytes``, taking
    pieces (``piece`` bytes; by default the pipeline's) from one shared cursor as the pipeline's
    threads do."""
    size = piece or pipeline_piece(threads)
    offsets = iter(range(0, nbytes, size))  # next() on it is atomic under the GIL

    def run() -> None:
        for offset in offsets:
            work(offset, min(size, nbytes - offset))

    with ThreadPoolExecutor(threads) as pool:
        t0 = time.perf_counter()
        for future in [pool.submit(run) for _ in range(threads)]:
            future.result()
        return time.perf_counter() - t0


def memcpy_rates(nbytes: int, threads: int, repeat: int) -> list[float]:
    """GB/s of memcpy between two buffers already faulted in."""
    import numpy as np

    source, target = np.ones(nbytes, dtype=np.uint8), np.ones(nbytes, dtype=np.uint8)
    src, dst = source.ctypes.data, target.ctypes.data
    seconds = [
        _in_pieces(nbytes, threads, functools.partial(_copy_at, dst, src)) for _ in range(repeat)
    ]
    return gbps(nbytes, seconds)


def _fault_in(base: int, nbytes: int, threads: int, how: str) -> float:
    from gpudask_jupyter.convert.pinned import host_memory

    if how == "write":
        return _in_pieces(nbytes, threads, lambda o, n: ctypes.memset(base + o, 0, n))
    with host_memory.using(prefault=True):
        return _in_pieces(nbytes, threads, lambda o, n: host_memory.prefault(base + o, n))


@contextlib.contextmanager
def fresh_memory(nbytes: int, pages: str) -> Iterator[int]:
    """The address of ``nbytes`` of memory nothing has touched yet: a new mapping on ``huge`` or
    ``small`` pages, or a new ``numpy.empty`` array (``numpy``: NumPy advises huge pages itself),
    given back when the ``with`` ends."""
    import numpy as np

    from gpudask_jupyter.convert.pinned import host_memory

    if pages == "numpy":
        fresh: Any = np.empty(nbytes, dtype=np.uint8)
        yield fresh.ctypes.data
        return
    mapping, offset = host_memory.map_fresh(nbytes, huge=pages == "huge")
    view = ctypes.c_char.from_buffer(mapping, offset)
    try:
        yield ctypes.addressof(view)
    finally:
        del view  # an exported buffer would keep the mapping from being closed
        mapping.close()


def first_touch_rates(nbytes: int, threads: int, repeat: int, pages: str, how: str) -> list[float]:
    """GB/s at which fresh memory (:func:`fresh_memory` on ``pages``) is faulted in, by writing
    zeros over it (``write``) or by ``MADV_POPULATE_WRITE`` alone (``populate``)."""
    seconds = []
    for _ in range(repeat):
        with fresh_memory(nbytes, pages) as base:
            seconds.append(_fault_in(base, nbytes, threads, how))
    return gbps(nbytes, seconds)


def fresh_copy_rates(
    nbytes: int, threads: int, repeat: int, pages: str, piece: int | None
) -> list[float]:
    """GB/s of memcpy from memory already faulted in into fresh memory (:func:`fresh_memory` on
    ``pages``), ``piece`` bytes at a time: what a device→host transfer asks of the CPU once the
    bytes are in the pinned ring, the kernel faulting in and zeroing each destination page
    before the copy fills it."""
    import numpy as np

    source = np.ones(nbytes, dtype=np.uint8)
    src = source.ctypes.data
    size = piece or pipeline_piece(threads, to_device=False)
    seconds = []
    for _ in range(repeat):
        with fresh_memory(nbytes, pages) as dst:
            copy = functools.partial(_copy_at, dst, src)
            seconds.append(_in_pieces(nbytes, threads, copy, size))
    return gbps(nbytes, seconds)


def _copy_at(dst: int, src: int, offset: int, size: int) -> None:
    ctypes.memmove(dst + offset, src + offset, size)


# piece sizes of the fresh-copy rows, beside the pipeline's own device→host (None)
FRESH_PIECES = (2**20, None, 16 * 2**20)

# the rows of the host's table after memcpy: (label, pages, how)
FIRST_TOUCH = (
    ("first touch by writing, 4 KiB pages", "small", "write"),
    ("first touch by writing, numpy.empty", "numpy", "write"),
    ("first touch by writing, huge pages", "huge", "write"),
    ("fault-in by MADV_POPULATE_WRITE, 4 KiB pages", "small", "populate"),
    ("fault-in by MADV_POPULATE_WRITE, huge pages", "huge", "populate"),
)


def host_facts(nbytes: int, repeat: int) -> None:
    from gpudask_jupyter.convert.pinned import host_memory, thread_count
    from gpudask_jupyter.machine import cores as machine_cores

    counts = sorted({1, thread_count.default_threads(), machine_cores.usable_cores()})
    rows: list[tuple[str, Callable[[int], list[float]]]] = [
        ("memcpy, memory already faulted in", lambda t: memcpy_rates(nbytes, t, repeat))
    ]
    for label, pages, how in FIRST_TOUCH:
        if how == "populate" and not host_memory.prefault_available():
            continue
        if pages == "huge" and not host_memory.huge_pages_available():
            continue
        rows.append((label, lambda t, p=pages, h=how: first_touch_rates(nbytes, t, repeat, p, h)))
    for pages in ("small", "huge"):
        if pages == "huge" and not host_memory.huge_pages_available():
            continue
        for piece in FRESH_PIECES:
            size = "the pipeline's pieces" if piece is None else f"{piece // 2**20} MiB pieces"
            rows.append(
                (
                    f"memcpy into fresh memory, {'huge' if pages == 'huge' else '4 KiB'} "
                    f"pages, {size}",
                    lambda t, p=pages, s=piece: fresh_copy_rates(nbytes, t, repeat, p, s),
                )
            )
    print(f"host rates, GB/s, median (min–max) of {repeat}, {nbytes / 2**30:.2f} GiB each:")
    print("| | " + " | ".join(f"{t} thread{'s' * (t > 1)}" for t in counts) + " |")
    print("| --- " * (len(counts) + 1) + "|")
    for label, measure in rows:
        print(f"| {label} | " + " | ".join(spread(measure(t)) for t in counts) + " |", flush=True)
    print()


def cpu_model() -> str:
    """The CPU's model and its last-level cache (whether a piece just copied by DMA can still be
    in the cache when a thread copies it out depends on both)."""
    from pathlib import Path

    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    caches = sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"))
    try:
        last = max(caches, key=lambda c: int((c / "level").read_text()))
        model += f", L{(last / 'level').read_text().strip()} {(last / 'size').read_text().strip()}"
    except (OSError, ValueError):
        pass
    return model


def describe_host(busy_count: int) -> None:
    from gpudask_jupyter import config
    from gpudask_jupyter.convert.pinned import host_memory, thread_count
    from gpudask_jupyter.machine import cores as machine_cores

    print(
        f"host: {platform.node()}, {cpu_model()}, {machine_cores.usable_cores()} usable cores, "
        f"Linux "
        f"{platform.release()}, Python {platform.python_version()}; transparent huge pages: "
        f"{host_memory.huge_pages_setting()}; MADV_POPULATE_WRITE: "
        f"{'yes' if host_memory.prefault_available() else 'no'}; "
        f"{busy_count} busy process{'es' * (busy_count != 1)} beside the benchmark"
    )
    print(
        f"defaults: {thread_count.default_threads(to_device=True)} copy threads host→device, "
        f"{thread_count.default_threads(to_device=False)} device→host, pinned buffer "
        f"{config.get('pinned-buffer') // 2**20} MiB, threshold "
        f"{config.get('transfer-threshold') // 2**20} MiB; destinations: "
        f"{host_memory.policy.pages} pages, fault-ahead {host_memory.policy.prefault}"
    )
    print()


# -- the device ------------------------------------------------------------------------------------


def _synchronized(fn: Callable[[], Any]) -> float:
    """Seconds one call of ``fn`` takes, the device idle before and after; its result is freed
    after the clock stops."""
    import cupy

    cupy.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    result = fn()
    cupy.cuda.runtime.deviceSynchronize()
    seconds = time.perf_counter() - t0
    del result
    return seconds


class Ceiling:
    """One page-locked buffer and one device buffer of ``capacity`` bytes, for the ceiling."""

    def __init__(self, capacity: int) -> None:
        import cupy

        self.host = cupy.cuda.alloc_pinned_memory(capacity)
        self.device = cupy.empty(capacity, dtype=cupy.uint8)
        self.stream = cupy.cuda.Stream(non_blocking=True)

    def copy(self, nbytes: int, to_device: bool) -> None:
        import cupy

        rt = cupy.cuda.runtime
        if to_device:
            args = (self.device.data.ptr, self.host.ptr, nbytes, rt.memcpyHostToDevice)
        else:
            args = (self.host.ptr, self.device.data.ptr, nbytes, rt.memcpyDeviceToHost)
        rt.memcpyAsync(*args, self.stream.ptr)
        self.stream.synchronize()

    def seconds(self, nbytes: int, to_device: bool) -> float:
        return _synchronized(lambda: self.copy(nbytes, to_device))


def registered_rates(nbytes: int, to_device: bool, repeat: int) -> list[float]:
    """GB/s of the route that copies nothing on the CPU: cudaHostRegister the host memory, one
    DMA, cudaHostUnregister; host→device from memory already faulted in, device→host into fresh
    memory (huge pages where the host has them), allocated within the time."""
    import cupy
    import numpy as np

    from gpudask_jupyter.convert.pinned import host_memory

    rt = cupy.cuda.runtime
    device = cupy.empty(nbytes, dtype=cupy.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)
    source = np.ones(nbytes, dtype=np.uint8) if to_device else None

    def once() -> Any:
        host = source if source is not None else host_memory.empty((nbytes,), np.uint8)
        ptr = host.ctypes.data
        rt.hostRegister(ptr, nbytes, 0)
        try:
            if to_device:
                rt.memcpyAsync(device.data.ptr, ptr, nbytes, rt.memcpyHostToDevice, stream.ptr)
            else:
                rt.memcpyAsync(ptr, device.data.ptr, nbytes, rt.memcpyDeviceToHost, stream.ptr)
            stream.synchronize()
        finally:
            rt.hostUnregister(ptr)
        return host

    return gbps(nbytes, [_synchronized(once) for _ in range(repeat)])


def device_facts(ceiling: Ceiling, nbytes: int, repeat: int) -> None:
    up = gbps(nbytes, [ceiling.seconds(nbytes, True) for _ in range(repeat)])
    down = gbps(nbytes, [ceiling.seconds(nbytes, False) for _ in range(repeat)])
    print(
        f"pinned ceiling, {nbytes / 2**30:.2f} GiB, GB/s: host→device {spread(up)}, "
        f"device→host {spread(down)}"
    )
    for to_device, direction in ((True, "host→device"), (False, "device→host")):
        try:
            registered = spread(registered_rates(nbytes, to_device, repeat))
        except Exception as err:  # a figure beside the table: the table still runs
            registered = f"n/a ({type(err).__name__}: {err})"
        print(f"{direction} by cudaHostRegister + one DMA + unregister, GB/s: {registered}")
    print()


def make_cases(gib: float, names: Sequence[str]) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    n_bytes = int(gib * 2**30)
    rng = np.random.default_rng(0)
    cases: dict[str, Any] = {}
    if "array" in names:
        cases["array"] = rng.standard_normal(n_bytes // 8)
    if not {"frame", "strings", "objects"} & set(names):
        return cases
    rows = n_bytes // (8 + 8 + 4 + 4 + 1 + 8)
    frame = pd.DataFrame(
        {
            "i64": rng.integers(0, 2**40, rows),
            "f64": rng.standard_normal(rows),
            "i32": rng.integers(0, 2**30, rows).astype(np.int32),
            "f32": rng.standard_normal(rows).astype(np.float32),
            "b": rng.integers(0, 2, rows).astype(bool),
            "t": pd.to_datetime(rng.integers(0, 2**31, rows), unit="s").astype("datetime64[ns]"),
        }
    )
    words = np.array(["alpha", "beta", "gamma", "délta", "epsilon", ""], dtype=object)
    if "strings" in names:
        with_strings = frame.copy()
        with_strings["s"] = pd.Series(words[rng.integers(0, 6, rows)], dtype="str")
        with_strings["c"] = pd.Categorical.from_codes(rng.integers(-1, 5, rows), words[:5])
        cases["strings"] = with_strings
    if "objects" in names:
        with_objects = frame.copy()
        with_objects["s"] = pd.Series(words[rng.integers(0, 6, rows)], dtype=object)
        cases["objects"] = with_objects
    if "frame" in names:
        cases["frame"] = frame
    return {name: cases[name] for name in names if name in cases}


LABELS = {
    "array": "float64 array",
    "frame": "numeric frame",
    "strings": "frame + strings + categorical",
    "objects": "frame + object strings (cuDF's path)",
}
# device→host destinations compared with ours: (label, host_memory.using(...) arguments)
D2H_VARIANTS = (
    ("numpy.empty, faulted by the copy (as before)", {"pages": "numpy", "prefault": False}),
    ("huge pages, faulted ahead", {"pages": "huge", "prefault": True}),
    ("4 KiB pages, faulted ahead", {"pages": "small", "prefault": True}),
)


def _ways(
    shell: Any, obj: Any
) -> list[tuple[str, bool, Callable[[], Any], Callable[[], Any], str]]:
    """(direction, to_device, ours, anchor, anchor's name) for both directions of ``obj``."""
    import cudf
    import cupy
    import numpy as np

    ns = shell.user_ns
    is_array = isinstance(obj, np.ndarray)

    def ours_up() -> Any:
        ns["src"] = obj
        shell.run_cell_magic("to_gpu", "-q src", "pass")
        return ns.pop("src")

    def anchor_up() -> Any:
        return cupy.asarray(obj) if is_array else cudf.from_pandas(obj)

    device_obj = anchor_up()

    def ours_down() -> Any:
        ns["dev"] = device_obj
        shell.run_cell_magic("to_cpu", "-q dev", "pass")
        return ns.pop("dev")

    anchor_down = device_obj.get if is_array else device_obj.to_pandas
    return [
        (
            "host→device",
            True,
            ours_up,
            anchor_up,
            "cupy.asarray" if is_array else "cudf.from_pandas",
        ),
        ("device→host", False, ours_down, anchor_down, ".get()" if is_array else ".to_pandas()"),
    ]


def _variant(ours: Callable[[], Any], changes: dict[str, Any]) -> Callable[[], float]:
    from gpudask_jupyter.convert.pinned import host_memory

    def timed() -> float:
        with host_memory.using(**changes):
            return _synchronized(ours)

    return timed


def interleaved(timers: dict[str, Callable[[], float]], repeat: int) -> dict[str, list[float]]:
    """Seconds of each timer over ``repeat`` rounds of all of them, after one warm-up round
    (buffers, streams, kernels, first mappings): a host that slows down mid-run slows all alike."""
    for timer in timers.values():
        timer()
    seconds: dict[str, list[float]] = {key: [] for key in timers}
    for _ in range(repeat):
        for key, timer in timers.items():
            seconds[key].append(timer())
    return seconds


def measure(
    shell: Any, name: str, obj: Any, repeat: int, ceiling: Ceiling, busy_count: int
) -> None:
    """Print the rows of one case: each direction, and the device→host destination variants."""
    import cupy

    from gpudask_jupyter.convert.pinned import staging
    from gpudask_jupyter.convert.report import nbytes_of

    nbytes = nbytes_of(obj) or 0
    head = f"| {LABELS[name]} | {{}} | {nbytes / 2**30:.2f} | {busy_count} |"
    for direction, to_device, ours, anchor, anchor_name in _ways(shell, obj):
        timers: dict[str, Callable[[], float]] = {
            "ceiling": lambda d=to_device: ceiling.seconds(nbytes, d),
            "anchor": lambda f=anchor: _synchronized(f),
            "ours": lambda f=ours: _synchronized(f),
        }
        variants = D2H_VARIANTS if not to_device and name in ("array", "frame") else ()
        for variant, changes in variants:
            timers[variant] = _variant(ours, changes)
        rate = {key: gbps(nbytes, s) for key, s in interleaved(timers, repeat).items()}
        pinned = staging.stager()  # how many threads the host's load chose, if not set
        threads = pinned.last_threads if pinned is not None else 0
        print(
            f"{head.format(f'{direction}, {threads} copy threads')} {spread(rate['ceiling'])} | "
            f"{anchor_name} {spread(rate['anchor'])} | {spread(rate['ours'])} | "
            f"{ratio(rate['ours'], rate['anchor'])} | "
            f"{ratio(rate['ours'], rate['ceiling'], percent=True)} |",
            flush=True,
        )
        for variant, _ in variants:
            print(
                f"{head.format(f'{direction}, ours with {variant}')} | | "
                f"{spread(rate[variant])} | {ratio(rate[variant], rate['anchor'])} | "
                f"{ratio(rate[variant], rate['ceiling'], percent=True)} |",
                flush=True,
            )
    shell.user_ns.pop("src", None)
    cupy.get_default_memory_pool().free_all_blocks()


def sweep(gib: float, repeat: int, budgets: Sequence[int]) -> None:
    import cupy
    import numpy as np

    from gpudask_jupyter import config
    from gpudask_jupyter.convert.pinned import staging, thread_count
    from gpudask_jupyter.machine import cores as machine_cores

    array = np.random.default_rng(1).standard_normal(int(gib * 2**30) // 8)
    cores = machine_cores.usable_cores()
    counts = sorted(
        {t for t in (2, 4, 8, 12, 14, 16, 24, 32) if t <= max(2, 2 * cores)}
        | {thread_count.default_threads()}
    )
    print(
        f"the pinned pipeline alone, {array.nbytes / 2**30:.2f} GiB float64, GB/s, "
        "median (min–max):"
    )
    print("| threads | pinned MiB | MiB × buffers per thread | host→device | device→host |")
    print("| --- | --- | --- | --- | --- |")
    for threads in counts:
        for pinned in budgets:
            config.set_override("transfer-threads", threads)
            config.set_override("pinned-buffer", pinned * 2**20)
            staging.release()
            stager = staging.stager()
            assert stager is not None, f"{pinned} MiB holds no ring"
            on_device = staging.to_device(array)
            staging.to_host(on_device)  # warm
            up = [_synchronized(lambda: staging.to_device(array)) for _ in range(repeat)]
            down = [
                _synchronized(lambda: staging.to_host(on_device))  # noqa: B023
                for _ in range(repeat)
            ]
            print(
                f"| {threads} | {pinned} | {stager.chunk / 2**20:.1f} × {stager.depth} "
                f"| {spread(gbps(array.nbytes, up))} | {spread(gbps(array.nbytes, down))} |",
                flush=True,
            )
            on_device = None
            cupy.get_default_memory_pool().free_all_blocks()
    config.clear_overrides()
    staging.release()
    print()


def run_device(args: argparse.Namespace, nbytes: int) -> None:
    import cupy
    from IPython.core.interactiveshell import InteractiveShell

    from gpudask_jupyter.convert.report import nbytes_of

    cupy.zeros(1)
    cases = make_cases(args.gib, args.cases)
    ceiling = Ceiling(max([nbytes, *(nbytes_of(obj) or 0 for obj in cases.values())]))
    device_facts(ceiling, nbytes, args.repeat)
    if args.sweep:
        sweep(args.gib, args.repeat, args.sweep_pinned)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gpudask_jupyter")
    print(f"GB/s, median (min–max) of {args.repeat} runs each, interleaved; ratios of the medians")
    print(
        "| case | direction | GiB | busy processes | pinned ceiling | anchor | ours "
        "| ours/anchor | ours/ceiling |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in list(cases):
        measure(shell, name, cases.pop(name), args.repeat, ceiling, args.busy)
    if "objects" in args.cases:
        print(
            "(frame + object strings: a column of Python objects takes cuDF's own path both ways, "
            "and comes back as objects, as .to_pandas() gives it; the numeric columns take ours)"
        )
    shell.run_line_magic("unload_ext", "gpudask_jupyter")


def _mebibytes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of whole MiB: {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"not a list of positive sizes: {text!r}")
    return sizes


def _case_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = sorted(set(names) - set(CASES))
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"cases are a comma-separated subset of {', '.join(CASES)}"
        )
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="size of each case (2)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each measurement (5)")
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound processes beside it (0)")
    parser.add_argument("--cases", type=_case_names, default=list(CASES), help=",".join(CASES))
    parser.add_argument("--sweep", action="store_true", help="time thread counts and buffers")
    parser.add_argument(
        "--sweep-pinned",
        type=_mebibytes,
        default=list(SWEEP_PINNED),
        help=f"pinned buffers of the sweep, MiB ({','.join(map(str, SWEEP_PINNED))}): each "
        "thread gets two buffers of up to 4 MiB, so with 16 threads these give 1, 2 and 4 MiB",
    )
    parser.add_argument("--host-only", action="store_true", help="the host's figures alone")
    args = parser.parse_args()
    nbytes = int(args.gib * 2**30)
    with busy(args.busy):
        describe_host(args.busy)
        host_facts(nbytes, args.repeat)
        if not args.host_only:
            run_device(args, nbytes)


if __name__ == "__main__":
    main()
