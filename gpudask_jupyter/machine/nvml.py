"""This machine's GPUs through NVML: initialised once per process, and able to say why not.

NVML is the one source that sees every GPU without creating a CUDA context (which would take
device memory in the kernel and pin it to a device). Initialisation is per process (a forked or
spawned child starts again), guarded by a lock because the panel's sampler thread and the kernel's
main thread may both ask first. When NVML cannot be used, :func:`status` keeps the reason in words a
user can act on; nothing here raises for a missing GPU.
"""

from __future__ import annotations

import enum
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

from .. import config

log = logging.getLogger(__name__)


class NvmlState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    AVAILABLE = "available"
    NO_PYNVML = "no-pynvml"
    NO_LIBRARY = "no-library"
    DRIVER_NOT_LOADED = "driver-not-loaded"
    VERSION_MISMATCH = "version-mismatch"
    NO_PERMISSION = "no-permission"
    NO_DEVICES = "no-devices"
    DISABLED = "disabled"
    ERROR = "error"


@dataclass(frozen=True)
class NvmlStatus:
    state: NvmlState
    reason: str = ""
    driver_version: str | None = None

    @property
    def available(self) -> bool:
        return self.state is NvmlState.AVAILABLE


@dataclass(frozen=True)
class Device:
    """A GPU, or a MIG instance of one, as ``nvidia-smi -L`` lists it."""

    index: int
    uuid: str
    name: str
    memory_total: int
    mig_index: int | None = None

    @property
    def is_mig(self) -> bool:
        return self.mig_index is not None

    @property
    def label(self) -> str:
        return f"{self.index}" if self.mig_index is None else f"{self.index}:{self.mig_index}"


@dataclass(frozen=True)
class DeviceSample:
    """One reading of a device; ``None`` where the device does not report the quantity."""

    uuid: str
    utilization: int | None
    memory_used: int | None
    memory_total: int | None
    temperature: int | None = None
    power_watts: float | None = None
    power_limit_watts: float | None = None
    pcie_tx_bytes_per_s: int | None = None
    pcie_rx_bytes_per_s: int | None = None


@dataclass(frozen=True)
class GpuProcess:
    uuid: str
    pid: int
    memory_used: int | None
    own: bool


_MESSAGES = {
    9: (
        NvmlState.DRIVER_NOT_LOADED,
        "the NVIDIA kernel driver is not loaded (nvidia-smi would fail too); "
        "is this a machine with an NVIDIA GPU?",
    ),
    12: (
        NvmlState.NO_LIBRARY,
        "the NVIDIA driver library libnvidia-ml.so.1 was not found: this machine has no NVIDIA "
        "driver, or the container does not expose it",
    ),
    18: (
        NvmlState.VERSION_MISMATCH,
        "the NVIDIA driver and its NVML library have different versions (usually a driver update "
        "without a reboot); reboot the machine or reload the driver",
    ),
    4: (NvmlState.NO_PERMISSION, "no permission to query the NVIDIA driver through NVML"),
}

# per process: NVML is initialised once per process, and its handles are the process's
_lock = threading.RLock()
_status = NvmlStatus(NvmlState.UNINITIALIZED)
_owner_pid: int | None = None
_handles: list[tuple[Device, Any]] = []
_pynvml: Any = None


def describe_error(err: BaseException) -> tuple[NvmlState, str]:
    """The state and the sentence for an error raised by ``pynvml.nvmlInit``."""
    code = getattr(err, "value", None)
    if isinstance(code, int) and code in _MESSAGES:
        return _MESSAGES[code]
    return NvmlState.ERROR, f"NVML could not start: {err}"


def _init_locked() -> None:
    global _status, _owner_pid, _handles, _pynvml
    _owner_pid = os.getpid()
    _handles = []
    if not config.get("nvml"):
        _status = NvmlStatus(
            NvmlState.DISABLED, "GPU monitoring is switched off (option gpudask.nvml = false)"
        )
        return
    try:
        import pynvml
    except ImportError:
        log.debug("nvidia-ml-py is not importable", exc_info=True)
        _status = NvmlStatus(
            NvmlState.NO_PYNVML,
            "the nvidia-ml-py package is not installed (pip install nvidia-ml-py)",
        )
        return
    _pynvml = pynvml
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        log.debug("nvmlInit failed", exc_info=True)
        state, reason = describe_error(err)
        _status = NvmlStatus(state, reason)
        return
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
    except pynvml.NVMLError:
        log.debug("NVML does not report the driver version", exc_info=True)
        driver = None
    try:
        _handles = _enumerate(pynvml)
    except pynvml.NVMLError as err:
        log.debug("NVML could not list the GPUs", exc_info=True)
        _status = NvmlStatus(NvmlState.ERROR, f"NVML could not list the GPUs: {err}", driver)
        return
    if not _handles:
        _status = NvmlStatus(
            NvmlState.NO_DEVICES, "the NVIDIA driver is loaded but reports no GPU", driver
        )
        return
    _status = NvmlStatus(NvmlState.AVAILABLE, "", driver)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _enumerate(pynvml: Any) -> list[tuple[Device, Any]]:
    found: list[tuple[Device, Any]] = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        name = _text(pynvml.nvmlDeviceGetName(handle))
        try:
            mig_on = pynvml.nvmlDeviceGetMigMode(handle)[0] == pynvml.NVML_DEVICE_MIG_ENABLE
        except pynvml.NVMLError:
            mig_on = False
        if not mig_on:
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle).total
            device = Device(index, _text(pynvml.nvmlDeviceGetUUID(handle)), name, memory)
            found.append((device, handle))
            continue
        for mig_index in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
            try:
                mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, mig_index)
            except pynvml.NVMLError:
                continue
            memory = pynvml.nvmlDeviceGetMemoryInfo(mig).total
            device = Device(
                index, _text(pynvml.nvmlDeviceGetUUID(mig)), f"{name} MIG", memory, mig_index
            )
            found.append((device, mig))
    return found


def _ensure() -> None:
    with _lock:
        if _owner_pid != os.getpid():
            _init_locked()


def status() -> NvmlStatus:
    """Whether NVML can be used here, and if not, why (in words)."""
    _ensure()
    return _status


def reset() -> None:
    """Forget the cached state so that the next call initialises again (after a config change)."""
    global _owner_pid
    with _lock:
        if _status.available and _pynvml is not None and _owner_pid == os.getpid():
            try:
                _pynvml.nvmlShutdown()
            except _pynvml.NVMLError:
                log.debug("nvmlShutdown failed", exc_info=True)
        _owner_pid = None


def devices() -> list[Device]:
    """Every GPU (or MIG instance) of this machine; empty when NVML is unavailable."""
    _ensure()
    return [device for device, _ in _handles]


def _call(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, or None where the device does not report it (a MIG instance has no
    temperature, some boards no power reading): a normal answer each tick, so not logged."""
    try:
        return fn(*args)
    except _pynvml.NVMLError:
        return None


def sample(pcie: bool = False) -> list[DeviceSample]:
    """Current readings for every device: cheap without ``pcie``.

    PCIe counters make NVML wait for a sampling window per device, so callers ask for them
    rarely.
    """
    _ensure()
    if not _status.available:
        return []
    nv = _pynvml
    out = []
    for device, handle in _handles:
        util = _call(nv.nvmlDeviceGetUtilizationRates, handle)
        memory = _call(nv.nvmlDeviceGetMemoryInfo, handle)
        temperature = power = limit = tx = rx = None
        if not device.is_mig:
            temperature = _call(nv.nvmlDeviceGetTemperature, handle, nv.NVML_TEMPERATURE_GPU)
            milliwatts = _call(nv.nvmlDeviceGetPowerUsage, handle)
            power = milliwatts / 1000 if milliwatts is not None else None
            limit_mw = _call(nv.nvmlDeviceGetEnforcedPowerLimit, handle)
            limit = limit_mw / 1000 if limit_mw is not None else None
            if pcie:
                tx_kb = _call(nv.nvmlDeviceGetPcieThroughput, handle, nv.NVML_PCIE_UTIL_TX_BYTES)
                rx_kb = _call(nv.nvmlDeviceGetPcieThroughput, handle, nv.NVML_PCIE_UTIL_RX_BYTES)
                tx = tx_kb * 1024 if tx_kb is not None else None
                rx = rx_kb * 1024 if rx_kb is not None else None
        out.append(
            DeviceSample(
                uuid=device.uuid,
                utilization=util.gpu if util is not None else None,
                memory_used=memory.used if memory is not None else None,
                memory_total=memory.total if memory is not None else device.memory_total,
                temperature=temperature,
                power_watts=power,
                power_limit_watts=limit,
                pcie_tx_bytes_per_s=tx,
                pcie_rx_bytes_per_s=rx,
            )
        )
    return out


def _owner_uid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def processes() -> list[GpuProcess]:
    """Compute processes on every device; ``own`` marks those of the current user.

    A process whose owner cannot be read (another PID namespace) counts as somebody else's.
    """
    _ensure()
    if not _status.available:
        return []
    nv = _pynvml
    me = os.getuid()
    out = []
    for device, handle in _handles:
        running = _call(nv.nvmlDeviceGetComputeRunningProcesses, handle) or []
        for proc in running:
            used = getattr(proc, "usedGpuMemory", None)
            out.append(GpuProcess(device.uuid, proc.pid, used, _owner_uid(proc.pid) == me))
    return out


#: seconds of NVML's per-process utilisation samples that :func:`process_utilization` reads
UTILIZATION_WINDOW = 5.0


def process_utilization() -> dict[tuple[str, int], int]:
    """Each process's share of its GPU's streaming multiprocessors (%), by (device UUID, pid),
    over the last :data:`UTILIZATION_WINDOW` seconds; empty where NVML keeps no such samples
    (MIG instances, some boards, no recent work)."""
    import time

    _ensure()
    if not _status.available:
        return {}
    since = int((time.time() - UTILIZATION_WINDOW) * 1e6)  # NVML counts in microseconds
    out: dict[tuple[str, int], int] = {}
    for device, handle in _handles:
        for sample in _call(_pynvml.nvmlDeviceGetProcessUtilization, handle, since) or []:
            key = (device.uuid, int(sample.pid))
            out[key] = max(out.get(key, 0), int(sample.smUtil))
    return out


class NoSamples(RuntimeError):
    """NVML keeps no per-process samples for this device here; the message says why."""


def process_samples(device: str | int, since: int) -> list[tuple[int, int, float]]:
    """NVML's per-process utilisation samples of ``device`` (a UUID or an index) newer than
    ``since`` (µs since the epoch): ``(pid, timestamp µs, SM busy %)`` each. Raises
    :class:`NoSamples` where NVML is unavailable or the device keeps none (MIG instances, some
    boards); no sample newer than ``since`` is an empty list."""
    _ensure()
    if not _status.available:
        raise NoSamples(_status.reason)
    handle = next(
        (h for d, h in _handles if d.uuid == device or (d.index == device and d.mig_index is None)),
        None,
    )
    if handle is None:
        raise NoSamples(f"NVML does not know the GPU {device}")
    try:
        found = _pynvml.nvmlDeviceGetProcessUtilization(handle, since)
    except _pynvml.NVMLError_NotFound:
        return []
    except _pynvml.NVMLError as err:
        raise NoSamples(f"NVML keeps no per-process samples of GPU {device} ({err})") from err
    return [(int(s.pid), int(s.timeStamp), float(s.smUtil)) for s in found]
