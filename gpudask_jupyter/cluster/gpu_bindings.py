"""Which GPU each worker of a cluster is bound to, asked of each worker once.

The worker answers through :func:`.worker_probe.bound_gpu`, shipped by value so that workers on
other machines need not have this package; a worker that cannot answer is described from what its
heartbeats report.
"""

from __future__ import annotations

import logging
from typing import Any

from ..monitor import heartbeat
from . import worker_probe

log = logging.getLogger(__name__)


class GpuBindings:
    """Which GPU each worker of one cluster is bound to, asked of each worker once."""

    def __init__(self) -> None:
        self._found: dict[str, dict[str, Any]] = {}

    def ask(self, client: Any, addresses: list[str]) -> None:
        """Ask the workers not asked yet; a worker that cannot answer is left to its heartbeat."""
        missing = [a for a in addresses if a not in self._found]
        if not missing:
            return
        import cloudpickle

        cloudpickle.register_pickle_by_value(worker_probe)
        try:
            found = client.run(worker_probe.bound_gpu, workers=missing, on_error="return")
        except Exception:
            log.debug("asking workers %s for their GPU failed", missing, exc_info=True)
            return
        finally:
            cloudpickle.unregister_pickle_by_value(worker_probe)
        for address, result in found.items():
            if isinstance(result, dict):
                self._found[address] = result
            else:
                log.debug("worker %s did not say which GPU it has: %r", address, result)

    def describe(self, address: str, identity: dict[str, Any]) -> tuple[str, str, int | None]:
        """(name, uuid, total memory) of a worker's GPU, from its answer or its heartbeat."""
        found = (self._found.get(address) or {}).get("gpu")
        if found:
            return found["name"], found["uuid"], found["memory_total"]
        beat = heartbeat.reported_gpu(identity)
        if beat is not None:
            return beat.name or "GPU", "", beat.memory_total
        return "", "", None
