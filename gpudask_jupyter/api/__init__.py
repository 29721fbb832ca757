"""What a user calls from Python: the functions behind %%to_gpu and %%to_cpu for one object
(:mod:`.conversions`: ``from gpudask_jupyter import to_gpu, to_cpu``), and what a notebook asks
of the machine before it chooses its sizes (:mod:`.machine`: ``gpus``, ``why_no_gpu``). Above
the conversions in the kernel (:mod:`..convert`) and their spread over the workers
(:mod:`..convert.distribute`), which build on the former, so that neither folder imports the
other back.
"""

from __future__ import annotations

from .conversions import to_cpu, to_gpu
from .machine import Gpu, gpus, why_no_gpu

__all__ = ["Gpu", "gpus", "to_cpu", "to_gpu", "why_no_gpu"]
