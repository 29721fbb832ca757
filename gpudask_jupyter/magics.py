"""The IPython magics: each parses its arguments, calls the cluster or the converters, and prints.

The parsers (and so the help) are declared in :mod:`.magic_args`; the decisions are taken below,
in :mod:`.cluster`, :mod:`.cluster_options` and :mod:`.convert`. An error from there
(:class:`~.errors.GpuDaskError`) is shown as IPython's one-line ``UsageError`` instead of a library
traceback, and kept whole by :func:`.errors.remember` for ``%gpu_cluster status --verbose``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from traitlets import Bool, Float, Integer, Unicode, observe

from . import config, errors, magic_args
from .errors import GpuDaskError

if TYPE_CHECKING:
    from .cluster import ClusterSession
    from .convert import Direction

log = logging.getLogger(__name__)

Handler = Callable[["GpuDaskMagics", argparse.Namespace], Any]
H = TypeVar("H", bound=Handler)

_handlers: dict[magic_args.Spec, Handler] = {}


def _subcommand(spec: magic_args.Spec) -> Callable[[H], H]:
    """Make the decorated method the handler of ``spec``'s ``%gpu_cluster`` subcommand."""

    def register(method: H) -> H:
        _handlers[spec] = method
        return method

    return register


def _user_error(err: GpuDaskError) -> UsageError:
    """The one sentence the user sees; the whole error is kept for ``status --verbose``."""
    log.debug("shown to the user: %s", err, exc_info=err)
    errors.remember(err)
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
    shared_machine = Unicode(None, allow_none=True, help=config.OPTIONS["shared-machine"].doc).tag(
        config=True
    )
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
            print(magic_args.gpu_cluster_doc())
            return None
        spec = magic_args.SUBCOMMANDS.get(sub)
        if spec is None:
            raise magic_args.unknown_subcommand(sub)
        args = magic_args.parse(spec, rest)
        if args is None:
            return None
        try:
            return _handlers[spec](self, args)
        except GpuDaskError as err:
            raise _user_error(err) from None

    gpu_cluster.__doc__ = magic_args.gpu_cluster_doc()

    @_subcommand(magic_args.start)
    def _start(self, args: argparse.Namespace) -> Any:
        from .cluster import ClusterSession, refuse_or_replace

        kept = refuse_or_replace("start", args.replace, warn=_warn)
        if kept is not None:
            return kept.client
        print("Starting the Dask cluster…", flush=True)
        session = ClusterSession.start(magic_args.start_options(args), warn=_warn)
        return self._summarise(session)

    @_subcommand(magic_args.attach)
    def _attach(self, args: argparse.Namespace) -> Any:
        from .cluster import ClusterSession, refuse_or_replace

        kept = refuse_or_replace("attach", args.replace, warn=_warn)
        if kept is not None:
            return kept.client
        session = ClusterSession.attach(
            args.address,
            args.scheduler_file,
            timeout=args.timeout,
            tls_ca_file=args.tls_ca_file,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
        )
        return self._summarise(session)

    def _summarise(self, session: ClusterSession) -> Any:
        from . import cluster_tables

        _display(cluster_tables.summary(session))
        return session.client

    @_subcommand(magic_args.status)
    def _status(self, args: argparse.Namespace) -> None:
        from . import cluster_tables
        from .cluster import current

        session = current()
        try:
            if session is None:
                print(cluster_tables.no_cluster_text())
            elif not session.alive:
                print(session.gone())
            else:
                _display(cluster_tables.status(session))
        finally:
            if args.verbose:  # also when the status fails: the error before it may say why
                print(errors.last_report())

    @_subcommand(magic_args.scale)
    def _scale(self, args: argparse.Namespace) -> None:
        from .cluster import require_current

        require_current().scale(args.n)
        print(f"{args.n} worker{'s' * (args.n != 1)} running.")

    @_subcommand(magic_args.restart)
    def _restart(self, args: argparse.Namespace) -> None:
        from .cluster import require_current

        require_current().restart()
        print("Workers restarted.")

    @_subcommand(magic_args.stop)
    def _stop(self, args: argparse.Namespace) -> None:
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

    @_subcommand(magic_args.panel)
    def _panel(self, args: argparse.Namespace) -> None:
        from .widget import show_panel

        options: dict[str, Any] = {"processes": args.processes}
        if args.interval is not None:
            options["interval"] = args.interval
        if args.history is not None:
            options["history"] = args.history
        show_panel(**options)

    @_subcommand(magic_args.config)
    def _config(self, args: argparse.Namespace) -> None:
        from .table import Table

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
        self._move(magic_args.to_gpu, "gpu", line, cell)

    @cell_magic
    def to_cpu(self, line: str, cell: str) -> None:
        self._move(magic_args.to_cpu, "cpu", line, cell)

    to_gpu.__doc__ = magic_args.to_gpu.__doc__
    to_cpu.__doc__ = magic_args.to_cpu.__doc__

    def _move(self, spec: magic_args.Spec, direction: Direction, line: str, cell: str) -> None:
        from .convert import convert_names, notice_once
        from .convert.namespace import Snapshot

        args = magic_args.parse(spec, line)
        if args is None:
            return
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
        asked = True if getattr(args, "require_gpu", False) else None  # %%to_cpu has no flag
        try:
            report, unavailable = convert_names(
                namespace, names, direction, device=device, require_gpu=config.require_gpu(asked)
            )
        except GpuDaskError as err:
            raise _user_error(err) from None
        for why in dict.fromkeys(unavailable):
            message = notice_once(why)
            if message:
                _warn(message)
        if not args.quiet and (report.moved or report.skipped):
            _display(report.table())
