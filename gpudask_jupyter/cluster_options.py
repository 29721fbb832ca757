"""What a start or an attach was asked for, checked, and turned into the library's keywords.

Every default of ``%gpu_cluster start`` and ``attach`` lives here once (the magics' parsers read
them from here), and every check that can refuse a request before anything runs: the GPUs to use,
the fallback to the CPU, the protocol, the TLS files. :mod:`.cluster` then only starts, attaches
and closes. Nothing here imports distributed or dask-cuda until a cluster is really made.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config, gpus, nvml, small_files
from .errors import ClusterError, NoGpuError

log = logging.getLogger(__name__)

Warn = Callable[[str], None]

#: where a started cluster listens unless ``--host`` says otherwise: this machine only
LOOPBACK = "127.0.0.1"
#: ``--dashboard-address`` spelling for "no dashboard"
NO_DASHBOARD = "none"
#: seconds ``attach`` waits for a scheduler to answer
ATTACH_TIMEOUT = 10.0
#: the highest TCP port
MAX_PORT = 65535
#: what each GPU worker advertises unless ``--resources`` changes it (the CPU fallback: nothing)
GPU_RESOURCES: dict[str, float] = {"GPU": 1}
#: bytes read at most from a ``--scheduler-file`` (they hold a few hundred)
MAX_SCHEDULER_FILE = 2**20
_RESOURCE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
#: what each worker runs first (its own process group, so Ctrl+C in the kernel spares it)
WORKER_PRELOAD = "gpudask_jupyter.worker_setup"


def parse_dashboard(text: str) -> str:
    """``HOST:PORT``, ``PORT`` or ``none`` (also ``off``, ``false``), checked; ``ValueError``."""
    stripped = text.strip()
    if stripped.lower() in {NO_DASHBOARD, "off", "false"}:
        return NO_DASHBOARD
    _, sep, port = stripped.rpartition(":")
    if not port.isascii() or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, PORT or none, got {text!r}")
    if int(port) > MAX_PORT:
        raise ValueError(f"port {port} is out of range: ports are 0 to {MAX_PORT}")
    return stripped if sep else port


def parse_resources(text: str) -> dict[str, float]:
    """``GPU=1,MEM=2e9``: worker resources by name, each a positive finite number; a
    ``ValueError`` names the entry that is wrong."""
    found: dict[str, float] = {}
    for item in text.split(","):
        name, sep, amount = (part.strip() for part in item.partition("="))
        if not sep or not _RESOURCE_NAME.fullmatch(name):
            raise ValueError(f"expected NAME=AMOUNT (like GPU=1), got {item.strip()!r}")
        try:
            value = float(amount)
        except ValueError:
            raise ValueError(f"{name}: expected a number, got {amount!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name}: the amount must be a positive number, got {amount!r}")
        if name in found:
            raise ValueError(f"{name} is given twice")
        found[name] = int(value) if value.is_integer() and value < 2**53 else value
    return found


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
    host: str = LOOPBACK
    #: ``HOST:PORT``, a bare port (on loopback), :data:`NO_DASHBOARD`, or None: a free port on host
    dashboard_address: str | None = None
    #: TLS with fresh per-cluster certificates; False (``--no-tls``) only when asked for
    tls: bool = True
    #: ``--no-tls`` on a ``--host`` other machines can reach: only with this explicit consent
    allow_insecure_network: bool = False
    #: more CPU workers than the cores this kernel may use
    oversubscribe: bool = False
    #: ``--resources``: added to (or changing) what each worker advertises
    resources: dict[str, float] | None = None
    require_gpu: bool | None = None  # None: the require-gpu option decides
    timeout: float | None = None  # None: the startup-timeout option

    def dashboard(self) -> str | None:
        """The dashboard address asked for (None: off); whether a dashboard starts by default is
        :mod:`.cluster_security`'s decision."""
        if self.dashboard_address is None:
            return f"{self.host}:0"
        if self.dashboard_address == NO_DASHBOARD:
            return None
        if self.dashboard_address.isdigit():
            return f"{LOOPBACK}:{self.dashboard_address}"
        return self.dashboard_address

    def startup_timeout(self) -> float:
        return float(config.get("startup-timeout") if self.timeout is None else self.timeout)

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


def resolve_workers(opts: StartOptions, warn: Warn) -> tuple[list[nvml.Device], str]:
    """:func:`gpu_plan` with the CPU fallback decided: the user warned, or :class:`NoGpuError`
    when a GPU is required; then the protocol checked against what will run."""
    try:
        devices, reason = gpu_plan(opts)
    except ValueError as err:
        raise ClusterError(str(err)) from err
    if reason:
        if config.require_gpu(opts.require_gpu):
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
    _check_protocol(opts, devices)
    if not devices and opts.n_workers is not None and not opts.oversubscribe:
        check_cpu_workers(opts.n_workers, "--n-workers")
    log.debug("workers: %s", [gpus.identifier(d) for d in devices] or f"CPU ({reason})")
    return devices, reason


def usable_cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_cpu_workers(n: int, asked: str, allowed: int | None = None) -> None:
    """Refuse more CPU workers than cores (or than ``allowed``, what a start with
    ``--oversubscribe`` asked for): each is a process with its own memory, and a huge count
    exhausts the machine before Dask can say anything."""
    cores = usable_cores()
    limit = max(cores, allowed or 0)
    if n > limit:
        more = f" (and {limit} asked for at start)" if limit > cores else ""
        raise ClusterError(
            f"{asked} {n}: this kernel may use {cores} core(s){more}, so at most {limit} CPU "
            "worker(s); start with --oversubscribe --n-workers N to run more anyway"
        )


def _check_protocol(opts: StartOptions, devices: list[nvml.Device]) -> None:
    if opts.protocol != "ucx":
        return
    if not devices:
        raise ClusterError("--protocol ucx needs GPUs and UCX; this machine has no usable GPU")
    if importlib.util.find_spec("distributed_ucxx") is None:
        raise ClusterError(
            "--protocol ucx needs the distributed-ucxx package (pip install distributed-ucxx-cu13)"
        )


def temporary_tls(kernel: str) -> tuple[Any, dict[str, str]]:
    """Fresh credentials for one cluster (:mod:`.certificates`), written owner-only to the
    registry's TLS folder of ``kernel`` (so the sidebar can connect too): the ``Security`` that
    the client, scheduler and workers use, reading those files, and the files by role as the
    registry records them. Files, not PEM text in memory: for text, distributed writes each SSL
    context's key to a temporary file again, several times per process."""
    from . import certificates, registry

    try:
        pem = certificates.fresh_pem()
    except ImportError as err:
        raise ClusterError(
            "TLS (the default) needs the cryptography package to create certificates "
            "(pip install cryptography), or start with --no-tls"
        ) from err
    files = registry.write_tls(kernel, pem)
    paths = {"ca": files["ca_file"], "cert": files["cert_file"], "key": files["key_file"]}
    return certificates.security_of(paths), files


def worker_resources(opts: StartOptions, gpu: bool) -> dict[str, float]:
    """What each worker advertises: ``GPU=1`` on a GPU worker (the CPU fallback: nothing), with
    ``--resources`` added or changing it."""
    return {**(GPU_RESOURCES if gpu else {}), **(opts.resources or {})}


def cluster_keywords(
    opts: StartOptions, devices: list[nvml.Device], security: Any, dashboard: str | None
) -> dict[str, Any]:
    """The keywords for ``LocalCUDACluster`` (with ``devices``) or ``LocalCluster`` (without);
    ``dashboard`` is the address decided by :mod:`.cluster_security` (None: no dashboard)."""
    keywords: dict[str, Any] = {
        "preload": [WORKER_PRELOAD],
        "host": opts.host,
        "dashboard_address": dashboard,
        "protocol": "tls" if opts.tls else opts.protocol,
    }
    if dashboard is None:  # the scheduler's HTTP server (a health check) takes a free port
        host = f"[{opts.host}]" if ":" in opts.host else opts.host
        keywords["scheduler_kwargs"] = {"dashboard_address": f"{host}:0"}
    if security is not None:
        keywords["security"] = security
    if opts.memory_limit is not None:
        keywords["memory_limit"] = opts.memory_limit
    resources = worker_resources(opts, bool(devices))
    if resources:
        keywords["resources"] = resources
    if not devices:
        keywords.update(
            n_workers=opts.n_workers, threads_per_worker=opts.threads_per_worker, processes=True
        )
        return keywords
    keywords.update(
        CUDA_VISIBLE_DEVICES=[gpus.identifier(d) for d in devices],
        n_workers=len(devices),
        threads_per_worker=opts.threads_per_worker or 1,
        rmm_async=opts.rmm_async,
    )
    if opts.device_memory_limit is not None:
        keywords["device_memory_limit"] = opts.device_memory_limit
    if opts.rmm_pool_size is not None:
        keywords["rmm_pool_size"] = opts.rmm_pool_size
    return keywords


@dataclass(frozen=True)
class AttachTarget:
    """A scheduler to attach to, checked: its full address, and its TLS files (expanded paths)
    when it needs them."""

    address: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    @classmethod
    def resolve(
        cls,
        address: str | None,
        scheduler_file: str | None,
        tls_ca_file: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
    ) -> AttachTarget:
        """The target from ``attach``'s arguments; :class:`ClusterError` says what is wrong."""
        if (address is None) == (scheduler_file is None):
            raise ClusterError(
                "attach needs a scheduler ADDRESS or --scheduler-file FILE (one of them)"
            )
        if scheduler_file is not None:
            address = _read_scheduler_file(scheduler_file)
        assert address is not None
        tls = {"--tls-ca-file": tls_ca_file, "--tls-cert": tls_cert, "--tls-key": tls_key}
        given = {flag: value for flag, value in tls.items() if value}
        if "://" not in address:
            address = ("tls://" if given else "tcp://") + address
        if not given:
            if address.startswith("tls://"):
                raise ClusterError(
                    f"{address} uses TLS: pass --tls-ca-file, --tls-cert and --tls-key"
                )
            return cls(address)
        if len(given) != len(tls):
            raise ClusterError("TLS needs all of --tls-ca-file, --tls-cert and --tls-key")
        paths = {flag: Path(value).expanduser().absolute() for flag, value in given.items()}
        for flag, path in paths.items():
            if not path.is_file():
                raise ClusterError(f"{flag} {given[flag]}: no such file")
        ca, cert, key = (str(paths[flag]) for flag in tls)
        return cls(address, ca, cert, key)

    def security(self) -> Any:
        """The ``distributed.Security`` for this scheduler, None without TLS."""
        if self.ca_file is None:
            return None
        from distributed import Security

        return Security(
            tls_ca_file=self.ca_file,
            tls_client_cert=self.cert_file,
            tls_client_key=self.key_file,
            require_encryption=True,
        )

    def tls_files(self) -> dict[str, str] | None:
        """The TLS files as the registry records them (for the sidebar), None without TLS."""
        if self.ca_file is None or self.cert_file is None or self.key_file is None:
            return None
        return {"ca_file": self.ca_file, "cert_file": self.cert_file, "key_file": self.key_file}


def _read_scheduler_file(scheduler_file: str) -> str:
    """The address in a scheduler file, read without blocking and up to a size limit."""
    path = Path(scheduler_file).expanduser()
    try:
        data, _ = small_files.read_regular(path, MAX_SCHEDULER_FILE)
    except FileNotFoundError:
        raise ClusterError(f"--scheduler-file {scheduler_file}: no such file") from None
    except small_files.NotReadable as err:
        raise ClusterError(
            f"--scheduler-file {scheduler_file}: {str(err).removeprefix(str(path)).strip()}; "
            "a scheduler file is the small JSON file that dask scheduler --scheduler-file writes"
        ) from None
    except OSError as err:
        raise ClusterError(
            f"--scheduler-file {scheduler_file}: cannot read it ({err.strerror or err})"
        ) from None
    try:
        address = json.loads(data)["address"]
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        raise ClusterError(
            f"--scheduler-file {scheduler_file}: not a Dask scheduler file "
            f"({type(err).__name__}: {err})"
        ) from None
    if not isinstance(address, str) or not address.strip() or len(address) > 1000:
        raise ClusterError(
            f"--scheduler-file {scheduler_file}: its address {address!r:.80} is not an address"
        )
    return address.strip()
