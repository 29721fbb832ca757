"""Which bytes go in which shared-memory segment, in how many rounds.

The partitions' slots (see :mod:`.partition_layout`) are cut into pieces so that the segments of one
round fit the shared-memory budget together. When everything fits, there is one round and each
partition's segment holds all its slots whole, which lets a GPU worker copy straight from the
segment to its GPU. Otherwise each worker gets an equal share of the budget in every round, so that
all workers keep busy, and its partitions' bytes flow through that share in order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ALIGN = 64  # every piece starts on a cache line of its segment
MIN_SHARE = 64 * 1024  # below this per worker and round, the overhead of a round dominates


class TooSmall(Exception):
    """The budget cannot give every worker a useful share of a round."""


@dataclass(frozen=True)
class Piece:
    slot: int
    start: int  # byte offset in the slot
    nbytes: int
    offset: int  # byte offset in the segment


@dataclass(frozen=True)
class Delivery:
    """What one segment carries for one partition in one round."""

    partition: int
    pieces: tuple[Piece, ...]

    @property
    def size(self) -> int:
        return max((p.offset + p.nbytes for p in self.pieces), default=0)


def aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _whole(partition: int, sizes: Sequence[int]) -> Delivery:
    pieces = []
    offset = 0
    for slot, nbytes in enumerate(sizes):
        if nbytes:
            pieces.append(Piece(slot, 0, nbytes, offset))
            offset += aligned(nbytes)
    return Delivery(partition, tuple(pieces))


def _take(queue: deque[list[int]], room: int) -> dict[int, list[Piece]]:
    """Pieces from the front of one worker's queue of [partition, slot, start, left] up to
    ``room`` bytes (a multiple of ALIGN), by partition."""
    taken: dict[int, list[Piece]] = {}
    ends: dict[int, int] = {}
    while queue and room >= ALIGN:
        partition, slot, start, left = queue[0]
        n = min(left, room)
        offset = ends.get(partition, 0)
        taken.setdefault(partition, []).append(Piece(slot, start, n, offset))
        ends[partition] = offset + aligned(n)
        room -= aligned(n)
        if n == left:
            queue.popleft()
        else:
            queue[0][2:] = [start + n, left - n]
    return taken


def plan(
    sizes: Mapping[int, Sequence[int]], owner: Mapping[int, str], budget: int
) -> list[list[Delivery]]:
    """Rounds of deliveries for the partitions ``sizes`` (partition → slot byte sizes), each
    held by worker ``owner[partition]``; a round's segments take at most ``budget`` bytes.

    Raises :class:`TooSmall` when the budget cannot give each worker ``MIN_SHARE`` a round.
    """
    total = sum(aligned(n) for slots in sizes.values() for n in slots)
    if total == 0:
        return []
    if total <= budget:
        return [[_whole(p, slots) for p, slots in sizes.items() if any(slots)]]
    queues: dict[str, deque[list[int]]] = {}
    for partition, slots in sizes.items():
        queue = queues.setdefault(owner[partition], deque())
        queue.extend([partition, slot, 0, n] for slot, n in enumerate(slots) if n)
    share = budget // len(queues) // ALIGN * ALIGN
    if share < MIN_SHARE:
        raise TooSmall(f"{budget} bytes give {len(queues)} workers less than {MIN_SHARE} each")
    rounds = []
    while any(queues.values()):
        deliveries = []
        for queue in queues.values():
            for partition, pieces in _take(queue, share).items():
                deliveries.append(Delivery(partition, tuple(pieces)))
        rounds.append(deliveries)
    return rounds
