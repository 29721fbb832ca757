"""The private part of dask-gateway this package touches: closing its client once."""

from __future__ import annotations

from typing import Any

from .probing import NeedTuple, sets

DISTRIBUTION = "dask-gateway"
ASYNCHRONOUS = "Gateway._asynchronous"


def needs() -> list[NeedTuple]:
    from dask_gateway import Gateway

    return [
        (
            ASYNCHRONOUS,
            lambda: sets(Gateway, "_asynchronous"),
            'a closed gateway client may print "Exception ignored" as it is collected',
        )
    ]


def close_gateway(gateway: Any) -> None:
    """Close dask-gateway's client once: its ``close`` stops its event loop, and the
    ``__del__`` that closes it again then raises (an "Exception ignored" on every client made).
    Marking it asynchronous (``Gateway._asynchronous``, private; probed) makes that ``__del__``
    skip the second close; a client without that flag is closed once all the same."""
    try:
        gateway.close()
    finally:
        gateway._asynchronous = True


def close_gateway_cluster(cluster: Any, shutdown: bool) -> None:
    """Shut a dask-gateway cluster down (``shutdown``) or only close this client's hold on it,
    then let its own client (``GatewayCluster.gateway``, public) go as :func:`close_gateway`
    does: closing the cluster closes that client, and its ``__del__`` would close it again."""
    try:
        if shutdown:
            cluster.shutdown()
        else:
            cluster.close()
    finally:
        inner = getattr(cluster, "gateway", None)
        if inner is not None:
            inner._asynchronous = True
