"""The room's arithmetic on a reading of the machine: which holder each GPU process belongs to and
what each holder holds on a GPU (:func:`attribute`), from a typed reading (:class:`GpuMemory`,
each process with its lineage) and leases whose identities were verified (:mod:`.proof`). No I/O
here: :mod:`.measure` reads the machine, :mod:`.leases` reads and writes the leases, and this,
with :mod:`.shares` and :mod:`.placement` (caps and placement from what is held), is a function
of what they read, which a test can drive with readings of its own.

Every cap of the room is computed from this reading, by whoever computes it and when it does
(a newcomer choosing its GPU, each holder's kernel following its share, a view): a lease says
who its holder is and which processes are its own, and no figure in it lowers anybody else's
cap. A holder's processes are its kernel, the kernel's descendants (nannies, workers, whatever
the notebook started) and the workers its lease names, found by walking each GPU process's
parents, not by reading the whole process table. Memory of processes that belong to no holder is
*outside* the room: nobody's cap may count on it.

Where NVML shows no process on a GPU that has memory in use (a container that hides the other
containers' processes), holders cannot be measured one by one. Then the holder who computes
counts its own figure (its kernel's capped allocations) for itself, and the rest of the memory
NVML shows in use is split evenly among the other accounts present, and within each among its
kernels: what the room counts of another account is what the machine shows, never the figure its
lease writes. Holders whose kernel runs in a PID namespace this process cannot see into
(:mod:`.proof`) are counted the same way: the memory of processes of no known holder is split
among them, not left outside the room.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .leases import Lease
from .placement import CONTEXT_RESERVE, CONTEXTS_PER_HOLDER


@dataclass(frozen=True)
class Lineage:
    """One process as the machine showed it: itself and its ancestors, nearest first, up to the
    nearest holder's kernel (or :data:`.measure.MAX_DEPTH`, or the first process the reader could
    not see), and the account that owns it where that decides anything: a pid a lease names
    among its workers (None: not read, gone, or not shown)."""

    ancestors: tuple[int, ...]
    uid: int | None


@dataclass(frozen=True)
class GpuMemory:
    """One GPU as NVML shows it now."""

    uuid: str
    total: int
    used: int | None  # memory in use on the whole GPU (None: not reported)
    processes: Mapping[int, int] = field(default_factory=dict)  # pid: bytes it holds there
    #: each pid's ancestors and account as the machine was read (:func:`.measure.read`)
    lineage: Mapping[int, Lineage] = field(default_factory=dict)

    @property
    def visible(self) -> bool:
        """Whether holders can be measured one by one: NVML names the processes using it, or
        says nothing is in use there."""
        return bool(self.processes) or self.used == 0


@dataclass(frozen=True)
class Holding:
    """One GPU's memory as the room's holders and the rest hold it."""

    holders: dict[str, int]  # by lease key: bytes its processes hold (contexts set aside)
    outside: int  # bytes in use by processes of no holder, their contexts included
    processes: dict[str, int]  # by lease key: how many of its processes use the GPU
    accounts: dict[str, int] = field(default_factory=dict)  # by lease key: the holder's uid

    def account_of(self, key: str) -> int:
        return self.accounts.get(key, -1)

    def by_account(self) -> dict[int, list[str]]:
        """The holders' keys, by account."""
        out: dict[int, list[str]] = {}
        for key in self.holders:
            out.setdefault(self.account_of(key), []).append(key)
        return out

    @property
    def contexts(self) -> int:
        """The CUDA contexts set aside for the holders: per account, as many as NVML shows its
        processes holding on the GPU, and never fewer than a kernel's and a worker's. Counted
        per account, not per lease: leases with no process on the GPU cost nobody anything."""
        return sum(
            max(CONTEXTS_PER_HOLDER, sum(self.processes.get(key, 0) for key in keys))
            for keys in self.by_account().values()
        )


def owners(
    leases: Sequence[Lease], pids: Iterable[int], lineage: Mapping[int, Lineage]
) -> dict[int, str]:
    """The lease key each of ``pids`` belongs to (pids of no holder are left out), by each pid's
    ``lineage`` as the machine was read: that of the nearest kernel among its ancestors (itself
    included), or else that of a lease naming it among its workers, if the process is of that
    lease's account: a lease can name only its own account's processes, and never one below
    another holder's kernel. A pid whose lineage was not read belongs to nobody."""
    kernels: dict[int, str] = {}
    named: dict[int, Lease] = {}
    for lease in leases:
        if lease.kernel_pid > 0:
            kernels.setdefault(lease.kernel_pid, lease.key)
        if lease.local is None:  # worker pids of another namespace name other processes here
            for worker in lease.workers:
                named.setdefault(worker, lease)
    out = {}
    for pid in pids:
        line = lineage.get(pid)
        if line is None:
            continue
        for ancestor in line.ancestors:
            if ancestor in kernels:
                out[pid] = kernels[ancestor]
                break
        if pid not in out and pid in named and line.uid == named[pid].uid:
            out[pid] = named[pid].key
    return out


def attribute(
    memory: GpuMemory,
    holders: Sequence[Lease],
    own: Lease | None = None,
    own_held: int = 0,
) -> Holding:
    """What each of ``holders`` (the leases on this GPU) holds there, and what processes of no
    holder take. ``own`` (the lease of whoever computes) may count ``own_held``, its kernel's
    own figure, for itself where that is more than NVML shows; nobody else's figure counts
    (see the module's docstring for a GPU whose processes NVML hides)."""
    keys = [lease.key for lease in holders]
    accounts = {lease.key: lease.uid for lease in holders}
    if memory.visible or memory.used is None:  # measured, or nothing known: nothing held
        owner_of = owners(holders, memory.processes, memory.lineage)
        raw = dict.fromkeys(keys, 0)
        count = dict.fromkeys(keys, 0)
        for pid, size in memory.processes.items():
            key = owner_of.get(pid)
            if key is not None:
                raw[key] += size
                count[key] += 1
        held = {k: max(0, raw[k] - CONTEXT_RESERVE * count[k]) for k in keys}
        total_used = memory.used if memory.used is not None else sum(memory.processes.values())
        outside = max(0, total_used - sum(raw.values()))
        unseen = [x for x in holders if x.kernel_pid <= 0 and not count[x.key]]
        if unseen and outside:  # kernels in a PID namespace this process cannot see into
            lumped, lumped_count, outside = _hidden(outside, unseen, None, 0)
            held.update(lumped)
            count.update(lumped_count)
    else:
        held, count, outside = _hidden(memory.used or 0, holders, own, own_held)
    if own is not None and own.key in held:
        held[own.key] = max(held[own.key], own_held)
    return Holding(held, outside, count, accounts)


def _hidden(
    used: int, holders: Sequence[Lease], own: Lease | None, own_held: int
) -> tuple[dict[str, int], dict[str, int], int]:
    """What each holder holds on a GPU whose processes NVML hides: ``own`` its own figure, the
    rest of what is in use split evenly among the accounts of the other leases, then among
    their kernels; and what is in use by nobody of them (all of the rest where there is no
    other lease: processes outside the room, or more of its own than a kernel's and a worker's
    contexts). Each account is counted a kernel's and a worker's context."""
    mine = own.key if own is not None else None
    others: dict[int, list[str]] = {}
    for lease in holders:
        if lease.key != mine:
            others.setdefault(lease.uid, []).append(lease.key)
    first = {lease.uid: lease.key for lease in reversed(holders)}
    contexts = CONTEXTS_PER_HOLDER * CONTEXT_RESERVE * len(first)
    lump = max(0, used - contexts - (own_held if mine is not None else 0))
    held = dict.fromkeys((lease.key for lease in holders), 0)
    if mine is not None:
        held[mine] = own_held
    for keys in others.values():
        for key in keys:
            held[key] = lump // len(others) // len(keys)
    count = dict.fromkeys(held, 0)
    for key in first.values():
        count[key] = CONTEXTS_PER_HOLDER
    return held, count, 0 if others else lump
