"""This machine's GPUs as the monitor samples them: NVML readings by name, PCIe kept cheap.

NVML's PCIe counters block for a sampling window per device and direction, so they are read at
most every PCIE_EVERY seconds (and not at all when sampling is slower than that); the samples
between carry the last figures read.
"""

from __future__ import annotations

from ..machine import nvml
from ..schema.frame import DeviceInfo, DeviceReading, Processes, ProcessInfo

PCIE_EVERY = 5.0


class LocalGpus:
    def __init__(self) -> None:
        self._last_pcie = 0.0
        self._pcie: dict[str, tuple[int | None, int | None]] = {}
        self._limits: dict[str, float | None] = {}

    def read(self, now: float, interval: float) -> dict[str, DeviceReading]:
        """Every local device's reading, by UUID; empty without NVML."""
        if not nvml.status().available:
            return {}
        pcie = now - self._last_pcie >= PCIE_EVERY and interval <= PCIE_EVERY
        samples = nvml.sample(pcie=pcie)
        self._limits = {s.uuid: s.power_limit_watts for s in samples}
        if pcie:
            self._last_pcie = now
            self._pcie = {s.uuid: (s.pcie_tx_bytes_per_s, s.pcie_rx_bytes_per_s) for s in samples}
        readings = {}
        for s in samples:
            tx, rx = self._pcie.get(s.uuid, (None, None))
            readings[s.uuid] = DeviceReading(
                utilization=s.utilization,
                memory_used=s.memory_used,
                temperature=s.temperature,
                power=s.power_watts,
                pcie_tx=tx,
                pcie_rx=rx,
            )
        return readings

    def devices(self) -> list[DeviceInfo]:
        """The frame's description of every local device (power limits as last read)."""
        return [
            DeviceInfo(
                id=d.uuid,
                label=d.label,
                name=d.name,
                host="",
                mig=d.is_mig,
                memory_total=d.memory_total,
                power_limit=self._limits.get(d.uuid),
                cluster_memory=None,
            )
            for d in nvml.devices()
        ]

    @staticmethod
    def names() -> dict[str, str]:
        """UUID for each name a worker may carry for a local GPU: its UUID, or its index."""
        names: dict[str, str] = {}
        for device in nvml.devices():
            names[device.uuid] = device.uuid
            if not device.is_mig:
                names[str(device.index)] = device.uuid
        return names

    @staticmethod
    def process_list() -> list[nvml.GpuProcess] | None:
        """Every compute process on the local devices; None without NVML."""
        if not nvml.status().available:
            return None
        return nvml.processes()

    @staticmethod
    def processes(found: list[nvml.GpuProcess]) -> Processes:
        """The current user's compute processes; other users' only counted."""
        return Processes(
            own=[
                ProcessInfo(device=p.uuid, pid=p.pid, memory=p.memory_used) for p in found if p.own
            ],
            others=sum(1 for p in found if not p.own),
        )
