"""What identifies this kernel to the Jupyter server: the id in its connection file name.

The server knows each kernel by that id, so the registry entry written under it lets the sidebar
find the cluster of the notebook in focus. Outside a Jupyter kernel (terminal IPython, a script)
the process id stands in.
"""

from __future__ import annotations

import os
import re
import sys

_KERNEL_FILE = re.compile(r"kernel-([A-Za-z0-9_-]+)\.json$")


def kernel_id() -> str:
    app_module = sys.modules.get("ipykernel.kernelapp")
    if app_module is not None:
        app_class = app_module.IPKernelApp
        if app_class.initialized():
            match = _KERNEL_FILE.search(str(app_class.instance().connection_file))
            if match:
                return match.group(1)
    return f"pid-{os.getpid()}"
