"""The arguments ``%gpu_cluster start`` and ``join`` share (what their workers are like), and
those ``attach`` and ``join`` share (the scheduler and its TLS files): each declared once, so the
subcommands' help and parsing cannot drift apart. Each is a decorator of IPython's
``magic_arguments``, used by :mod:`.parsers`; one decorator object may decorate several
parsers.
"""

from __future__ import annotations

from collections.abc import Callable

from IPython.core import magic_arguments as ma

from . import arg_types

#: a parser declaration (a stub function), as :mod:`.parsers` declares them
Spec = Callable[[], None]


def arguments(*decorators: Callable[[Spec], Spec]) -> Callable[[Spec], Spec]:
    """Several ``ma.argument``s as one decorator, in the order written (what ``start`` and
    ``join`` share is declared once, so their help cannot drift apart)."""

    def apply(spec: Spec) -> Spec:
        for decorator in reversed(decorators):
            spec = decorator(spec)
        return spec

    return apply


GPUS = ma.argument(
    "--gpus",
    type=arg_types.gpu_list,
    metavar="LIST",
    help="GPUs for the workers: indices as nvidia-smi shows them or GPU-/MIG- UUIDs, "
    "comma-separated (default: every GPU this kernel may use)",
)
N_WORKERS = ma.argument(
    "--n-workers",
    type=arg_types.positive_int,
    metavar="N",
    help="number of workers (GPU: the first N selected GPUs; CPU fallback: N processes, at most "
    "one per core this kernel may use)",
)
THREADS_AND_MEMORY = arguments(
    ma.argument(
        "--threads-per-worker",
        type=arg_types.positive_int,
        metavar="N",
        help="threads per worker (default 1 with GPUs)",
    ),
    ma.argument(
        "--memory-limit",
        type=arg_types.size_or_fraction("auto", "none"),
        metavar="SIZE",
        help="host memory per worker before spilling to disk: 16GB, 0.25 (of RAM), auto, none",
    ),
    ma.argument(
        "--device-memory-limit",
        type=arg_types.size_or_fraction("auto", "default", "none"),
        metavar="SIZE",
        help="GPU memory per worker before spilling to host: 60GB, 0.8 (of the GPU), default, none",
    ),
    ma.argument(
        "--rmm-pool-size",
        type=arg_types.size_or_fraction(),
        metavar="SIZE",
        help="pre-allocate an RMM memory pool of this size on each GPU: 40GB or 0.5",
    ),
    ma.argument(
        "--rmm-async",
        action="store_true",
        help="use RMM's asynchronous (cudaMallocAsync) allocator on each GPU",
    ),
)
RESOURCES = ma.argument(
    "--resources",
    type=arg_types.resources,
    metavar="NAME=N,...",
    help="resources each worker advertises, e.g. GPU=1,MEM=2e9 (GPU workers: GPU=1 unless "
    "changed here; CPU fallback: none)",
)
TLS_FILES = arguments(
    ma.argument("--tls-ca-file", metavar="FILE", help="CA certificate for a TLS scheduler"),
    ma.argument("--tls-cert", metavar="FILE", help="client certificate for a TLS scheduler"),
    ma.argument("--tls-key", metavar="FILE", help="client private key for a TLS scheduler"),
)
SCHEDULER = arguments(
    ma.argument("address", nargs="?", help="scheduler address, e.g. tcp://10.0.0.5:8786"),
    ma.argument(
        "--scheduler-file", metavar="FILE", help="scheduler file written by dask scheduler"
    ),
)
#: how ``start --gateway``, ``attach --gateway`` and ``gateway`` authenticate to dask-gateway
GATEWAY_AUTH = ma.argument(
    "--auth",
    choices=["basic", "kerberos", "jupyterhub"],
    help="with a gateway: how to authenticate (default: the hub's under JupyterHub, else "
    "dask-gateway's configuration)",
)
