"""The workshop notebooks (notebooks/*.ipynb), end to end through a real kernel.

Each notebook runs with nbclient in a fresh ``python3`` kernel: the magics run for real (clusters,
workers, scheduler subprocesses). Small sizes are appended to the notebook's one ``parameters``
cell; the notebook itself must also work with its own defaults, which pick small sizes without a
GPU. Without a GPU, the CPU fallback must say so and no ``speed-up`` line may appear. Every
process the kernel started, and the kernel itself, must be gone after the kernel shuts down.

The kernels run in the environment the README's main command makes (``scripts/lab_env.sh``, the
``workshop`` extra), not in the test environment, which has more installed: CI sets
``GPUDASK_NOTEBOOK_PYTHON`` to its Python (``scripts/test.sh``), and then a missing package of the
workshop fails here as it would fail a student.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# small sizes per notebook, appended to its `parameters` cell (a new notebook needs an entry)
SMALL = {
    "01_check_machine_and_start_cluster.ipynb": "N = 100_000",
    "02_pandas_to_cudf.ipynb": "ROWS = 200_000\nREPEAT = 1",
    "03_numpy_cupy_and_dask_arrays.ipynb": "N = 200\nSIDE = 800\nREPEAT = 1",
    "04_watching_work_in_the_panel.ipynb": "ROWS = 200_000\nROUNDS = 1",
    "05_attaching_to_a_multi_node_cluster.ipynb": "SIDE = 800",
}
# what %gpu_cluster start and %%to_gpu print when they fall back to the CPU
FALLBACK = ("no usable GPU", "no GPU for the conversion")
SPEED_UP = "speed-up "


def _gpu_usable() -> bool:
    from gpudask_jupyter.machine import nvml

    return nvml.status().available and all(
        importlib.util.find_spec(module) is not None for module in ("cupy", "dask_cuda")
    )


def _parameters_cells(nb: Any) -> list[Any]:
    return [cell for cell in nb.cells if "parameters" in cell.metadata.get("tags", [])]


def _texts(nb: Any) -> list[str]:
    """Every output's text: streams, errors, and the text/plain of results and displays."""
    texts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                texts.append(output.text)
            elif output.output_type == "error":
                texts.append("\n".join(output.traceback))
            else:
                texts.append(output.get("data", {}).get("text/plain", ""))
    return texts


def _ids(path: Path) -> str:
    return path.stem


def _kernel_manager() -> Any:
    """A kernel of the workshop's environment where one is given (GPUDASK_NOTEBOOK_PYTHON), else
    of this one; CI requires the workshop's (GPUDASK_REQUIRE_LAB_ENV)."""
    from jupyter_client.manager import KernelManager

    python = os.environ.get("GPUDASK_NOTEBOOK_PYTHON")
    if not python and os.environ.get("GPUDASK_REQUIRE_LAB_ENV"):
        pytest.fail("GPUDASK_NOTEBOOK_PYTHON is not set: run the notebooks in scripts/lab_env.sh's")
    km = KernelManager(kernel_name="python3")
    if python:
        km.kernel_cmd = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    return km


def test_the_workshop_environment_is_the_one_lab_sh_makes() -> None:
    """Where the notebooks run in their own environment, it lacks the test tools (so it is not
    the test environment) and has every package the notebooks import."""
    import subprocess

    python = os.environ.get("GPUDASK_NOTEBOOK_PYTHON")
    if not python:
        if os.environ.get("GPUDASK_REQUIRE_LAB_ENV"):
            pytest.fail("GPUDASK_NOTEBOOK_PYTHON is not set")
        pytest.skip("no workshop environment given (scripts/test.sh makes one)")
    probe = (
        "import importlib.util, json\n"
        "names = ['pandas', 'pyarrow', 'numpy', 'dask.dataframe', 'distributed', 'notebook', "
        "'voila', 'ipykernel', 'psutil', 'gpudask_jupyter', 'pytest', 'playwright']\n"
        "print(json.dumps({n: importlib.util.find_spec(n.split('.')[0]) is not None "
        "for n in names}))"
    )
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True)
    found = __import__("json").loads(out.stdout)
    assert not found.pop("pytest") and not found.pop("playwright")  # not the test environment
    assert all(found.values()), found


def test_the_series_is_there() -> None:
    assert [p.name for p in NOTEBOOKS] == sorted(SMALL), "notebooks/ and SMALL disagree"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_committed_notebook_is_clean(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {index} has outputs: strip them"
            assert cell.execution_count is None, f"cell {index} has an execution count"
    parameters = _parameters_cells(nb)
    assert len(parameters) == 1, "exactly one cell tagged 'parameters'"
    assert parameters[0].cell_type == "code"


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        parent = psutil.Process(pid)
        return [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _still_running(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _describe(proc: psutil.Process) -> str:
    try:
        return f"{proc.pid}: {' '.join(proc.cmdline())[:200]}"
    except psutil.Error:
        return str(proc.pid)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    # the kernel (and the Dask processes it starts) import this checkout's package
    path_before = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), path_before])))
    workdir = tmp_path / "work"
    workdir.mkdir()

    nb = nbformat.read(path, as_version=4)
    (parameters,) = _parameters_cells(nb)
    parameters.source += "\n" + SMALL[path.name]

    seen: dict[int, psutil.Process] = {}
    before = {p.pid for p in psutil.Process().children(recursive=True)}

    def record(**_: Any) -> None:
        """After each cell: the kernel and everything it started so far."""
        provisioner = getattr(client.km, "provisioner", None)
        process = getattr(provisioner, "process", None)
        if process is not None:
            seen.update((p.pid, p) for p in _descendants(process.pid))

    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        km=_kernel_manager(),
        resources={"metadata": {"path": str(workdir)}},
        on_cell_executed=record,
    )
    try:
        client.execute()
    except CellExecutionError as err:
        pytest.fail(f"{path.name}: a cell failed\n{err}")
    finally:
        # a kernel manager given to nbclient is not shut down by it: as a student's closing tab
        if client.km is not None and client.km.is_alive():
            client.km.shutdown_kernel(now=False)
        # the kernel has shut down: none of its processes (workers, schedulers) may be left
        leftovers = _still_running(list(seen.values()), timeout=30)
        mine = [
            p for p in psutil.Process().children(recursive=True) if p.pid not in before
        ]  # anything else this test started
        leftovers += [p for p in _still_running(mine, timeout=10) if p.pid not in seen]
        for proc in leftovers:
            proc.kill()
        assert not leftovers, "processes left running:\n" + "\n".join(map(_describe, leftovers))

    errors = [
        output
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]
    assert not errors, errors
    assert seen, "the kernel's process was never seen"

    text = "\n".join(_texts(nb))
    if not _gpu_usable():
        if not path.name.startswith("05"):
            assert any(message in text for message in FALLBACK), (
                f"{path.name}: no CPU fallback message in the outputs"
            )
        speed_ups = [line for line in text.splitlines() if line.startswith(SPEED_UP)]
        assert not speed_ups, f"speed-up lines without a GPU: {speed_ups}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_no_notebook_prints_a_dashboard_link_of_its_own(path: Path) -> None:
    """The start's summary says whether a dashboard is served, and where; a link printed by the
    notebook itself (client.dashboard_link) is dead on a shared machine, where none is."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert "dashboard_link" not in cell.source, cell.source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids)
def test_prose_renders_in_voila_with_only_the_headings_it_means(path: Path) -> None:
    """Voila and nbconvert render markdown with mistune, which reads an indented continuation line
    starting with "#" as a heading (JupyterLab does not): the prose must not depend on which."""
    import re

    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        prose = re.sub(r"^```.*?^```", "", cell.source, flags=re.MULTILINE | re.DOTALL)
        meant = len(re.findall(r"^#{1,6} ", prose, flags=re.MULTILINE))
        rendered = len(re.findall(r"<h[1-6][ >]", markdown2html_mistune(cell.source)))
        assert rendered == meant, f"{path.name}: a line renders as a heading in:\n{cell.source}"
