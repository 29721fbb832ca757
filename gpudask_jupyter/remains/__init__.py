"""What the package's processes leave behind, removed: what a killed kernel left (found again by
the next ``%load_ext`` and by the Jupyter server) and what the undertaker removes the moment a
kernel ends. It reaches every folder that makes files (the registry, the fork server, the room,
shared memory), so it sits above them all, and nothing below imports it: the undertaker of
:mod:`..lifecycle` starts :mod:`.burial` as a process of its own, by module name.
"""
