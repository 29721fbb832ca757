"""The IPython magics: argument parsing, help and printing; the work happens elsewhere.

``%gpu_cluster SUBCOMMAND`` has one parser per subcommand (IPython's ``magic_arguments``), so
``%gpu_cluster?`` shows every usage and ``%gpu_cluster start --help`` one of them. Bad input is an
IPython ``UsageError`` carrying the usage line, raised before anything starts; errors from the
cluster or the conversions (:class:`~.errors.GpuDaskError`) are shown the same way, as one
sentence instead of a library traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core import magic_arguments as ma
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from traitlets import Bool, Float, Integer, Unicode, observe

from . import config
from .errors import GpuDaskError
from .gpus import parse_spec
from .units import parse_bytes, parse_seconds

if TYPE_CHECKING:
    from .convert import Direction

# -- argument types: each raises ArgumentTypeError with a sentence argparse shows as is ----------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of workers, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _gpus(text: str) -> list[int | str]:
    try:
        return parse_spec(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--gpus: ")) from None


def _size_or_fraction(*keywords: str) -> Callable[[str], int | float | str | None]:
    def parse(text: str) -> int | float | str | None:
        lowered = text.strip().lower()
        if lowered in keywords:
            return lowered
        if lowered in {"none", "0"} and "none" in keywords:
            return 0
        try:
            fraction = float(lowered)
        except ValueError:
            pass
        else:
            if 0 < fraction <= 1:
                return fraction
            if fraction <= 0:
                raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
        try:
            return parse_bytes(text)
        except ValueError:
            choices = ", ".join(k for k in keywords) + ", " if keywords else ""
            raise argparse.ArgumentTypeError(
                f"expected {choices}a size like 16GB or a fraction like 0.8, got {text!r}"
            ) from None

    return parse


def _seconds(text: str) -> float:
    try:
        return parse_seconds(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _dashboard(text: str) -> str:
    lowered = text.strip().lower()
    if lowered in {"none", "off", "false"}:
        return "none"
    if lowered.isdigit():
        return f"127.0.0.1:{lowered}"
    _, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, PORT or none, got {text!r}")
    return text


# -- one parser per subcommand --------------------------------------------------------------------


@ma.magic_arguments(name="gpu_cluster start")
@ma.argument(
    "--gpus",
    type=_gpus,
    metavar="LIST",
    help="GPUs for the workers: indices as nvidia-smi shows them or GPU-/MIG- UUIDs, "
    "comma-separated (default: every GPU this kernel may use)",
)
@ma.argument(
    "--n-workers",
    type=_positive_int,
    metavar="N",
    help="number of workers (GPU: the first N selected GPUs; CPU fallback: N processes)",
)
@ma.argument(
    "--threads-per-worker",
    type=_positive_int,
    metavar="N",
    help="threads per worker (default 1 with GPUs)",
)
@ma.argument(
    "--memory-limit",
    type=_size_or_fraction("auto", "none"),
    metavar="SIZE",
    help="host memory per worker before spilling to disk: 16GB, 0.25 (of RAM), auto, none",
)
@ma.argument(
    "--device-memory-limit",
    type=_size_or_fraction("auto", "default", "none"),
    metavar="SIZE",
    help="GPU memory per worker before spilling to host: 60GB, 0.8 (of the GPU), default, none",
)
@ma.argument(
    "--rmm-pool-size",
    type=_size_or_fraction(),
    metavar="SIZE",
    help="pre-allocate an RMM memory pool of this size on each GPU: 40GB or 0.5",
)
@ma.argument(
    "--rmm-async",
    action="store_true",
    help="use RMM's asynchronous (cudaMallocAsync) allocator on each GPU",
)
@ma.argument(
    "--protocol",
    choices=["tcp", "ucx"],
    default="tcp",
    help="communication between workers (ucx needs distributed-ucxx)",
)
@ma.argument(
    "--host",
    default="127.0.0.1",
    help="address the scheduler and workers listen on (default 127.0.0.1: this machine only)",
)
@ma.argument(
    "--dashboard-address",
    type=_dashboard,
    default=None,
    metavar="ADDR",
    help="dashboard HOST:PORT, PORT, or none (default: a free port on --host)",
)
@ma.argument(
    "--tls",
    action="store_true",
    help="encrypt and authenticate all cluster traffic with fresh TLS certificates",
)
@ma.argument(
    "--require-gpu",
    action="store_true",
    help="fail instead of starting a CPU cluster when no GPU is usable",
)
@ma.argument(
    "--timeout",
    type=_seconds,
    metavar="SECONDS",
    help="how long to wait for the workers (default: option startup-timeout)",
)
@ma.argument(
    "--replace",
    action="store_true",
    help="stop the kernel's current cluster first instead of refusing to start a second",
)
def _start() -> None:
    """Start a local Dask cluster with one worker per GPU (dask-cuda's LocalCUDACluster).

    Returns the Client and makes it the default, so ``client = %gpu_cluster start`` works.
    Without a usable GPU a CPU LocalCluster starts instead, with a warning.
    """


@ma.magic_arguments(name="gpu_cluster attach")
@ma.argument("address", nargs="?", help="scheduler address, e.g. tcp://10.0.0.5:8786")
@ma.argument("--scheduler-file", metavar="FILE", help="scheduler file written by dask scheduler")
@ma.argument(
    "--timeout",
    type=_seconds,
    default=10.0,
    metavar="SECONDS",
    help="give up connecting after this long (default 10s)",
)
@ma.argument("--tls-ca-file", metavar="FILE", help="CA certificate for a TLS scheduler")
@ma.argument("--tls-cert", metavar="FILE", help="client certificate for a TLS scheduler")
@ma.argument("--tls-key", metavar="FILE", help="client private key for a TLS scheduler")
@ma.argument("--replace", action="store_true", help="leave the kernel's current cluster first")
def _attach() -> None:
    """Connect to an existing Dask scheduler, e.g. a multi-node cluster of `dask cuda worker`s.

    Returns the Client and makes it the default. `stop` later only disconnects.
    """


@ma.magic_arguments(name="gpu_cluster status")
def _status() -> None:
    """Workers, hosts, GPUs, memory and tasks of the kernel's cluster (also: bare %gpu_cluster)."""


@ma.magic_arguments(name="gpu_cluster scale")
@ma.argument("n", type=_count, help="number of workers wanted (at most one per selected GPU)")
def _scale() -> None:
    """Change the number of workers of a cluster this kernel started."""


@ma.magic_arguments(name="gpu_cluster restart")
def _restart() -> None:
    """Restart every worker, freeing their host and GPU memory; the cluster stays."""


@ma.magic_arguments(name="gpu_cluster stop")
def _stop() -> None:
    """Close the cluster this kernel started (no worker process is left), or detach from an
    attached one (which keeps running)."""


@ma.magic_arguments(name="gpu_cluster panel")
@ma.argument(
    "--interval",
    type=_seconds,
    metavar="SECONDS",
    help="seconds between samples, 0.25–10 (default: option refresh-interval)",
)
@ma.argument(
    "--history",
    type=_seconds,
    metavar="SECONDS",
    help="seconds of history to show, 10–3600 (default: option history)",
)
@ma.argument(
    "--processes",
    action="store_true",
    help="also list your GPU processes (other users' only as a count)",
)
def _panel() -> None:
    """Show the live panel: every GPU's utilisation and memory, the task stream and progress.

    Same as ``gpudask_jupyter.Panel()``. Sampling runs on a background thread of the kernel.
    """


@ma.magic_arguments(name="gpu_cluster config")
def _config() -> None:
    """Show every gpudask option, its value in effect and where to set it."""


def _name(text: str) -> str:
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not a variable name")
    return text


def _device(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a GPU number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


# the arguments both cell magics take (one decorator object may decorate several parsers)
_NAMES = ma.argument(
    "names",
    nargs="*",
    type=_name,
    metavar="NAME",
    help="variables to move (default: every name the cell created or re-bound)",
)
_EXCLUDE = ma.argument(
    "--exclude",
    nargs="+",
    type=_name,
    default=[],
    action="extend",
    metavar="NAME",
    help="variables to leave where they are",
)
_QUIET = ma.argument("-q", "--quiet", action="store_true", help="no summary table")


@ma.magic_arguments(name="%to_gpu")
@_NAMES
@_EXCLUDE
@ma.argument(
    "--device", type=_device, metavar="N", help="GPU to move to (default: the current one)"
)
@_QUIET
@ma.argument(
    "--require-gpu",
    action="store_true",
    help="fail instead of leaving data on the host when no GPU is usable",
)
def _to_gpu() -> None:
    """Run the cell, then move the pandas / NumPy / Dask objects it created onto the GPU.

    pandas → cuDF, NumPy → CuPy, Dask DataFrame / Array → cuDF- / CuPy-backed (lazily). Either
    every name is moved or none is: if one fails, all keep their original objects.
    """


@ma.magic_arguments(name="%to_cpu")
@_NAMES
@_EXCLUDE
@_QUIET
def _to_cpu() -> None:
    """Run the cell, then move the cuDF / CuPy / GPU-backed Dask objects it created to the host.

    cuDF → pandas, CuPy → NumPy, GPU-backed Dask collections → pandas- / NumPy-backed. Either
    every name is moved or none is.
    """


SUBCOMMANDS: dict[str, Callable[[], None]] = {
    "start": _start,
    "attach": _attach,
    "status": _status,
    "scale": _scale,
    "restart": _restart,
    "stop": _stop,
    "panel": _panel,
    "config": _config,
}


def _parser(sub: str) -> argparse.ArgumentParser:
    return SUBCOMMANDS[sub].parser  # type: ignore[attr-defined,no-any-return]


def _gpu_cluster_doc() -> str:
    parts = [
        "Start, attach to and manage this kernel's Dask cluster (one worker per GPU).",
        "",
        "    %gpu_cluster SUBCOMMAND [options]     (bare %gpu_cluster = status)",
        "    %gpu_cluster SUBCOMMAND --help        (one subcommand's options)",
        "",
        "Examples::",
        "",
        "    client = %gpu_cluster start",
        "    %gpu_cluster start --gpus 0,1 --rmm-pool-size 0.5",
        "    %gpu_cluster attach tcp://10.0.0.5:8786",
        "    %gpu_cluster scale 1",
        "    %gpu_cluster panel",
        "    %gpu_cluster stop",
        "",
    ]
    for sub in SUBCOMMANDS:
        parts.append(_parser(sub).format_help())
    return "\n".join(parts)


def parse(sub: str, rest: str) -> argparse.Namespace | None:
    """Parse one subcommand's arguments; None after printing ``--help``."""
    parser = _parser(sub)
    if {"-h", "--help"} & set(rest.split()):
        print(parser.format_help())
        return None
    try:
        return parser.parse_argstring(rest)  # type: ignore[attr-defined,no-any-return]
    except UsageError as err:
        raise UsageError(f"{err}\n{usage(parser)}") from None


def usage(parser: argparse.ArgumentParser) -> str:
    """The one-line usage, without the reST markup IPython's help formatter adds."""
    text = parser.format_usage().strip().removeprefix("::").strip()
    return "usage: " + " ".join(text.split())


def _user_error(err: GpuDaskError) -> UsageError:
    return UsageError(str(err))


def _warn(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _display(obj: Any) -> None:
    from IPython.display import display

    display(obj)


@magics_class
class GpuDaskMagics(Magics):
    """``%gpu_cluster``; options settable with ``%config GpuDaskMagics.<option> = value``."""

    require_gpu = Bool(None, allow_none=True, help=config.OPTIONS["require-gpu"].doc).tag(
        config=True
    )
    nvml = Bool(None, allow_none=True, help=config.OPTIONS["nvml"].doc).tag(config=True)
    startup_timeout = Float(None, allow_none=True, help=config.OPTIONS["startup-timeout"].doc).tag(
        config=True
    )
    pinned_buffer = Unicode(None, allow_none=True, help=config.OPTIONS["pinned-buffer"].doc).tag(
        config=True
    )
    transfer_threshold = Unicode(
        None, allow_none=True, help=config.OPTIONS["transfer-threshold"].doc
    ).tag(config=True)
    transfer_threads = Integer(
        None, allow_none=True, help=config.OPTIONS["transfer-threads"].doc
    ).tag(config=True)
    refresh_interval = Float(
        None, allow_none=True, help=config.OPTIONS["refresh-interval"].doc
    ).tag(config=True)
    history = Float(None, allow_none=True, help=config.OPTIONS["history"].doc).tag(config=True)

    @observe(*(option.attr for option in config.OPTIONS.values()))
    def _option_changed(self, change: dict[str, Any]) -> None:
        name = change["name"].replace("_", "-")
        try:
            config.set_override(name, change["new"])
        except (TypeError, ValueError) as err:
            raise UsageError(f"GpuDaskMagics.{change['name']}: {err}") from None
        if name == "nvml":
            from . import nvml

            nvml.reset()

    # -- %gpu_cluster -----------------------------------------------------------------------------

    @line_magic
    def gpu_cluster(self, line: str = "") -> Any:
        sub, _, rest = line.strip().partition(" ")
        sub = sub or "status"
        if sub in {"-h", "--help"}:
            print(_gpu_cluster_doc())
            return None
        if sub not in SUBCOMMANDS:
            raise UsageError(
                f"unknown subcommand {sub!r}; choose one of {', '.join(SUBCOMMANDS)}\n"
                "usage: %gpu_cluster {" + ",".join(SUBCOMMANDS) + "} [options]"
            )
        args = parse(sub, rest)
        if args is None:
            return None
        handler = getattr(self, f"_cluster_{sub}")
        try:
            return handler(args)
        except GpuDaskError as err:
            raise _user_error(err) from None

    gpu_cluster.__doc__ = _gpu_cluster_doc()

    def _cluster_start(self, args: argparse.Namespace) -> Any:
        from .cluster import ClusterSession, StartOptions, current

        session = current()
        if session is not None and session.alive and not args.replace:
            print(
                f"A cluster is already running ({session.mode}, scheduler {session.address}); "
                "nothing was changed. Use %gpu_cluster stop first, or start --replace.",
                file=sys.stderr,
            )
            return session.client
        if session is not None:
            session.close()
        opts = StartOptions(
            gpus=args.gpus,
            n_workers=args.n_workers,
            threads_per_worker=args.threads_per_worker,
            memory_limit=args.memory_limit,
            device_memory_limit=args.device_memory_limit,
            rmm_pool_size=args.rmm_pool_size,
            rmm_async=args.rmm_async,
            protocol=args.protocol,
            host=args.host,
            dashboard_address=(
                f"{args.host}:0"
                if args.dashboard_address is None
                else None
                if args.dashboard_address == "none"
                else args.dashboard_address
            ),
            tls=args.tls,
            require_gpu=True if args.require_gpu else None,
            timeout=args.timeout,
        )
        print("Starting the Dask cluster…", flush=True)
        session = ClusterSession.start(opts, warn=_warn)
        _display(session.summary())
        return session.client

    def _cluster_attach(self, args: argparse.Namespace) -> Any:
        from .cluster import ClusterSession, current

        session = current()
        if session is not None and session.alive and not args.replace:
            print(
                f"This kernel already has a cluster ({session.mode}, scheduler {session.address}); "
                "nothing was changed. Use %gpu_cluster stop first, or attach --replace.",
                file=sys.stderr,
            )
            return session.client
        if session is not None:
            session.close()
        session = ClusterSession.attach(
            args.address,
            args.scheduler_file,
            timeout=args.timeout,
            tls_ca_file=args.tls_ca_file,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
        )
        _display(session.summary())
        return session.client

    def _require_session(self) -> Any:
        from .cluster import current

        session = current()
        if session is None:
            raise UsageError(
                "this kernel has no cluster; start one with %gpu_cluster start "
                "or connect with %gpu_cluster attach ADDRESS"
            )
        return session

    def _cluster_status(self, args: argparse.Namespace) -> None:
        from .cluster import current

        session = current()
        if session is None:
            from . import nvml

            state = nvml.status()
            gpus = (
                ", ".join(f"{d.label}: {d.name}" for d in nvml.devices())
                if state.available
                else f"none ({state.reason})"
            )
            print(f"No cluster in this kernel. GPUs on this machine: {gpus}.")
            print("Start one with %gpu_cluster start, or %gpu_cluster attach ADDRESS.")
            return
        _display(session.status())

    def _cluster_scale(self, args: argparse.Namespace) -> None:
        session = self._require_session()
        session.scale(args.n)
        print(f"{args.n} worker{'s' * (args.n != 1)} running.")

    def _cluster_restart(self, args: argparse.Namespace) -> None:
        session = self._require_session()
        session.restart()
        print("Workers restarted.")

    def _cluster_stop(self, args: argparse.Namespace) -> None:
        from .cluster import current

        session = current()
        if session is None:
            print("No cluster to stop.")
            return
        attached = session.cluster is None
        address = session.address
        session.close()
        if attached:
            print(f"Detached from {address}; that cluster keeps running.")
        else:
            print("Cluster stopped; its workers are gone.")

    # -- %%to_gpu / %%to_cpu -----------------------------------------------------------------------

    @cell_magic
    def to_gpu(self, line: str, cell: str) -> None:
        self._move(_to_gpu, "gpu", line, cell)

    @cell_magic
    def to_cpu(self, line: str, cell: str) -> None:
        self._move(_to_cpu, "cpu", line, cell)

    to_gpu.__doc__ = _to_gpu.__doc__
    to_cpu.__doc__ = _to_cpu.__doc__

    def _move(self, spec: Callable[[], None], direction: Direction, line: str, cell: str) -> None:
        from .convert import convert_names, notice_once
        from .convert.namespace import Snapshot

        parser = spec.parser  # type: ignore[attr-defined]
        if {"-h", "--help"} & set(line.split()):
            print(parser.format_help())
            return
        try:
            args = parser.parse_argstring(line)
        except UsageError as err:
            raise UsageError(f"{err}\n{usage(parser)}") from None
        device = getattr(args, "device", None)
        if device is not None:
            from .convert.availability import device_count

            count = device_count()
            if count and device >= count:
                raise UsageError(f"--device {device}: this machine has GPUs 0–{count - 1}")
        namespace = self.shell.user_ns
        before = Snapshot(namespace)
        result = self.shell.run_cell(cell, store_history=False)
        if not result.success:
            raise UsageError("the cell raised an exception (shown above); nothing was converted")
        if args.names:
            missing = [name for name in args.names if name not in namespace]
            if missing:
                raise UsageError(f"{', '.join(missing)}: no such variable after the cell")
            names = list(args.names)
        else:
            names = before.changed(namespace)
        names = [name for name in names if name not in set(args.exclude)]
        require = bool(getattr(args, "require_gpu", False)) or bool(config.get("require-gpu"))
        try:
            report, unavailable = convert_names(
                namespace,
                names,
                direction,
                device=device,
                require_gpu=require,
            )
        except GpuDaskError as err:
            raise _user_error(err) from None
        for why in dict.fromkeys(unavailable):
            message = notice_once(why)
            if message:
                _warn(message)
        if not args.quiet and (report.moved or report.skipped):
            _display(report.table())

    def _cluster_panel(self, args: argparse.Namespace) -> None:
        from .widget import Panel

        options: dict[str, Any] = {"processes": args.processes}
        if args.interval is not None:
            options["interval"] = args.interval
        if args.history is not None:
            options["history"] = args.history
        _display(Panel(**options))

    def _cluster_config(self, args: argparse.Namespace) -> None:
        from .table import Table

        table = Table("gpudask options", ["option", "value", "meaning"])
        for option in config.OPTIONS.values():
            table.add(option.name, option.show(config.get(option.name)), option.doc)
        table.notes.append(
            "Set with %config GpuDaskMagics.<option_with_underscores> = value, or dask.config key "
            "gpudask.<option> (YAML or DASK_GPUDASK__<OPTION> environment variables)."
        )
        _display(table)
