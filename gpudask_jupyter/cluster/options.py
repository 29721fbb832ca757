"""What a start, attach or join was asked for, checked, and turned into the library's keywords.

Every default of ``%gpu_cluster start``, ``attach`` and ``join`` lives here once (the magics'
parsers read them from here), and every check that can refuse a request before anything runs: the
GPUs to use, the fallback to the CPU, the protocol. The scheduler an attach or a join aims at is
checked in :mod:`.target`. :mod:`.session` then only starts, attaches, joins and closes.
Nothing here imports distributed or dask-cuda until a cluster is really made.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import config, registry
from ..errors import ClusterError, NoGpuError
from ..machine import gpus, nvml
from ..machine.cores import usable_cores
from . import certificates

log = logging.getLogger(__name__)

Warn = Callable[[str], None]

#: where a started cluster listens unless ``--host`` says otherwise: this machine only
LOOPBACK = "127.0.0.1"
#: ``--dashboard-address`` spelling for "no dashboard"
NO_DASHBOARD = "none"
#: seconds ``attach`` and ``join`` wait for a scheduler to answer
ATTACH_TIMEOUT = 10.0
#: seconds ``leave`` and ``stop`` give a scheduler to move the data of the workers this kernel
#: joined to it elsewhere
LEAVE_TIMEOUT = 30.0
#: the highest TCP port
MAX_PORT = 65535
#: what each GPU worker advertises unless ``--resources`` changes it (the CPU fallback: nothing)
GPU_RESOURCES: dict[str, float] = {"GPU": 1}
_RESOURCE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
#: what each worker runs first (its own process group, so Ctrl+C in the kernel spares it)
WORKER_PRELOAD = "gpudask_jupyter.cluster.worker_setup"


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
        :mod:`.security`'s decision."""
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
    restriction = gpus.kernel_restriction()
    chosen = gpus.select(opts.gpus, nvml.devices(), restriction)
    if not chosen:
        return [], f"this kernel's CUDA_VISIBLE_DEVICES={restriction!r} leaves no GPU"
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


def resolve_workers(
    opts: StartOptions, warn: Warn, joining: bool = False
) -> tuple[list[nvml.Device], str]:
    """:func:`gpu_plan` with the CPU fallback decided: the user warned, or :class:`NoGpuError`
    when a GPU is required; then the protocol checked against what will run. ``joining``: the
    workers join a scheduler elsewhere (``join``) rather than make a cluster of their own."""
    try:
        devices, reason = gpu_plan(opts)
    except ValueError as err:
        raise ClusterError(str(err)) from err
    if reason:
        fallback = "CPU workers would join" if joining else "a CPU cluster would start"
        if config.require_gpu(opts.require_gpu):
            raise NoGpuError(
                f"No usable GPU: {reason}. Nothing was started (--require-gpu is set; "
                f"without it {fallback} instead)."
            )
        ignored = opts.gpu_only_flags()
        instead = "Joining CPU workers" if joining else "Starting a CPU-only Dask cluster"
        # the reason once: the summary printed next ends with it ("no GPU: …")
        warn(
            f"gpudask: no usable GPU. {instead} instead; %%to_gpu will leave data on the "
            "host. Pass --require-gpu to make this an error."
            + (f" Ignored GPU-only options: {', '.join(ignored)}." if ignored else "")
        )
    _check_protocol(opts, devices)
    if not devices and opts.n_workers is not None and not opts.oversubscribe:
        check_cpu_workers(opts.n_workers, "--n-workers")
    log.debug("workers: %s", [gpus.identifier(d) for d in devices] or f"CPU ({reason})")
    return devices, reason


def check_listen_host(host: str) -> None:
    """Refuse a ``--host`` this machine cannot listen on (an address of another machine, a name
    that does not resolve) before anything starts: the scheduler would fail on it half-way."""
    import socket

    try:
        infos = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.bind(address)
    except (OSError, IndexError, UnicodeError) as err:
        raise ClusterError(
            f"--host {host}: this machine cannot listen there ({err}); give one of its own "
            "addresses, or leave --host out (this machine only)"
        ) from None


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


def worker_count(opts: StartOptions, devices: list[nvml.Device]) -> int | None:
    """How many workers a start makes: one per GPU; on the CPU ``--n-workers`` (None: the
    library's default)."""
    return len(devices) if devices else opts.n_workers


def cluster_keywords(
    opts: StartOptions,
    devices: list[nvml.Device],
    security: Any,
    dashboard: str | None,
    worker_caps: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keywords for ``LocalCUDACluster`` (with ``devices``) or ``LocalCluster`` (without);
    ``dashboard`` is the address decided by :mod:`.security` (None: no dashboard);
    ``worker_caps`` the room's memory caps (:mod:`.room.caps`), which win over the defaults."""
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
            n_workers=worker_count(opts, devices),
            threads_per_worker=opts.threads_per_worker,
            processes=True,
        )
        return keywords
    keywords.update(
        CUDA_VISIBLE_DEVICES=[gpus.identifier(d) for d in devices],
        n_workers=worker_count(opts, devices),
        threads_per_worker=opts.threads_per_worker or 1,
        rmm_async=opts.rmm_async,
    )
    if opts.device_memory_limit is not None:
        keywords["device_memory_limit"] = opts.device_memory_limit
    if opts.rmm_pool_size is not None:
        keywords["rmm_pool_size"] = opts.rmm_pool_size
    keywords.update(worker_caps or {})
    return keywords


def join_keywords(
    opts: StartOptions,
    devices: list[nvml.Device],
    security: Any,
    worker_caps: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keywords of the workers a ``join`` lends: for dask-cuda's ``CUDAWorker`` (with
    ``devices``, one nanny per GPU, each bound to its GPU as ``LocalCUDACluster`` binds it) or
    for each ``distributed.Nanny`` (without), with :func:`cluster_keywords`' defaults: ``GPU=1``
    on a GPU worker, one thread per GPU worker; CPU workers share the cores this kernel may use.
    No dashboard: a worker's HTTP port (on the worker's own address) answers a health check.
    Their processes log warnings only, as ``LocalCluster``'s do: what they say before the preload
    sends their stderr to the kernel's log file (the preload's own INFO lines) would otherwise
    show in the cell."""
    keywords: dict[str, Any] = {
        "preload": [WORKER_PRELOAD],
        "silence_logs": logging.WARNING,
        "security": security,
        "dashboard": False,
        "dashboard_address": None,  # the worker's own address, a free port
        "memory_limit": "auto" if opts.memory_limit is None else opts.memory_limit,
    }
    resources = worker_resources(opts, bool(devices))
    if not devices:
        n = opts.n_workers or 1
        threads = opts.threads_per_worker or max(1, usable_cores() // n)
        return {**keywords, "nthreads": threads, "resources": resources or None}
    keywords.update(
        nthreads=opts.threads_per_worker or 1,
        rmm_async=opts.rmm_async,
        # CUDAWorker takes them as the command line does: NAME=AMOUNT, comma-separated
        resources=",".join(f"{name}={amount:g}" for name, amount in resources.items()) or None,
    )
    if opts.device_memory_limit is not None:
        keywords["device_memory_limit"] = opts.device_memory_limit
    if opts.rmm_pool_size is not None:
        keywords["rmm_pool_size"] = opts.rmm_pool_size
    keywords.update(worker_caps or {})
    return keywords
