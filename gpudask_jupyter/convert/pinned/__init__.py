"""The pinned, pipelined host↔device copy under ``%%to_gpu`` / ``%%to_cpu``.

- :mod:`.staging`: the pipeline (:class:`~.staging.PinnedStager`): copy threads that fill and
  drain a small ring of page-locked buffers while the DMAs run.
- :mod:`.ring`: the ring's shape and the pieces its threads take in turn.
- :mod:`.thread_count`: how many copy threads a transfer takes on this host, now.
- :mod:`.host_memory`: fresh host memory for what comes back, on huge pages.
- :mod:`.cuda_backend`: the CUDA calls, behind a seam the CPU tests replace.
"""
