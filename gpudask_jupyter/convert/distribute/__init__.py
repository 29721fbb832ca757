"""``%%to_gpu --distribute`` and ``%%to_cpu --gather``: objects spread over the cluster's workers
as persisted Dask collections, and back. Where each part runs is its folder:

- :mod:`.kernel`: what runs in the kernel. :mod:`.kernel.variables`, the entry points (one
  transaction over a cell's variables); :mod:`.kernel.spread` and :mod:`.kernel.gathering`, one
  object out to the workers and one collection back; :mod:`.kernel.cluster_view`,
  :mod:`.kernel.task_placer` and :mod:`.kernel.persisted`, the workers as these see them, tasks
  pinned to them and the collections made of their futures; :mod:`.kernel.watch`, a partition
  lost with its worker failed at once.
- :mod:`.worker`: what runs inside a worker (:mod:`.worker.tasks`, the tasks the kernel submits).
- Here, what both sides share, the routes' formats (each module says which of its functions runs
  where): :mod:`.device_blocks` and :mod:`.device_packing` (through the workers' GPU memory, CUDA
  IPC), :mod:`.shared_memory` and :mod:`.segment_plan` (owner-only shared memory),
  :mod:`.partition_layout` and :mod:`.coded_columns` (which bytes of a partition take the fast
  routes). Workers elsewhere get Dask's scatter.

Nothing is imported here: a worker imports :mod:`.worker.tasks` by name.
"""
