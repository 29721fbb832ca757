"""This machine as the package sees it: its GPUs through NVML (:mod:`.nvml`), whether GPU work can
run here and why not (:mod:`.availability`), which of them a process may use and the
``--gpus`` syntax (:mod:`.gpus`), the other people here (:mod:`.local_users`), the cores a process
may use and how busy others keep them (:mod:`.cores`), and files in shared places that someone
else may have named (:mod:`.small_files`)."""
