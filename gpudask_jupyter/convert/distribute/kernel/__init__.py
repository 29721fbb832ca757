"""What of ``--distribute`` and ``--gather`` runs in the kernel: the cell's variables, each object
spread or gathered, the workers as the kernel sees them, the tasks it pins to them, and the watch
on what they hold. Nothing here runs in a worker; the tasks it submits are :mod:`..worker`'s.
"""
