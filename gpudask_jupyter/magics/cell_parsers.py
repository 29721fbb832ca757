"""What ``%%to_gpu`` and ``%%to_cpu`` accept: their parsers, declared as the ``%gpu_cluster``
subcommands' are in :mod:`.parsers` (whose :func:`~.parsers.parse` reads both), so each
cell magic's ``--help`` shows what is really parsed."""

from __future__ import annotations

from IPython.core import magic_arguments as ma

from . import arg_types

# the arguments both cell magics take (one decorator object may decorate several parsers)
_NAMES = ma.argument(
    "names",
    nargs="*",
    type=arg_types.variable_name,
    metavar="NAME",
    help="variables to move (default: every name the cell created or re-bound)",
)
_EXCLUDE = ma.argument(
    "--exclude",
    nargs="+",
    type=arg_types.variable_name,
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
    "--device",
    type=arg_types.gpu_number,
    metavar="N",
    help="GPU to move to (default: the current one)",
)
@_QUIET
@ma.argument(
    "--require-gpu",
    action="store_true",
    help="fail instead of leaving data on the host when no GPU is usable",
)
@ma.argument(
    "--distribute",
    action="store_true",
    help="spread pandas / NumPy objects over every worker of the kernel's cluster as persisted "
    "dask-cuDF / CuPy-backed collections (pandas / NumPy partitions on CPU workers), each worker "
    "building its own partitions",
)
@ma.argument(
    "--npartitions",
    type=arg_types.positive_int,
    metavar="N",
    help="with --distribute: this many partitions (default: about 512 MiB each, at least one "
    "per worker)",
)
def to_gpu() -> None:
    """Run the cell, then move the pandas / NumPy / Dask objects it created onto the GPU.

    pandas → cuDF, NumPy → CuPy, Dask DataFrame / Array → cuDF- / CuPy-backed (lazily). Either
    every name is moved or none is: if one fails, all keep their original objects.
    """


@ma.magic_arguments(name="%to_cpu")
@_NAMES
@_EXCLUDE
@_QUIET
@ma.argument(
    "--gather",
    action="store_true",
    help="bring Dask collections back as one pandas / NumPy object each (computed on the "
    "cluster first if not persisted); cuDF / CuPy objects move as without --gather",
)
def to_cpu() -> None:
    """Run the cell, then move the cuDF / CuPy / GPU-backed Dask objects it created to the host.

    cuDF → pandas, CuPy → NumPy, GPU-backed Dask collections → pandas- / NumPy-backed. Either
    every name is moved or none is.
    """
