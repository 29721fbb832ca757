"""What the magics accept: one parser per ``%gpu_cluster`` subcommand and per cell magic.

Each parser is declared with IPython's ``magic_arguments`` decorators on a stub whose docstring is
the subcommand's help, so ``%gpu_cluster?`` (every usage, built by :func:`gpu_cluster_doc`) and
``%gpu_cluster SUB --help`` always show what is really parsed. The argument types are in
:mod:`.arg_types`; :func:`parse` turns any bad input into IPython's ``UsageError`` with the usage
line, before anything starts. Defaults that the cluster also knows are read from
:mod:`..cluster.options`, so each lives once.
"""

from __future__ import annotations

import argparse
from typing import Any

from IPython.core import magic_arguments as ma
from IPython.core.error import UsageError

from ..cluster import gateway as gateway_cluster
from ..cluster.options import ATTACH_TIMEOUT, LEAVE_TIMEOUT, StartOptions
from ..config import OPTIONS, get
from . import arg_types
from .shared_arguments import (
    GATEWAY_AUTH,
    GPUS,
    N_WORKERS,
    RESOURCES,
    SCHEDULER,
    THREADS_AND_MEMORY,
    TLS_FILES,
    Spec,
)

#: a parser declaration: a stub function carrying ``magic_arguments``' parser


def _range(option: str) -> str:
    """An option's clamping range as help text shows it, read from the option itself."""
    low, high = OPTIONS[option].limits or (0.0, 0.0)
    return f"{low:g}–{high:g}"


# -- %gpu_cluster: one parser per subcommand -------------------------------------------------------


@ma.magic_arguments(name="gpu_cluster start")
@GPUS
@N_WORKERS
@ma.argument(
    "--oversubscribe",
    action="store_true",
    help="allow more CPU workers than this kernel's cores (CPU fallback)",
)
@THREADS_AND_MEMORY
@ma.argument(
    "--protocol",
    choices=["tcp", "ucx"],
    default=StartOptions.protocol,
    help="communication between workers (ucx needs distributed-ucxx)",
)
@ma.argument(
    "--host",
    default=StartOptions.host,
    help=f"address the scheduler and workers listen on (default {StartOptions.host}: "
    "this machine only)",
)
@ma.argument(
    "--dashboard-address",
    type=arg_types.dashboard_address,
    metavar="ADDR",
    help="dashboard HOST:PORT, PORT, or none (default: a free port on --host, or none when "
    "other people use this machine: it has no authentication)",
)
@ma.argument(
    "--tls",
    action=argparse.BooleanOptionalAction,
    default=StartOptions.tls,
    help="TLS with fresh certificates for this cluster alone (the default); --no-tls: plain "
    "TCP, which any local user can connect to and run code through, as you",
)
@ma.argument(
    "--allow-insecure-network",
    action="store_true",
    help="with --no-tls, allow a --host that other machines can reach (anyone who reaches it "
    "can run code as you)",
)
@RESOURCES
@ma.argument(
    "--require-gpu",
    action="store_true",
    help="fail instead of starting a CPU cluster when no GPU is usable",
)
@ma.argument(
    "--timeout",
    type=arg_types.seconds,
    metavar="SECONDS",
    help="how long to wait for the workers (default: option startup-timeout)",
)
@ma.argument(
    "--replace",
    action="store_true",
    help="stop the kernel's current cluster first instead of refusing to start a second",
)
@ma.argument(
    "--gateway",
    nargs="?",
    const="",
    metavar="ADDRESS",
    help="a new cluster from dask-gateway instead: at ADDRESS, else where dask-gateway's "
    "configuration says (DASK_GATEWAY__ADDRESS, as daskhub sets it); --n-workers and --gpus N "
    "(GPU workers) scale it, --timeout bounds every call",
)
@ma.argument(
    "--option",
    action="append",
    type=arg_types.name_value,
    default=[],
    metavar="NAME=VALUE",
    help="with --gateway: one of the gateway's cluster options (%%gpu_cluster gateway lists them)",
)
@GATEWAY_AUTH
def start() -> None:
    """Start a local Dask cluster with one worker per GPU (dask-cuda's LocalCUDACluster), or
    with --gateway a cluster of a dask-gateway server.

    Returns the Client and makes it the default, so ``client = %gpu_cluster start`` works.
    Without a usable GPU a CPU LocalCluster starts instead, with a warning. The cluster speaks
    TLS with certificates made for it alone, so other local users cannot use it (--no-tls: plain
    TCP); on a machine that others use, it serves no dashboard unless --dashboard-address asks.
    A gateway's cluster comes with its own TLS credentials, handed to this kernel alone.
    """


def _worker_options(args: argparse.Namespace) -> dict[str, Any]:
    """What ``start`` and ``join`` both ask of their workers, from their parsed arguments."""
    return {
        "gpus": args.gpus,
        "n_workers": args.n_workers,
        "threads_per_worker": args.threads_per_worker,
        "memory_limit": args.memory_limit,
        "device_memory_limit": args.device_memory_limit,
        "rmm_pool_size": args.rmm_pool_size,
        "rmm_async": args.rmm_async,
        "resources": args.resources,
        "require_gpu": True if args.require_gpu else None,
    }


def start_options(args: argparse.Namespace) -> StartOptions:
    """What ``start`` was asked for, from its parsed arguments."""
    return StartOptions(
        **_worker_options(args),
        protocol=args.protocol,
        host=args.host,
        dashboard_address=args.dashboard_address,
        tls=args.tls,
        allow_insecure_network=args.allow_insecure_network,
        oversubscribe=args.oversubscribe,
        timeout=args.timeout,
    )


#: what start --gateway leaves to the gateway (its own workers, its own TLS): refused with it
_LOCAL_ONLY = {
    "oversubscribe": "--oversubscribe",
    "threads_per_worker": "--threads-per-worker",
    "memory_limit": "--memory-limit (a gateway option sets it, e.g. --option worker_memory=8)",
    "device_memory_limit": "--device-memory-limit",
    "rmm_pool_size": "--rmm-pool-size",
    "rmm_async": "--rmm-async",
    "resources": "--resources",
    "dashboard_address": "--dashboard-address",
}


def gateway_plan(args: argparse.Namespace) -> Any:
    """What ``start --gateway`` (or ``attach --gateway NAME``) asks of the gateway; a
    ``UsageError`` for what only a local cluster takes, or a ``--gpus`` that is not a count."""
    asked_local = [flag for attr, flag in _LOCAL_ONLY.items() if getattr(args, attr, None)]
    if asked_local:
        raise UsageError(
            f"with --gateway, the gateway sets up the workers: {asked_local[0]} is not taken; "
            "its cluster options are (%gpu_cluster gateway lists them)"
        )
    gpus = getattr(args, "gpus", None)
    count = None
    if gpus is not None:
        if len(gpus) != 1 or not isinstance(gpus[0], int) or gpus[0] < 1:
            raise UsageError("with --gateway, --gpus is a number of GPU workers (e.g. --gpus 2)")
        count = gpus[0]
    timeout = args.timeout if args.timeout is not None else float(get("startup-timeout"))
    if hasattr(args, "gateway_address"):  # attach --gateway NAME
        address, name = args.gateway_address, args.gateway
    else:
        address, name = args.gateway or None, None
    return gateway_cluster.GatewayPlan(
        address=gateway_cluster.address_of(address),
        auth=args.auth,
        options=dict(getattr(args, "option", [])),
        n_workers=getattr(args, "n_workers", None),
        gpus=count,
        timeout=timeout,
        name=name,
    )


@ma.magic_arguments(name="gpu_cluster attach")
@SCHEDULER
@ma.argument(
    "--timeout",
    type=arg_types.seconds,
    default=ATTACH_TIMEOUT,
    metavar="SECONDS",
    help=f"give up connecting after this long (default {ATTACH_TIMEOUT:g}s)",
)
@TLS_FILES
@ma.argument("--replace", action="store_true", help="leave the kernel's current cluster first")
@ma.argument(
    "--gateway",
    metavar="NAME",
    help="a running cluster of yours on dask-gateway, by name (%%gpu_cluster gateway lists them)",
)
@ma.argument(
    "--gateway-address",
    metavar="ADDRESS",
    help="with --gateway: the gateway (default: dask-gateway's configuration)",
)
@GATEWAY_AUTH
def attach() -> None:
    """Connect to an existing Dask scheduler, e.g. a multi-node cluster of `dask cuda worker`s,
    or with --gateway NAME to a running cluster of yours on dask-gateway.

    Returns the Client and makes it the default. `stop` later only disconnects.
    """


@ma.magic_arguments(name="gpu_cluster join")
@SCHEDULER
@GPUS
@N_WORKERS
@THREADS_AND_MEMORY
@RESOURCES
@TLS_FILES
@ma.argument(
    "--require-gpu",
    action="store_true",
    help="fail instead of joining CPU workers when no GPU is usable",
)
@ma.argument(
    "--timeout",
    type=arg_types.seconds,
    default=ATTACH_TIMEOUT,
    metavar="SECONDS",
    help=f"give up reaching the scheduler after this long (default {ATTACH_TIMEOUT:g}s); the "
    "workers then have the startup-timeout option to join",
)
@ma.argument(
    "--replace",
    action="store_true",
    help="stop or leave the kernel's current cluster first instead of refusing",
)
def join() -> None:
    """Put this machine's GPUs to work for a scheduler that runs elsewhere: one dask-cuda worker
    per GPU (as `dask cuda worker ADDRESS` starts them), CPU workers without a GPU.

    Returns a Client of that scheduler and makes it the default. The workers run whatever the
    scheduler sends them, as you: join only schedulers you trust. `leave` (or `stop`) retires
    them, their data moved to the scheduler's other workers first; they also end with the kernel.
    """


def join_options(args: argparse.Namespace) -> StartOptions:
    """What ``join`` asks of its workers, from its parsed arguments (its ``--timeout`` is for
    reaching the scheduler, not part of these)."""
    return StartOptions(**_worker_options(args))


@ma.magic_arguments(name="gpu_cluster leave")
@ma.argument(
    "--timeout",
    type=arg_types.seconds,
    default=LEAVE_TIMEOUT,
    metavar="SECONDS",
    help="how long the scheduler may take to move the data of this kernel's workers to its "
    f"other workers (default {LEAVE_TIMEOUT:g}s); they are ended then, moved or not",
)
def leave() -> None:
    """Retire the workers this kernel joined to a scheduler: the scheduler moves the data they
    hold to its other workers first, then they end; then disconnect (as `stop` does)."""


@ma.magic_arguments(name="gpu_cluster status")
@ma.argument(
    "-v",
    "--verbose",
    action="store_true",
    help="also print the full traceback of the last gpudask error, for a bug report",
)
def status() -> None:
    """Workers, hosts, GPUs, memory and tasks of the kernel's cluster (also: bare %gpu_cluster)."""


@ma.magic_arguments(name="gpu_cluster scale")
@ma.argument(
    "n",
    nargs="?",
    type=arg_types.n_workers,
    help="number of workers wanted (at most one per selected GPU)",
)
@ma.argument(
    "--adapt",
    nargs=2,
    type=arg_types.n_workers,
    metavar=("MIN", "MAX"),
    help="a gateway cluster: let the gateway scale it between MIN and MAX workers as work comes",
)
def scale() -> None:
    """Change the number of workers of a cluster this kernel started (or its adaptive bounds,
    on dask-gateway)."""


@ma.magic_arguments(name="gpu_cluster restart")
def restart() -> None:
    """Restart every worker, freeing their host and GPU memory; the cluster stays. Workers of a
    cluster this kernel started that all ended start again, with the kernel's module path."""


@ma.magic_arguments(name="gpu_cluster stop")
@ma.argument(
    "--keep",
    action="store_true",
    help="a gateway cluster: disconnect and leave it running (attach --gateway NAME comes back)",
)
def stop() -> None:
    """Close the cluster this kernel started (no worker process is left; a gateway's is shut
    down), detach from an attached one (which keeps running), or leave a joined one (as `leave`
    does)."""


@ma.magic_arguments(name="gpu_cluster gateway")
@ma.argument("address", nargs="?", help="the gateway (default: dask-gateway's configuration)")
@GATEWAY_AUTH
@ma.argument(
    "--timeout",
    type=arg_types.seconds,
    default=ATTACH_TIMEOUT,
    metavar="SECONDS",
    help=f"give up after this long (default {ATTACH_TIMEOUT:g}s)",
)
def gateway() -> None:
    """Your clusters on dask-gateway, and the cluster options it offers (for start --option)."""


@ma.magic_arguments(name="gpu_cluster panel")
@ma.argument(
    "--interval",
    type=arg_types.seconds,
    metavar="SECONDS",
    help=f"seconds between samples, {_range('refresh-interval')} "
    "(default: option refresh-interval)",
)
@ma.argument(
    "--history",
    type=arg_types.seconds,
    metavar="SECONDS",
    help=f"seconds of history to show, {_range('history')} (default: option history)",
)
@ma.argument(
    "--processes",
    action="store_true",
    help="also list your GPU processes (other users' only as a count)",
)
@ma.argument(
    "--text",
    action="store_true",
    help="print a text snapshot instead of the live widget (what a terminal gets anyway)",
)
def panel() -> None:
    """Show the live panel: every GPU's utilisation and memory, the task stream and progress.

    Same as ``gpudask_jupyter.Panel()``. Sampling runs on a background thread of the kernel.
    """


@ma.magic_arguments(name="gpu_cluster room")
def room() -> None:
    """On a shared GPU server: every GPU, its holders, their memory in use against their
    share, and who has been idle (other students as counts unless the room-names option
    shows names)."""


@ma.magic_arguments(name="gpu_cluster profile")
@ma.argument(
    "--cell",
    type=int,
    metavar="N",
    help="the cell In[N] (default: the last cell that finished before this one)",
)
@ma.argument(
    "--seconds",
    type=arg_types.seconds,
    metavar="S",
    help="the last S seconds instead of a cell (e.g. 30, 2min)",
)
def profile() -> None:
    """Where the GPU's time, memory and bus bytes went in a cell (or the last seconds): per task
    prefix on the cluster's workers, and the kernel's own GPU work, as a table (a pandas
    DataFrame, returned). GPU time comes from CUPTI where cupti-python is installed, else NVML's
    per-process samples; the lines above the table say which, and its resolution.

    Examples::

        %gpu_cluster profile
        df = %gpu_cluster profile --cell 12
        %gpu_cluster profile --seconds 60
    """


@ma.magic_arguments(name="gpu_cluster config")
def config() -> None:
    """Show every gpudask option, its value in effect and where to set it."""


SUBCOMMANDS: dict[str, Spec] = {
    "start": start,
    "attach": attach,
    "join": join,
    "leave": leave,
    "status": status,
    "scale": scale,
    "restart": restart,
    "stop": stop,
    "panel": panel,
    "room": room,
    "profile": profile,
    "config": config,
    "gateway": gateway,
}

# -- parsing ---------------------------------------------------------------------------------------


def parser_of(spec: Spec) -> argparse.ArgumentParser:
    return spec.parser  # type: ignore[attr-defined,no-any-return]


def parse(spec: Spec, line: str) -> argparse.Namespace | None:
    """Parse one magic's arguments; None after printing ``--help``."""
    parser = parser_of(spec)
    if {"-h", "--help"} & set(line.split()):
        print(parser.format_help())
        return None
    try:
        return parser.parse_argstring(line)  # type: ignore[attr-defined,no-any-return]
    except UsageError as err:
        raise UsageError(f"{err}\n{usage(parser)}") from None
    except ValueError as err:  # shlex: "No closing quotation", "No escaped character"
        raise UsageError(
            f"cannot split the arguments ({err}): close the quote, or escape it with a "
            f"backslash\n{usage(parser)}"
        ) from None


def usage(parser: argparse.ArgumentParser) -> str:
    """The one-line usage, without the reST markup IPython's help formatter adds."""
    text = parser.format_usage().strip().removeprefix("::").strip()
    return "usage: " + " ".join(text.split())


def unknown_subcommand(sub: str) -> UsageError:
    return UsageError(
        f"unknown subcommand {sub!r}; choose one of {', '.join(SUBCOMMANDS)}\n"
        "usage: %gpu_cluster {" + ",".join(SUBCOMMANDS) + "} [options]"
    )


def gpu_cluster_doc() -> str:
    """``%gpu_cluster``'s docstring: how to call it, examples, and every subcommand's usage."""
    parts = [
        "Start, attach to, join and manage this kernel's Dask cluster (one worker per GPU).",
        "",
        "    %gpu_cluster SUBCOMMAND [options]     (bare %gpu_cluster = status)",
        "    %gpu_cluster SUBCOMMAND --help        (one subcommand's options)",
        "",
        "Examples::",
        "",
        "    client = %gpu_cluster start",
        "    %gpu_cluster start --gpus 0,1 --rmm-pool-size 0.5",
        "    %gpu_cluster attach tcp://10.0.0.5:8786",
        "    %gpu_cluster start --gateway --n-workers 2 --option worker_memory=8",
        "    %gpu_cluster gateway",
        "    %gpu_cluster join tcp://10.0.0.5:8786 --gpus 0,1",
        "    %gpu_cluster leave",
        "    %gpu_cluster scale 1",
        "    %gpu_cluster panel",
        "    %gpu_cluster status --verbose",
        "    %gpu_cluster room",
        "    %gpu_cluster profile",
        "    %gpu_cluster stop",
        "",
    ]
    for spec in SUBCOMMANDS.values():
        parts.append(parser_of(spec).format_help())
    return "\n".join(parts)
