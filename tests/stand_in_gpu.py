"""A stand-in GPU for the GPU-time tests: work of a set GPU time and copies of set sizes, as
CUPTI's activity API, NVML's per-process samples and RMM's statistics would report them.

The package's real sources (:class:`~gpudask_jupyter.gpu_time.sources.CuptiSource`,
:class:`~gpudask_jupyter.gpu_time.sources.NvmlSource`) and memory windows
(:class:`~gpudask_jupyter.gpu_time.memory_peaks.Peaks`) read these in place of the libraries, so
the tests drive the whole join, from library calls to per-prefix figures. On a worker it hangs on
the worker (``dask_worker.stand_in_gpu``), where a task finds it with ``get_worker()``.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from gpudask_jupyter.gpu_time.sources import Choice, CuptiSource, NvmlSource

#: CUPTI's clock runs this far (ns) from the wall clock here: the source must take it out
CUPTI_OFFSET_NS = 123_456_789_000
#: the stand-in NVML's sampling period
PERIOD = 0.1


class StandInGpu:
    """Records work as it is done: kernels (start, end) and copies (start, bytes, direction)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kernels: list[tuple[float, float]] = []
        self.copies: list[tuple[float, int, str]] = []
        self.allocated = 0
        self.rmm = StandInRmm(self)

    def kernel(self, seconds: float, duty: float = 1.0) -> None:
        """Keep the GPU busy ``duty`` of the next ``seconds``, in kernels of 10 ms or less, as
        the GPU would: on its own clock, whatever the host's sleeps overshoot."""
        start = time.time()
        steps = max(1, round(seconds / 0.01))
        step = seconds / steps
        if duty > 0:
            with self.lock:
                self.kernels += [
                    (start + i * step, start + i * step + step * duty) for i in range(steps)
                ]
        while (left := start + seconds - time.time()) > 0:
            time.sleep(left)

    def copy(self, nbytes: int, direction: str) -> None:
        with self.lock:
            self.copies.append((time.time(), nbytes, direction))

    def allocate(self, nbytes: int) -> None:
        self.rmm.current_resource.allocate(nbytes)

    def free(self, nbytes: int) -> None:
        self.rmm.current_resource.allocate(-nbytes)

    # -- as CUPTI ---------------------------------------------------------------------------

    def cupti(self) -> Any:
        gpu = self
        kinds = SimpleNamespace(CONCURRENT_KERNEL=10, MEMCPY=1)
        copy_kinds = SimpleNamespace(HTOD=1, DTOH=2)
        state: dict[str, Any] = {"done": None, "enabled": set(), "sent": (0, 0)}

        def flush(flag: int) -> None:
            with gpu.lock:
                k0, c0 = state["sent"]
                kernels, copies = gpu.kernels[k0:], gpu.copies[c0:]
                state["sent"] = (len(gpu.kernels), len(gpu.copies))
            records = [
                SimpleNamespace(
                    kind=10,
                    start=int(a * 1e9) + CUPTI_OFFSET_NS,
                    end=int(b * 1e9) + CUPTI_OFFSET_NS,
                )
                for a, b in kernels
                if 10 in state["enabled"]
            ] + [
                SimpleNamespace(
                    kind=1,
                    start=int(t * 1e9) + CUPTI_OFFSET_NS,
                    end=int(t * 1e9) + CUPTI_OFFSET_NS + 1000,
                    bytes=n,
                    copy_kind=1 if d == "htod" else 2,
                )
                for t, n, d in copies
                if 1 in state["enabled"]
            ]
            if records and state["done"] is not None:
                state["done"](records)

        return SimpleNamespace(
            ActivityKind=kinds,
            ActivityMemcpyKind=copy_kinds,
            activity_enable=lambda kind: state["enabled"].add(kind),
            activity_disable=lambda kind: state["enabled"].discard(kind),
            activity_register_callbacks=lambda req, done: state.update(done=done),
            activity_flush_all=flush,
            get_timestamp=lambda: time.time_ns() + CUPTI_OFFSET_NS,
        )

    # -- as NVML ----------------------------------------------------------------------------

    def nvml_sampler(self, pid: int) -> Any:
        """``pid``'s utilisation as NVML gives it (seen on an H200, driver 580): a call returns at
        most one sample per process, stamped at the end of the driver's last finished period,
        whose value is the share of the time since ``since`` (the caller's last seen stamp) the
        kernels covered; a process that has a GPU context gets a sample even when idle."""
        origin = time.time()

        def sample(since: int) -> list[tuple[int, int, float]]:
            n = int((time.time() - origin) / PERIOD)
            end = origin + n * PERIOD
            stamp = int(end * 1e6)
            if n == 0 or stamp <= since:
                return []
            lo = max(since / 1e6, origin)
            with self.lock:
                kernels = list(self.kernels)
            busy = sum(max(0.0, min(b, end) - max(a, lo)) for a, b in kernels)
            return [(pid, stamp, round(100 * busy / (end - lo)))]

        return sample


class _Resource:
    """A stand-in for a StatisticsResourceAdaptor or another resource."""

    def __init__(self, stats: bool, upstream: Any = None) -> None:
        self.stats = stats
        self.upstream = upstream
        self.stack: list[list[int]] = [[0, 0]]  # [current, peak] per pushed window

    def allocate(self, nbytes: int) -> None:
        if self.upstream is not None:
            self.upstream.allocate(nbytes)
        for window in self.stack:
            window[0] += nbytes
            window[1] = max(window[1], window[0])

    def push_counters(self) -> Any:
        self.stack.append([0, 0])
        return SimpleNamespace(peak_bytes=self.stack[-2][1])

    def pop_counters(self) -> Any:
        _, peak = self.stack.pop()
        return SimpleNamespace(peak_bytes=peak)

    @property
    def allocation_counts(self) -> Any:
        return SimpleNamespace(peak_bytes=self.stack[-1][1])


class StandInRmm:
    """``rmm.mr``'s calls that :class:`~gpudask_jupyter.gpu_time.memory_peaks.Peaks` makes."""

    def __init__(self, gpu: StandInGpu) -> None:
        self.current_resource = _Resource(stats=False)
        rmm = self

        class StatisticsResourceAdaptor(_Resource):
            def __init__(self, upstream: Any) -> None:
                super().__init__(stats=True, upstream=upstream)

        self.mr = SimpleNamespace(
            StatisticsResourceAdaptor=StatisticsResourceAdaptor,
            get_current_device_resource=lambda: rmm.current_resource,
            set_current_device_resource=lambda r: setattr(rmm, "current_resource", r),
        )


def worker_source(kind: str) -> Any:
    """A ``make_source`` for :class:`~gpudask_jupyter.gpu_time.worker_plugin.GpuTimePlugin`:
    a stand-in GPU on the worker, read as ``kind`` ("cupti" or "nvml") would read it."""

    def make(worker: Any) -> Choice:
        import os

        gpu = StandInGpu()
        worker.stand_in_gpu = gpu
        if kind == "cupti":
            return Choice(CuptiSource(gpu.cupti()), "stand-in CUPTI", gpu.rmm)
        return Choice(NvmlSource(gpu.nvml_sampler(os.getpid())), "stand-in NVML", gpu.rmm)

    return make


def busy(seconds: float, htod: int = 0, duty: float = 1.0) -> int:
    """A task of ``seconds`` on the worker's stand-in GPU, which it keeps busy ``duty`` of the
    time, with a copy of ``htod`` bytes to it, allocated through RMM for the task's length."""
    gpu = on_worker()
    gpu.allocate(htod)
    gpu.copy(htod, "htod")
    gpu.kernel(seconds, duty)
    gpu.free(htod)
    return htod


def on_worker() -> StandInGpu:
    from distributed import get_worker

    return get_worker().stand_in_gpu  # type: ignore[no-any-return,attr-defined]
