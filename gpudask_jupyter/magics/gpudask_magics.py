"""The IPython magics: each parses its arguments, calls the cluster or the converters, and prints.

The parsers (and so the help) are declared in :mod:`.parsers`; the decisions are taken below,
in :mod:`..cluster.session`, :mod:`..cluster.options` and :mod:`..convert`. An error from there
(:class:`~..errors.GpuDaskError`) is shown as IPython's one-line ``UsageError`` instead of a library
traceback, and kept whole by the kernel's :class:`~..errors.ErrorLog` for ``%gpu_cluster status
--verbose``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from traitlets import Bool, Float, Integer, Unicode, observe

from .. import config, errors
from ..cluster import commands, logs, tables
from ..cluster.room import reading
from ..cluster.target import AttachTarget
from ..convert import convert_names, notice_once
from ..convert.arguments import check_to_gpu
from ..convert.distribute.kernel import watch
from ..convert.namespace import Snapshot
from ..errors import ErrorLog, GpuDaskError
from ..gpu_time import kernel as gpu_time
from ..machine import nvml
from ..text import units
from ..text.table import Table
from . import cell_parsers, parsers
from .shared_arguments import Spec

if TYPE_CHECKING:
    from ..cluster.session import ClusterSession, KernelCluster
    from ..convert import Direction
    from ..gpu_time.kernel import KernelCells
    from ..widget.shared_monitor import KernelView

log = logging.getLogger(__name__)


class Kernel(Protocol):
    """What the magics work on: the kernel's parts the extension holds
    (:class:`.extension.Extension`)."""

    cluster: KernelCluster
    view: KernelView
    cells: KernelCells


Handler = Callable[["GpuDaskMagics", argparse.Namespace], Any]
H = TypeVar("H", bound=Handler)

_handlers: dict[Spec, Handler] = {}
#: the subcommands that run as an operation Ctrl-C cannot cut in half (:mod:`..cluster.operations`)
_OPERATIONS = frozenset({"start", "attach", "join", "leave", "scale", "restart", "stop"})


def _subcommand(spec: Spec) -> Callable[[H], H]:
    """Make the decorated method the handler of ``spec``'s ``%gpu_cluster`` subcommand."""

    def register(method: H) -> H:
        _handlers[spec] = method
        return method

    return register


def _moved(report: Any) -> int:
    """What a %%to_gpu / %%to_cpu moved, counted in its cell's GPU time (``%gpu_cluster
    profile``): the bytes it reported, not a source's guess."""
    return sum(m.nbytes or 0 for m in report.moved if m.path != "lazy")


def _user_error(err: GpuDaskError, kept: ErrorLog) -> UsageError:
    """The one sentence the user sees; the whole error is kept in ``kept`` for ``status
    --verbose``."""
    log.debug("shown to the user: %s", err, exc_info=err)
    kept.remember(err)
    return UsageError(str(err))


def _gateway_options_help(spec: Any, line: str) -> None:
    """After ``start --gateway --help``: the cluster options that gateway offers, asked of it
    within --timeout (they are the gateway's, so no fixed help can list them)."""
    asked = " ".join(word for word in line.split() if word not in {"-h", "--help"})
    try:
        args = parsers.parse(spec, asked)
        if args is None:
            return
        plan = parsers.gateway_plan(args)
        offered = commands.gateway_options(plan.address, plan.auth, plan.timeout)
    except UsageError:  # the help above says what is wrong with the line
        return
    except GpuDaskError as err:
        print(f"The gateway's own cluster options could not be read: {err}")
        return
    print(f"Cluster options of dask-gateway at {plan.address} (--option NAME=VALUE):")
    print(f"  {offered.describe()}")


def _warn(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _display(obj: Any) -> None:
    from IPython.display import display

    display(obj)


def _option_trait(option: config.Option) -> Any:
    """The ``%config`` trait of an option: typed where the value is a flag, a count or seconds,
    text otherwise (sizes such as ``512MiB``); ``None`` means "not set in this kernel"."""
    default = option.default_value
    kind: Any = Unicode
    if option.parse is units.parse_seconds:
        kind = Float
    elif isinstance(default, bool):
        kind = Bool
    elif isinstance(default, int) and option.parse is not units.parse_bytes:
        kind = Integer
    return kind(None, allow_none=True, help=option.doc).tag(config=True)


def _dask_said() -> str:
    """Where Dask's log lines of this kernel's cluster go, and its last warnings."""
    where = logs.path()
    if where is None:
        return "Dask's log: on stderr (no cluster of this kernel has routed it to a file yet)."
    lines = [f"Dask's log of this kernel's cluster: {where}"]
    lines += [f"  {said.logger}: {said.message[:300]}" for said in logs.recent()]
    return "\n".join(lines)


def _check_move_arguments(args: argparse.Namespace) -> None:
    """Refuse what cannot be combined or does not exist, before the cell runs (the rules of
    ``to_gpu``, in the magic's spelling)."""
    try:
        device, npartitions = getattr(args, "device", None), getattr(args, "npartitions", None)
        check_to_gpu(device, getattr(args, "distribute", False), npartitions, magic=True)
    except GpuDaskError as err:
        raise UsageError(str(err)) from None


def _convert(
    args: argparse.Namespace, direction: Direction, namespace: Any, names: list[str]
) -> Any:
    """The conversion the flags ask for: onto the kernel's GPU, spread over the cluster's
    workers (``--distribute``) or gathered from them (``--gather``)."""
    asked = True if getattr(args, "require_gpu", False) else None  # %%to_cpu has no flag
    require = config.require_gpu(asked)
    if getattr(args, "distribute", False):
        # lazy: the distribution's modules are imported by the first cell that spreads or gathers
        from ..convert.distribute.kernel.variables import distribute_names

        return distribute_names(namespace, names, npartitions=args.npartitions, require_gpu=require)
    if getattr(args, "gather", False):
        # lazy: as above
        from ..convert.distribute.kernel.variables import gather_names

        return gather_names(namespace, names)

    return convert_names(
        namespace, names, direction, device=getattr(args, "device", None), require_gpu=require
    )


@magics_class
class GpuDaskMagics(Magics):
    """``%gpu_cluster``; options settable with ``%config GpuDaskMagics.<option> = value``.
    ``extension``: what the extension runs for this kernel, which the magics work on."""

    def __init__(self, shell: Any, extension: Kernel, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.extension = extension

    # one trait per option of config.OPTIONS, so a new option is settable with %config at once
    locals().update({option.attr: _option_trait(option) for option in config.OPTIONS.values()})

    @observe(*(option.attr for option in config.OPTIONS.values()))
    def _option_changed(self, change: dict[str, Any]) -> None:
        name = change["name"].replace("_", "-")
        try:
            config.set_override(name, change["new"])
        except (TypeError, ValueError) as err:
            raise UsageError(f"GpuDaskMagics.{change['name']}: {err}") from None
        if name == "nvml":
            nvml.reset()

    # -- %gpu_cluster -----------------------------------------------------------------------------

    @line_magic
    def gpu_cluster(self, line: str = "") -> Any:
        sub, _, rest = line.strip().partition(" ")
        sub = sub or "status"
        if sub in {"-h", "--help"}:
            print(parsers.gpu_cluster_doc())
            return None
        spec = parsers.SUBCOMMANDS.get(sub)
        if spec is None:
            raise parsers.unknown_subcommand(sub)
        args = parsers.parse(spec, rest)
        if args is None:
            if sub == "start" and "--gateway" in rest.split():
                _gateway_options_help(spec, rest)
            return None
        try:
            if sub in _OPERATIONS:
                self.extension.cluster.imports.under_way()
            return _handlers[spec](self, args)
        except GpuDaskError as err:
            raise _user_error(err, self.extension.cluster.errors) from None
        except KeyboardInterrupt:
            if sub not in _OPERATIONS:
                raise
            # as for %%to_gpu: a fresh interrupt, shown as its sentence alone
            raise errors.Interrupted(
                f"%gpu_cluster {sub} interrupted: what it had begun is being finished or undone "
                "on its own thread, and the next %gpu_cluster command waits for that"
            ) from None

    gpu_cluster.__doc__ = parsers.gpu_cluster_doc()

    @_subcommand(parsers.start)
    def _start(self, args: argparse.Namespace) -> Any:
        def starting() -> None:
            print("Starting the Dask cluster…", flush=True)

        if args.gateway is not None:
            plan = parsers.gateway_plan(args)
            print(f"Asking dask-gateway at {plan.address} for a cluster…", flush=True)
            session, new = commands.start_gateway(
                self.extension.cluster, plan, args.replace, warn=_warn
            )
            return self._summarise(session) if new else session.client
        if args.option or args.auth:
            raise UsageError("--option and --auth are for a cluster of dask-gateway: add --gateway")
        opts = parsers.start_options(args)
        session, new = commands.start(
            self.extension.cluster, opts, args.replace, warn=_warn, starting=starting
        )
        return self._summarise(session) if new else session.client

    @_subcommand(parsers.attach)
    def _attach(self, args: argparse.Namespace) -> Any:
        if args.gateway is not None:
            if args.address or args.scheduler_file:
                raise UsageError("attach --gateway NAME takes no scheduler address: the gateway's")
            session, new = commands.start_gateway(
                self.extension.cluster, parsers.gateway_plan(args), args.replace, _warn
            )
            return self._summarise(session) if new else session.client
        tls = (args.tls_ca_file, args.tls_cert, args.tls_key)
        session, new = commands.attach(
            self.extension.cluster,
            args.address,
            args.scheduler_file,
            args.replace,
            args.timeout,
            tls,
            warn=_warn,
        )
        return self._summarise(session) if new else session.client

    @_subcommand(parsers.join)
    def _join(self, args: argparse.Namespace) -> Any:
        target = AttachTarget.resolve(
            args.address, args.scheduler_file, args.tls_ca_file, args.tls_cert, args.tls_key, "join"
        )

        def joining() -> None:
            print(f"Joining {target.address}…", flush=True)

        opts = parsers.join_options(args)
        session, new = commands.join(
            self.extension.cluster, target, opts, args.replace, args.timeout, _warn, joining
        )
        return self._summarise(session) if new else session.client

    @_subcommand(parsers.leave)
    def _leave(self, args: argparse.Namespace) -> None:
        session, retirement = commands.leave(self.extension.cluster, args.timeout)
        if session is None or retirement is None:
            print("No cluster to leave.")
            return
        print(retirement.describe(session.address))
        print(f"Disconnected from {session.address}; the scheduler keeps running.")

    def _summarise(self, session: ClusterSession) -> Any:
        _display(tables.summary_table(session))
        return session.client

    @_subcommand(parsers.status)
    def _status(self, args: argparse.Namespace) -> None:
        session = self.extension.cluster.current()
        damaged = watch.notes()  # spread collections that lost partitions
        try:
            if session is None:
                print(tables.no_cluster_text())
            elif not session.alive:
                print(session.gone())
            else:
                table = tables.status_table(session)
                table.notes.extend(damaged)
                _display(table)
                damaged = []
        finally:
            for note in damaged:
                print(note)
            if args.verbose:  # also when the status fails: the error before it may say why
                print(self.extension.cluster.errors.report())
                print(_dask_said())

    @_subcommand(parsers.scale)
    def _scale(self, args: argparse.Namespace) -> None:
        if args.adapt is not None:
            if args.n is not None:
                raise UsageError("scale N or scale --adapt MIN MAX, not both")
            commands.adapt(self.extension.cluster, *args.adapt)
            print(
                f"dask-gateway scales the cluster between {args.adapt[0]} and {args.adapt[1]} "
                "workers as work comes."
            )
            return
        if args.n is None:
            raise UsageError(
                f"scale needs a number of workers (or --adapt MIN MAX)\n"
                f"{parsers.usage(parsers.parser_of(parsers.scale))}"
            )
        print(
            *commands.scaled_lines(args.n, commands.scale(self.extension.cluster, args.n)), sep="\n"
        )

    @_subcommand(parsers.restart)
    def _restart(self, args: argparse.Namespace) -> None:
        commands.restart(self.extension.cluster)
        print(commands.RESTARTED)

    @_subcommand(parsers.stop)
    def _stop(self, args: argparse.Namespace) -> None:
        print(*commands.stopped_lines(*commands.stop(self.extension.cluster, args.keep)), sep="\n")

    @_subcommand(parsers.gateway)
    def _gateway(self, args: argparse.Namespace) -> None:
        where, clusters, offered = commands.gateway_clusters(args.address, args.auth, args.timeout)
        table = Table(f"Your clusters on dask-gateway at {where}", ["name", "status", "dashboard"])
        for report in clusters:
            status = str(getattr(report.status, "name", report.status)).lower()
            table.add(report.name, status, getattr(report, "dashboard_link", None) or "–")
        if not clusters:
            table.notes.append("none running: %gpu_cluster start --gateway starts one")
        else:
            table.notes.append("come back to one with %gpu_cluster attach --gateway NAME")
        table.notes.append(
            f"cluster options it offers (start --option NAME=VALUE): {offered.describe()}"
        )
        _display(table)

    @_subcommand(parsers.panel)
    def _panel(self, args: argparse.Namespace) -> None:
        # lazy: it imports anywidget, which a kernel without a panel does not need
        from ..widget import show_panel

        options: dict[str, Any] = {"processes": args.processes}
        if args.interval is not None:
            options["interval"] = args.interval
        if args.history is not None:
            options["history"] = args.history
        show_panel(text=True if args.text else None, view=self.extension.view, **options)

    @_subcommand(parsers.room)
    def _room(self, args: argparse.Namespace) -> None:
        _display(reading.table(reading.read()))

    @_subcommand(parsers.profile)
    def _profile(self, args: argparse.Namespace) -> Any:
        if args.cell is not None and args.seconds is not None:
            raise UsageError("--cell and --seconds choose the same thing: give one of them")
        session = self.extension.cluster.current()
        client = session.client if session is not None and session.alive else None
        found = gpu_time.profile(client, self.extension.cells, cell=args.cell, seconds=args.seconds)
        table = found.table()
        print(table.title)
        for note in table.notes:
            print(note)
        return found.frame()

    @_subcommand(parsers.config)
    def _config(self, args: argparse.Namespace) -> None:
        table = Table("gpudask options", ["option", "value", "meaning"])
        for option in config.OPTIONS.values():
            table.add(option.name, option.show(config.get(option.name)), option.doc)
        table.notes.append(
            "Set with %config GpuDaskMagics.<option_with_underscores> = value, or dask.config key "
            "gpudask.<option> (YAML or DASK_GPUDASK__<OPTION> environment variables)."
        )
        _display(table)

    # -- %%to_gpu / %%to_cpu -----------------------------------------------------------------------

    @cell_magic
    def to_gpu(self, line: str, cell: str) -> None:
        self._move(cell_parsers.to_gpu, "gpu", line, cell)

    @cell_magic
    def to_cpu(self, line: str, cell: str) -> None:
        self._move(cell_parsers.to_cpu, "cpu", line, cell)

    to_gpu.__doc__ = cell_parsers.to_gpu.__doc__
    to_cpu.__doc__ = cell_parsers.to_cpu.__doc__

    def _move(self, spec: Spec, direction: Direction, line: str, cell: str) -> None:
        args = parsers.parse(spec, line)
        if args is None:
            return
        _check_move_arguments(args)
        shell = self.shell
        if shell is None:  # magics always run in a shell; this says so to the type checker
            raise UsageError("%%to_gpu and %%to_cpu run in an IPython shell")
        namespace = shell.user_ns
        before = Snapshot(namespace)
        result = shell.run_cell(cell, store_history=False)
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
        try:
            self.extension.cluster.imports.under_way()
            report, unavailable = _convert(args, direction, namespace, names)
        except GpuDaskError as err:
            raise _user_error(err, self.extension.cluster.errors) from None
        except KeyboardInterrupt:
            # a fresh interrupt, shown as its sentence alone (errors.Interrupted), not as the
            # transfer's internals, which would say nothing to the user
            raise errors.Interrupted(
                f"%%to_{direction} interrupted: no variable was rebound; what had already moved "
                "is being released"
            ) from None
        for why in dict.fromkeys(unavailable):
            message = notice_once(why)
            if message:
                _warn(message)
        self.extension.cells.note_moved("htod" if direction == "gpu" else "dtoh", _moved(report))
        if not args.quiet and (report.moved or report.skipped):
            _display(report.table())
