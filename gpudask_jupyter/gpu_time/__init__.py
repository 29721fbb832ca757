"""Where the GPU's time, memory and bus bytes went: per Dask task prefix on the workers, and per
cell in the kernel.

A worker plugin (:mod:`.worker_plugin`) measures each task's GPU seconds from the best source the
worker has (:mod:`.sources`: CUPTI's activity records where ``cupti-python`` is installed, else
NVML's per-process utilisation samples), its host↔device bytes (CUPTI) and the peak of its RMM
allocations above the task's start (:mod:`.memory_peaks`). The join of readings to tasks is one
pure function (:mod:`.timeline`). Figures go to distributed's fine performance metrics through
``Worker.digest_metric`` under units of their own (the Dask dashboard shows them beside its
own), and as one event a second per worker to the scheduler, which the views and
``%gpu_cluster profile`` read for a window or a cell (:mod:`.readings`). Nothing here is imported
by ``import gpudask_jupyter``.
"""
