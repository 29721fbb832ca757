"""The magics: ``%gpu_cluster`` and ``%%to_gpu`` / ``%%to_cpu``, and the buttons that run them.

- :mod:`.gpudask_magics`: the magics class; each magic parses, calls the cluster or the
  converters, and prints.
- :mod:`.parsers`, :mod:`.cell_parsers`, :mod:`.shared_arguments`, :mod:`.arg_types`: what each
  magic accepts, declared once (and so its help).
- :mod:`.completion`: tab completion of ``%gpu_cluster``.
- :mod:`.controls`: the views' buttons, run as the magic a user would type.

Nothing is imported here: the views import :mod:`.controls` without the magics class.
"""
