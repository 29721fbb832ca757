"""The workshop notebooks with their default sizes: run time and speed-ups, for a GPU machine.

Each notebook of notebooks/ runs end to end in a fresh ``python3`` kernel (nbclient), exactly as
a student would run it, with the sizes its ``parameters`` cell picks (large with a GPU). Printed:
one row per notebook with its run time, then every ``speed-up <operation>: <x>×`` line the
notebook printed (the notebooks print none when they ran on the CPU).

    python benchmarks/notebooks.py [--only 02 03] [--timeout 1800] [--save DIR]

``--save DIR`` writes each executed notebook, outputs included, to DIR (handy to look at the
tables and the %%to_gpu reports afterwards). Exit status 1 if a notebook failed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPEED_UP = re.compile(r"^speed-up .+: .+×\s*$")


def output_lines(nb: Any) -> list[str]:
    lines: list[str] = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                lines += output.text.splitlines()
            elif output.output_type in {"execute_result", "display_data"}:
                lines += output.get("data", {}).get("text/plain", "").splitlines()
    return lines


def run_notebook(path: Path, timeout: int, save: Path | None) -> tuple[float, list[str], str]:
    """(seconds, speed-up lines, error or "") of one notebook run."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    error = ""
    with tempfile.TemporaryDirectory(prefix="gpudask-notebook-") as workdir:
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": workdir}}
        )
        start = time.perf_counter()
        try:
            client.execute()
        except CellExecutionError as err:
            error = str(err).strip().splitlines()[-1] if str(err).strip() else repr(err)
        except Exception as err:
            error = f"{type(err).__name__}: {err}"
        seconds = time.perf_counter() - start
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, save / path.name)
    speed_ups = [line.strip() for line in output_lines(nb) if SPEED_UP.match(line.strip())]
    return seconds, speed_ups, error


def gpu_summary() -> str:
    try:
        from gpudask_jupyter.machine import nvml
    except ImportError:
        return "gpudask_jupyter is not installed here (pip install -e '.[gpu,test]')"

    state = nvml.status()
    if not state.available:
        return f"no usable GPU ({state.reason}): the notebooks run on the CPU, no speed-ups"
    names = ", ".join(f"{d.label}: {d.name}" for d in nvml.devices())
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return f"GPUs {names}" + (f" (CUDA_VISIBLE_DEVICES={visible})" if visible else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", nargs="+", metavar="PREFIX", help="notebooks whose name starts so, e.g. 02 03"
    )
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell (default 1800)")
    parser.add_argument("--save", type=Path, metavar="DIR", help="write the executed notebooks")
    args = parser.parse_args()

    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.only:
        paths = [p for p in paths if p.name.startswith(tuple(args.only))]
    if not paths:
        sys.exit("no notebook matches")
    print(gpu_summary(), flush=True)

    rows = []
    failed = False
    for path in paths:
        print(f"running {path.name} …", flush=True)
        seconds, speed_ups, error = run_notebook(path, args.timeout, args.save)
        failed |= bool(error)
        rows.append((path.name, seconds, speed_ups, error))

    width = max(len(name) for name, *_ in rows)
    print()
    print(f"{'notebook'.ljust(width)}  run time (s)  speed-ups")
    print(f"{'-' * width}  ------------  ---------")
    for name, seconds, speed_ups, error in rows:
        details = [f"FAILED: {error}"] if error else speed_ups or ["(none)"]
        print(f"{name.ljust(width)}  {seconds:12.1f}  {details[0]}")
        for line in details[1:]:
            print(f"{''.ljust(width)}  {'':12}  {line}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
