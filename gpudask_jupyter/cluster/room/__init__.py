"""The room: a shared GPU server's students, each on a fair share of its GPUs. What a user reads of
it (:mod:`.sentences`); the lease files (:mod:`.leases`) and the lock that proves each one its
kernel's (:mod:`.proof`), placement by plan (:mod:`.placement`)
or elastic shares (:mod:`.shares`), what the machine measured (:mod:`.measure`), the caps
(:mod:`.caps`, :mod:`.allocator`, :mod:`.worker_share`), this kernel's lease (:mod:`.holder`),
the room as shown (:mod:`.reading`, :mod:`.frame_part`).
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
