"""The kernel's Dask cluster: start one worker per GPU, or attach to an existing scheduler.

Dask distributed is the engine; this module only decides what to start (which GPUs, which
fallback), keeps the one :class:`ClusterSession` of this process, records it in the per-kernel
registry for the server extension, and guarantees that what the kernel started is closed again
(``stop``, ``%unload_ext``, interpreter exit). A cluster this kernel merely attached to is never
shut down from here, only disconnected from.

Every failure a user can cause or fix surfaces as a :class:`~.errors.GpuDaskError` that names
the address, GPU or option involved.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config, gpus, heartbeat, lifecycle, nvml, probe, registry
from .errors import ClusterError, NoGpuError
from .kernel import kernel_id
from .table import Table
from .units import format_bytes, format_seconds

Warn = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class StartOptions:
    """What ``%gpu_cluster start`` was asked for; ``None`` means the library's default."""

    gpus: list[int | str] | None = None
    n_workers: int | None = None
    threads_per_worker: int | None = None
    memory_limit: int | float | str | None = None
    device_memory_limit: int | float | str | None = None
    rmm_pool_size: int | float | str | None = None
    rmm_async: bool = False
    protocol: str = "tcp"
    host: str = "127.0.0.1"
    dashboard_address: str | None = "127.0.0.1:0"
    tls: bool = False
    require_gpu: bool | None = None
    timeout: float | None = None

    def gpu_only_flags(self) -> list[str]:
        flags = {
            "--gpus": self.gpus is not None,
            "--device-memory-limit": self.device_memory_limit is not None,
            "--rmm-pool-size": self.rmm_pool_size is not None,
            "--rmm-async": self.rmm_async,
        }
        return [flag for flag, given in flags.items() if given]


def gpu_plan(opts: StartOptions) -> tuple[list[nvml.Device], str]:
    """The GPUs to give one worker each, or an empty list and the reason why none.

    ``ValueError`` for a ``--gpus`` or ``--n-workers`` that does not fit this machine.
    """
    state = nvml.status()
    if not state.available:
        if opts.gpus is not None:
            raise ValueError(f"--gpus: this machine has no usable GPU ({state.reason})")
        return [], state.reason
    chosen = gpus.select(opts.gpus, nvml.devices(), os.environ.get("CUDA_VISIBLE_DEVICES"))
    if not chosen:
        return [], (
            f"this kernel's CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} "
            "leaves no GPU"
        )
    if opts.n_workers is not None:
        if opts.n_workers > len(chosen):
            raise ValueError(
                f"--n-workers {opts.n_workers}: only {len(chosen)} GPU(s) selected "
                f"({', '.join(gpus.identifier(d) for d in chosen)}); "
                "the cluster runs one worker per GPU"
            )
        chosen = chosen[: opts.n_workers]
    if importlib.util.find_spec("dask_cuda") is None:
        return [], (
            "dask-cuda is not installed, so workers cannot be bound to GPUs "
            "(pip install 'gpudask-jupyter[gpu]')"
        )
    return chosen, ""


def _temporary_tls() -> tuple[Any, dict[str, str]]:
    from distributed import Security

    try:
        security = Security.temporary()
    except ImportError as err:
        raise ClusterError(
            "--tls needs the cryptography package to create certificates (pip install cryptography)"
        ) from err
    pem = {
        "ca": security.tls_ca_file,
        "cert": security.tls_client_cert,
        "key": security.tls_client_key,
    }
    return security, pem


def _dashboard_link(cluster_or_client: Any) -> str | None:
    if importlib.util.find_spec("bokeh") is None:
        return None
    try:
        link = cluster_or_client.dashboard_link
    except Exception:
        return None
    return str(link) if link else None


_MODE_TITLES = {"gpu": "GPU cluster", "cpu": "CPU cluster (no GPU)", "attached": "Attached cluster"}


def _short_uuid(uuid: str) -> str:
    return uuid if len(uuid) <= 16 else uuid[:12] + "…"


class ClusterSession:
    """The cluster this kernel started or attached to, and the Client that talks to it."""

    def __init__(
        self,
        client: Any,
        cluster: Any | None,
        devices: list[nvml.Device],
        cpu_reason: str = "",
        tls_files: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.devices = devices
        self.cpu_reason = cpu_reason
        self.tls_files = tls_files
        self.kernel_id = kernel_id()
        self.started_at = time.time()
        self._probes: dict[str, dict[str, Any]] = {}
        self._closed = False
        self._dashboard: str | None = None

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def start(cls, opts: StartOptions, warn: Warn = _stderr) -> ClusterSession:
        require = config.get("require-gpu") if opts.require_gpu is None else opts.require_gpu
        try:
            devices, reason = gpu_plan(opts)
        except ValueError as err:
            raise ClusterError(str(err)) from None
        if reason:
            if require:
                raise NoGpuError(
                    f"No usable GPU: {reason}. Nothing was started (--require-gpu is set; "
                    "without it a CPU cluster would start instead)."
                )
            ignored = opts.gpu_only_flags()
            warn(
                f"gpudask: no usable GPU ({reason}). Starting a CPU-only Dask cluster instead; "
                "%%to_gpu will leave data on the host. Pass --require-gpu to make this an error."
                + (f" Ignored GPU-only options: {', '.join(ignored)}." if ignored else "")
            )
        if opts.protocol == "ucx":
            if not devices:
                raise ClusterError(
                    "--protocol ucx needs GPUs and UCX; this machine has no usable GPU"
                )
            if importlib.util.find_spec("distributed_ucxx") is None:
                raise ClusterError(
                    "--protocol ucx needs the distributed-ucxx package "
                    "(pip install distributed-ucxx-cu13)"
                )
            if opts.tls:
                raise ClusterError("--tls works with --protocol tcp only")
        timeout = opts.timeout if opts.timeout is not None else config.get("startup-timeout")
        security, tls_pem = _temporary_tls() if opts.tls else (None, None)
        common: dict[str, Any] = {
            "preload": ["gpudask_jupyter.worker_setup"],
            "host": opts.host,
            "dashboard_address": opts.dashboard_address,
            "protocol": "tls" if opts.tls else opts.protocol,
        }
        if security is not None:
            common["security"] = security
        if opts.memory_limit is not None:
            common["memory_limit"] = opts.memory_limit
        cluster = client = None
        try:
            if devices:
                from dask_cuda import LocalCUDACluster

                gpu_kwargs: dict[str, Any] = {
                    "CUDA_VISIBLE_DEVICES": [gpus.identifier(d) for d in devices],
                    "n_workers": len(devices),
                    "threads_per_worker": opts.threads_per_worker or 1,
                    "rmm_async": opts.rmm_async,
                }
                if opts.device_memory_limit is not None:
                    gpu_kwargs["device_memory_limit"] = opts.device_memory_limit
                if opts.rmm_pool_size is not None:
                    gpu_kwargs["rmm_pool_size"] = opts.rmm_pool_size
                cluster = LocalCUDACluster(**gpu_kwargs, **common)
            else:
                from distributed import LocalCluster

                cluster = LocalCluster(
                    n_workers=opts.n_workers,
                    threads_per_worker=opts.threads_per_worker,
                    processes=True,
                    **common,
                )
            from distributed import Client

            client = Client(cluster, security=security, set_as_default=True)
            client.wait_for_workers(len(cluster.worker_spec), timeout=timeout)
        except Exception as err:
            for closable in (client, cluster):
                if closable is not None:
                    with contextlib.suppress(Exception):
                        closable.close()
            raise ClusterError(f"The cluster did not start: {type(err).__name__}: {err}") from err
        session = cls(client, cluster, devices, reason)
        if opts.dashboard_address is None:
            session._dashboard = ""  # the scheduler still serves HTTP, but no dashboard
        if tls_pem:
            session.tls_files = registry.write_tls(session.kernel_id, tls_pem)
        session._register()
        _set_current(session)
        return session

    @classmethod
    def attach(
        cls,
        address: str | None = None,
        scheduler_file: str | None = None,
        timeout: float = 10.0,
        tls_ca_file: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
    ) -> ClusterSession:
        from distributed import Client, Security

        if (address is None) == (scheduler_file is None):
            raise ClusterError(
                "attach needs a scheduler ADDRESS or --scheduler-file FILE (one of them)"
            )
        if scheduler_file is not None:
            path = Path(scheduler_file).expanduser()
            try:
                address = json.loads(path.read_text())["address"]
            except FileNotFoundError:
                raise ClusterError(f"--scheduler-file {scheduler_file}: no such file") from None
            except (OSError, ValueError, KeyError, TypeError) as err:
                raise ClusterError(
                    f"--scheduler-file {scheduler_file}: not a Dask scheduler file ({err})"
                ) from None
        assert address is not None
        tls_given = [f for f in (tls_ca_file, tls_cert, tls_key) if f]
        if "://" not in address:
            address = ("tls://" if tls_given else "tcp://") + address
        security = None
        if tls_given:
            if len(tls_given) != 3:
                raise ClusterError("TLS needs all of --tls-ca-file, --tls-cert and --tls-key")
            for flag, value in (
                ("--tls-ca-file", tls_ca_file),
                ("--tls-cert", tls_cert),
                ("--tls-key", tls_key),
            ):
                if not Path(str(value)).expanduser().is_file():
                    raise ClusterError(f"{flag} {value}: no such file")
            security = Security(
                tls_ca_file=str(Path(str(tls_ca_file)).expanduser()),
                tls_client_cert=str(Path(str(tls_cert)).expanduser()),
                tls_client_key=str(Path(str(tls_key)).expanduser()),
                require_encryption=True,
            )
        elif address.startswith("tls://"):
            raise ClusterError(f"{address} uses TLS: pass --tls-ca-file, --tls-cert and --tls-key")
        try:
            client = Client(address, timeout=timeout, security=security, set_as_default=True)
        except (OSError, TimeoutError) as err:
            raise ClusterError(
                f"No Dask scheduler answered at {address} within {format_seconds(timeout)} "
                f"({type(err).__name__}: {err}). Check the address (the scheduler prints it at "
                "start-up) and that this machine can reach it."
            ) from None
        except Exception as err:
            raise ClusterError(
                f"Could not attach to {address}: {type(err).__name__}: {err}"
            ) from err
        files = (
            {"ca_file": str(tls_ca_file), "cert_file": str(tls_cert), "key_file": str(tls_key)}
            if tls_given
            else None
        )
        session = cls(client, None, [], tls_files=files)
        session._register()
        _set_current(session)
        return session

    # -- properties -----------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        """ "gpu", "cpu" (a local fallback cluster) or "attached"."""
        if self.cluster is None:
            return "attached"
        return "gpu" if self.devices else "cpu"

    @property
    def address(self) -> str:
        return str(self.client.scheduler.address)

    @property
    def dashboard_link(self) -> str | None:
        if self._dashboard is None:
            target = self.cluster if self.cluster is not None else self.client
            self._dashboard = _dashboard_link(target) or ""
        return self._dashboard or None

    @property
    def alive(self) -> bool:
        return not self._closed and self.client.status == "running"

    def _register(self) -> None:
        entry = registry.Entry(
            kernel_id=self.kernel_id,
            pid=os.getpid(),
            mode=self.mode,
            scheduler_address=self.address,
            dashboard_link=self.dashboard_link,
            tls=self.tls_files,
        )
        try:
            registry.write(entry)
        except OSError as err:
            _stderr(f"gpudask: could not write the registry entry for the sidebar ({err})")

    # -- inspection -----------------------------------------------------------------------------

    def _workers(self) -> dict[str, dict[str, Any]]:
        try:
            info = self.client.scheduler_info(n_workers=-1)
        except TypeError:  # distributed before the n_workers argument
            info = self.client.scheduler_info()
        workers: dict[str, dict[str, Any]] = info.get("workers", {})
        return workers

    def _probe(self, addresses: list[str]) -> None:
        missing = [a for a in addresses if a not in self._probes]
        if not missing:
            return
        import cloudpickle

        cloudpickle.register_pickle_by_value(probe)
        try:
            found = self.client.run(probe.bound_gpu, workers=missing, on_error="return")
        except Exception:
            return
        finally:
            cloudpickle.unregister_pickle_by_value(probe)
        for address, result in found.items():
            if isinstance(result, dict):
                self._probes[address] = result

    def _gpu_of(self, address: str, identity: dict[str, Any]) -> tuple[str, str, int | None]:
        """(name, uuid, total memory) of a worker's GPU, from its probe or its heartbeat."""
        found = (self._probes.get(address) or {}).get("gpu")
        if found:
            return found["name"], found["uuid"], found["memory_total"]
        beat = heartbeat.reported_gpu(identity)
        if beat is not None:
            return beat.name or "GPU", "", beat.memory_total
        return "", "", None

    def summary(self) -> Table:
        """What was started or attached to: each worker and its GPU, and the dashboard link."""
        workers = self._workers()
        if self.mode != "cpu":
            self._probe(list(workers))
        n = len(workers)
        if self.mode == "gpu":
            title = f"GPU Dask cluster: {n} worker{'s' * (n != 1)}, one per GPU"
        elif self.mode == "cpu":
            title = f"CPU Dask cluster (no GPU): {n} worker{'s' * (n != 1)}"
        else:
            title = f"Attached to {self.address}: {n} worker{'s' * (n != 1)}"
        gpu_columns = ["GPU", "UUID", "GPU memory"] if self.mode != "cpu" else []
        table = Table(title, ["worker", "host", *gpu_columns, "threads", "memory limit"])
        for address, w in sorted(workers.items(), key=lambda kv: str(kv[1].get("name"))):
            gpu_cells: list[object] = []
            if gpu_columns:
                name, uuid, total = self._gpu_of(address, w)
                gpu_cells = [
                    name or "–",
                    _short_uuid(uuid) if uuid else "–",
                    format_bytes(total) if total else "–",
                ]
            table.add(
                w.get("name", address),
                w.get("host", ""),
                *gpu_cells,
                w.get("nthreads", "–"),
                format_bytes(w.get("memory_limit")) if w.get("memory_limit") else "none",
            )
        link = self.dashboard_link
        if link:
            table.links.append(("dashboard", link))
        table.notes.append(f"scheduler: {self.address}")
        if self.mode == "cpu":
            table.notes.append(f"no GPU: {self.cpu_reason}")
        return table

    def status(self) -> Table:
        """Live figures per worker: GPU use, host memory and tasks."""
        if not self.alive:
            raise ClusterError(
                f"The cluster at {self.address} is no longer reachable (its client was closed or "
                "the scheduler went away). Run %gpu_cluster stop, then start or attach again."
            )
        workers = self._workers()
        if self.mode != "cpu":
            self._probe(list(workers))
        gpu_columns = ["GPU", "GPU util", "GPU memory"] if self.mode != "cpu" else []
        n = len(workers)
        table = Table(
            f"{_MODE_TITLES[self.mode]} at {self.address}: {n} worker{'s' * (n != 1)}",
            [
                "worker",
                "host",
                *gpu_columns,
                "host memory",
                "threads",
                "tasks running / ready / held",
            ],
        )
        for address, w in sorted(workers.items(), key=lambda kv: str(kv[1].get("name"))):
            metrics = w.get("metrics") or {}
            gpu_cells: list[object] = []
            if gpu_columns:
                name, _, total = self._gpu_of(address, w)
                beat = heartbeat.reported_gpu(w)
                util = f"{beat.utilization:.0f}%" if beat and beat.utilization is not None else "–"
                used = beat.memory_used if beat else None
                total = (beat.memory_total if beat else None) or total
                gpu_memory = (
                    f"{format_bytes(used)} / {format_bytes(total)}"
                    if used is not None and total
                    else "–"
                )
                gpu_cells = [name or "–", util, gpu_memory]
            host_memory = format_bytes(metrics.get("memory"))
            if w.get("memory_limit"):
                host_memory += f" / {format_bytes(w['memory_limit'])}"
            table.add(
                w.get("name", address),
                w.get("host", ""),
                *gpu_cells,
                host_memory,
                w.get("nthreads", "–"),
                " / ".join(str(metrics.get(k, 0)) for k in ("executing", "ready", "in_memory")),
            )
        link = self.dashboard_link
        if link:
            table.links.append(("dashboard", link))
        if self.mode == "cpu":
            table.notes.append(f"no GPU: {self.cpu_reason}")
        return table

    # -- management -----------------------------------------------------------------------------

    def _timeout(self) -> float:
        return float(config.get("startup-timeout"))

    def scale(self, n: int) -> None:
        if self.cluster is None:
            raise ClusterError(
                f"This kernel attached to {self.address} and did not start it, so it cannot scale "
                "it; add or remove workers where that cluster was started (dask cuda worker, your "
                "job scheduler, dask-gateway ...)."
            )
        if self.devices and n > len(self.devices):
            raise ClusterError(
                f"scale {n}: this cluster has {len(self.devices)} GPU(s) "
                f"({', '.join(gpus.identifier(d) for d in self.devices)}), one worker each; "
                "start it with more --gpus to go further"
            )
        self.cluster.scale(n)
        self._wait_for(n)

    def _wait_for(self, n: int) -> None:
        deadline = time.monotonic() + self._timeout()
        while True:
            count = len(self._workers())
            if count == n:
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{count} worker(s) running after {format_seconds(self._timeout())}, "
                    f"{n} asked for; see the dashboard or worker logs"
                )
            time.sleep(0.1)

    def restart(self) -> None:
        """Restart every worker (frees their host and GPU memory), keeping the cluster."""
        try:
            self.client.restart(timeout=self._timeout())
        except Exception as err:
            raise ClusterError(f"Restart failed: {type(err).__name__}: {err}") from err

    def close(self) -> None:
        """Close what this kernel started; only disconnect from what it attached to."""
        if self._closed:
            return
        self._closed = True
        registry.remove(self.kernel_id)
        with contextlib.suppress(Exception):
            self.client.close(timeout=10)
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close(timeout=30)
        if _current is self:
            _set_current(None)


_current: ClusterSession | None = None
_lock = threading.Lock()
_atexit_registered = False


def current() -> ClusterSession | None:
    return _current


def _set_current(session: ClusterSession | None) -> None:
    global _current, _atexit_registered
    with _lock:
        _current = session
        if session is not None and not _atexit_registered:
            atexit.register(close_current)
            lifecycle.on_unload(close_current, lifecycle.CLUSTER)
            _atexit_registered = True


def close_current() -> bool:
    """Close the session if there is one; True if something was closed."""
    session = _current
    if session is None:
        return False
    session.close()
    return True
