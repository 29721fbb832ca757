"""The wheel carries the prebuilt lab extension and enables the server extension by itself:
installed where no Node exists, `jupyter labextension list` shows it enabled and OK."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
BUILT = ROOT / "gpudask_jupyter" / "labextension" / "package.json"

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        not BUILT.exists(), reason="front end not built (pip install -e . builds it)"
    ),
]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
    )
    (found,) = out.glob("gpudask_jupyter-*.whl")
    return found


def test_wheel_contains_the_front_ends_and_the_server_config(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    data = "gpudask_jupyter-0.1.0.data/data/"
    assert f"{data}share/jupyter/labextensions/gpudask-jupyter/package.json" in names
    assert f"{data}share/jupyter/labextensions/gpudask-jupyter/install.json" in names
    assert any(
        n.startswith(f"{data}share/jupyter/labextensions/gpudask-jupyter/static/remoteEntry")
        for n in names
    )
    assert f"{data}etc/jupyter/jupyter_server_config.d/gpudask_jupyter.json" in names
    assert "gpudask_jupyter/widget/static/panel.js" in names
    # no npm tree and no TypeScript sources (a bundled chunk may be *named* after node_modules)
    assert not [n for n in names if "node_modules" in n.split("/") or n.startswith("labextension/")]


def test_installed_without_node_the_extension_is_enabled_and_ok(
    wheel: Path, tmp_path: Path
) -> None:
    # unpack the wheel as an installer does (pip --prefix would uninstall the package from
    # the running environment): data files under the prefix, the package on a path of its own
    prefix, site = tmp_path / "prefix", tmp_path / "site"
    data = "gpudask_jupyter-0.1.0.data/data/"
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            target = prefix / name[len(data) :] if name.startswith(data) else site / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(name))
    env = {
        "PATH": str(Path(sys.executable).parent),  # the Python tools only: no node, no npm
        "HOME": str(tmp_path),
        "PYTHONPATH": str(site),
        "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    labextensions = subprocess.run(
        [sys.executable, "-m", "jupyterlab.labextensions", "list"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    text = re.sub(r"\x1b\[[0-9;]*m", "", labextensions.stdout + labextensions.stderr)
    # the listing is grouped by folder; ours must be found in the wheel's own install
    section = text.split(str(prefix / "share" / "jupyter" / "labextensions"), 1)
    assert len(section) == 2, text
    ours = section[1].split("\n   /", 1)[0]
    line = next(ln for ln in ours.splitlines() if "gpudask-jupyter" in ln)
    assert "enabled" in line and "OK" in line, text
