"""The room: a shared GPU server's students, each on a fair share of its GPUs. What a user reads of
it (:mod:`.sentences`).

Its core is a function of what was read, with no I/O (the architecture test checks it): whose
each GPU process is and what each holder holds (:mod:`.holding`), placement by plan
(:mod:`.placement`) or elastic shares (:mod:`.shares`), from a typed reading of the machine and
leases whose identities were proved. Beside it, what reads and writes: the machine's memory and
processes (:mod:`.measure`), the lease files (:mod:`.leases`) and the lock that proves each one
its kernel's (:mod:`.proof`); the caps (:mod:`.caps`, :mod:`.allocator`, :mod:`.worker_share`),
this kernel's lease (:mod:`.holder`), the room as shown (:mod:`.reading`, :mod:`.frame_part`).
"""

from __future__ import annotations

from .holder import Place
from .sentences import (
    before_kernel_gpu_work,
    explain_out_of_memory,
    install_kernel_cap,
    out_of_memory,
    place,
    views_reader,
)

__all__ = [
    "Place",
    "before_kernel_gpu_work",
    "explain_out_of_memory",
    "install_kernel_cap",
    "out_of_memory",
    "place",
    "views_reader",
]
