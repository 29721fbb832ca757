"""``%%to_gpu --distribute`` and ``%%to_cpu --gather``: objects spread over the cluster's workers
as persisted Dask collections, and back.

- :mod:`.variables`: the entry points, one transaction over a cell's variables.
- :mod:`.spread`, :mod:`.gathering`: one object out to the workers, one collection back.
- :mod:`.cluster_view`, :mod:`.task_placer`, :mod:`.persisted`: the workers as these see them,
  tasks pinned to them, the collections made of their futures.
- Routes: :mod:`.device_blocks` and :mod:`.device_packing` (through the workers' GPU memory, CUDA
  IPC), :mod:`.shared_memory` and :mod:`.segment_plan` (owner-only shared memory), Dask's scatter
  for workers elsewhere. :mod:`.partition_layout` says which bytes of a partition take the fast
  routes.
- :mod:`.worker_tasks`: what runs inside a worker.

Nothing is imported here: a worker imports :mod:`.worker_tasks` by name.
"""
