"""The kernel's Dask cluster: start, attach, join, scale, restart, stop, and who may reach it.

- :mod:`.session`: a :class:`~.session.ClusterSession` and its life, and what a kernel runs of its
  cluster (:class:`~.session.KernelCluster`); :mod:`.kinds`: what differs between the kinds of
  cluster; :mod:`.controls`: the views' buttons.
- :mod:`.commands`: what each ``%gpu_cluster`` subcommand does to it, checked before anything
  changes; :mod:`.operations`: run so that Ctrl-C cannot cut one in half; :mod:`.prewarm`: the
  imports a first start needs, made in the background after the extension's cell.
- :mod:`.options`, :mod:`.target`: what a request asks for, checked before anything starts
  (the GPUs by :mod:`..machine.gpus`); :mod:`.security`, :mod:`.certificates`: who may reach it
  (the other people here by :mod:`..machine.local_users`).
- :mod:`.connect`, :mod:`.handshake`, :mod:`.join`: the library's objects, made and closed within
  deadlines.
- :mod:`.worker_processes`, :mod:`.worker_setup`, :mod:`.worker_probe`: the worker processes, the
  preload they run, and the question each is asked (which GPU it has); :mod:`.fork_server`:
  the server they are forked from, which imports while the kernel does (:mod:`.fork_preload`:
  its first import).
- :mod:`.tables`, :mod:`.gpu_bindings`: what ``%gpu_cluster`` prints; :mod:`.logs`: where Dask's
  own log lines go instead of the cells.

Nothing is imported here: a worker's preload (:mod:`.worker_setup`) imports this package and
must stay cheap.
"""
