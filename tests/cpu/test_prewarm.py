"""The imports of a first start are made while the kernel is idle, never in a cell or beside an
operation that makes them itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SETUP = """
import sys, json
from IPython.core.interactiveshell import InteractiveShell
from gpudask_jupyter.cluster import prewarm
from gpudask_jupyter.magics.extension import Extension
ip = InteractiveShell.instance()


def load(cells="%load_ext gpudask_jupyter"):  # the kernel's imports ahead, as loaded
    ip.run_cell(cells)
    return Extension.of(ip).cluster.imports
"""


def _run(code: str) -> dict[str, object]:
    """``code`` in a fresh interpreter with the option on (the default; set whatever the
    environment says)."""
    env = {**os.environ, "DASK_GPUDASK__PREWARM": "true"}
    out = subprocess.run(
        [sys.executable, "-c", SETUP + code], capture_output=True, text=True, check=True, env=env
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_imports_follow_an_idle_moment_after_the_loading_cell() -> None:
    seen = _run("""
prewarm.IDLE = 0.05
warm = load("%load_ext gpudask_jupyter")
in_the_cell = "distributed" in sys.modules
warm.join()
print(json.dumps({"in_the_cell": in_the_cell, "after": "distributed" in sys.modules,
                  "ours": "gpudask_jupyter.cluster.commands" in sys.modules}))
""")
    assert seen == {"in_the_cell": False, "after": True, "ours": True}


def test_a_cell_that_starts_sooner_puts_them_off() -> None:
    seen = _run("""
prewarm.IDLE = 60
warm = load("%load_ext gpudask_jupyter")
first = warm._timer
ip.events.trigger("pre_run_cell", None)  # the next cell, at once (Run All)
off = not warm.armed and first is not None and first.finished.is_set()
ip.run_cell("x = 1")
print(json.dumps({"off": off, "again": warm.armed,
                  "distributed": "distributed" in sys.modules}))
warm.cancel()
""")
    assert seen == {"off": True, "again": True, "distributed": False}


def test_an_operation_that_comes_first_makes_them_itself() -> None:
    seen = _run("""
prewarm.IDLE = 60
warm = load("%load_ext gpudask_jupyter")
warm.wait()  # what an operation's thread does first
ip.run_cell("x = 1")
print(json.dumps({"armed": warm.armed,
                  "hooked": warm._cell_ran in ip.events.callbacks["post_run_cell"]}))
""")
    assert seen == {"armed": False, "hooked": False}


def test_the_option_turns_them_off() -> None:
    seen = _run("""
prewarm.IDLE = 0.05
warm = load("%load_ext gpudask_jupyter\\n%config GpuDaskMagics.prewarm = False")
warm.join()
print(json.dumps({"distributed": "distributed" in sys.modules}))
""")
    assert seen == {"distributed": False}


def test_unloading_cancels_them() -> None:
    seen = _run("""
prewarm.IDLE = 60
warm = load()
ip.run_cell("%unload_ext gpudask_jupyter")
warm.join()
print(json.dumps({"armed": warm.armed,
                  "distributed": "distributed" in sys.modules}))
""")
    assert seen == {"armed": False, "distributed": False}


def test_a_magic_waits_only_for_imports_under_way() -> None:
    """On the main thread a magic waits for imports that have begun (so that it never imports
    beside them), not for ones merely armed (which the operation then makes itself)."""
    seen = _run("""
import time
prewarm.IDLE = 60
warm = load("%load_ext gpudask_jupyter")
t = time.monotonic(); warm.under_way(); armed = time.monotonic() - t
warm.idle = 0.01
warm.after_cell(ip)  # armed again after the next cell, soon
ip.run_cell("x = 1")
deadline = time.monotonic() + 30
while not warm.begun and time.monotonic() < deadline:
    time.sleep(0.001)
warm.under_way()
print(json.dumps({"armed_wait_s": round(armed, 1), "done": warm.finished,
                  "distributed": "distributed" in sys.modules}))
""")
    assert seen == {"armed_wait_s": 0.0, "done": True, "distributed": True}
