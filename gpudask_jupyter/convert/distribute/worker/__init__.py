"""What of ``--distribute`` and ``--gather`` runs inside a Dask worker: the tasks the kernel submits
(:mod:`.tasks`), which a worker imports by name. Nothing here imports the kernel's side.
"""
