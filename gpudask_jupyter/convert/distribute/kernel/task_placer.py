"""Tasks pinned to one worker each, with every future remembered so a failure can undo them.

A transfer makes many futures (scattered parts, partial partitions, finished partitions); if
anything fails, or the user interrupts, all of them are cancelled, so no partition stays on a
worker's memory or GPU. Each future also remembers its worker, so that a wait can tell which
worker it depends on (see :func:`.cluster_view.wait_for`).

Futures of keys the user's collection already holds (the partitions of a persisted collection,
fetched for ``--gather``) are only let go on failure, never cancelled: they are the user's data.
Keys computed for the transfer alone (the partitions of a lazy collection) are cancelled like
the rest, so that an interrupted ``--gather`` leaves nothing on the workers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from .cluster_view import Failed, left, workers_now

log = logging.getLogger(__name__)


class Placer:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.where: dict[str, str] = {}  # future key → worker address
        self._futures: list[Any] = []  # of keys made here: cancelled on failure
        self._borrowed: list[Any] = []  # of keys that may be the user's: only let go

    def _keep(self, futures: Sequence[Any], address: str) -> None:
        for future in futures:
            self.where[future.key] = address
        self._futures.extend(futures)

    def submit(self, function: Callable[..., Any], address: str, *args: Any) -> Any:
        """``function(*args)`` on the worker at ``address`` and nowhere else."""
        future = self.client.submit(
            function, *args, workers=[address], allow_other_workers=False, pure=False
        )
        self._keep([future], address)
        return future

    def scatter(self, data: list[Any], address: str) -> list[Any]:
        """Dask's own transfer of ``data`` to the worker at ``address``."""
        try:
            futures: list[Any] = self.client.scatter(data, workers=[address], hash=False)
        except Exception as err:
            if address not in workers_now(self.client):
                raise Failed(left(address), kind="left") from err
            raise
        self._keep(futures, address)
        return futures

    def drop(self, futures: Sequence[Any]) -> None:
        """Cancel futures made here that are no longer needed (a route given up)."""
        keys = {future.key for future in futures}
        self._futures = [f for f in self._futures if f.key not in keys]
        for key in keys:
            self.where.pop(key, None)
        try:
            self.client.cancel(list(futures), force=True)
        except Exception:  # the cluster may be gone: its memory went with it
            log.debug("cancelling %d futures failed", len(futures), exc_info=True)

    def adopt(self, futures: Sequence[Any], collection: Any) -> None:
        """Futures computed from the user's ``collection``: those of keys it holds already are
        only held while the transfer runs, the others are the transfer's own."""
        from distributed import futures_of

        users = {future.key for future in futures_of(collection)}
        self._borrowed.extend(f for f in futures if f.key in users)
        self._futures.extend(f for f in futures if f.key not in users)

    @staticmethod
    def is_future(obj: Any) -> bool:
        from distributed import Future

        return isinstance(obj, Future)

    def cancel(self) -> None:
        """Cancel and forget every future made: nothing stays on the workers."""
        futures, self._futures, self._borrowed = self._futures, [], []
        self.where.clear()
        if not futures:
            return
        try:
            self.client.cancel(futures, force=True)
        except Exception:  # the cluster may be gone: its memory went with it
            log.debug("cancelling %d futures failed", len(futures), exc_info=True)

    def forget(self) -> None:
        """Drop the references to intermediate futures once the result holds what it needs."""
        self._futures, self._borrowed = [], []
        self.where.clear()
