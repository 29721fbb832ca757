"""What a user calls from Python (``from gpudask_jupyter import to_gpu, to_cpu``): the functions
behind %%to_gpu and %%to_cpu for one object (:mod:`.conversions`). Above the conversions in the
kernel (:mod:`..convert`) and their spread over the workers (:mod:`..convert.distribute`), which
build on the former, so that neither folder imports the other back.
"""

from __future__ import annotations

from .conversions import to_cpu, to_gpu

__all__ = ["to_cpu", "to_gpu"]
