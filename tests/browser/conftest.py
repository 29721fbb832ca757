"""A real JupyterLab server (subprocess) and Debian's Chromium driven by Playwright.

Chromium is /usr/bin/chromium (Debian's package: ./scripts/test.sh installs it); Playwright
never downloads a browser. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_support import ARTIFACTS, Lab
from support import stand_in_room

CHROMIUM = "/usr/bin/chromium"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    missing = not Path(CHROMIUM).exists()
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.browser)
            if missing and not os.environ.get("GPUDASK_REQUIRE_BROWSER"):
                item.add_marker(pytest.mark.skip(reason=f"browser test: {CHROMIUM} not installed"))


@contextlib.contextmanager
def _running(
    name: str, args: list[str], env: dict[str, str], log: Path, ready: str
) -> Iterator[None]:
    """A server process, logging to ``log``, once ``ready`` (a URL) answers; stopped after, its
    log kept under test-artifacts/, named after its fixture's folder too (the kernels' logs of
    one module's failure must survive the next module's server)."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(ready, timeout=2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{name} did not start:\n" + log.read_text()) from None
            time.sleep(0.5)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(log, ARTIFACTS / f"{log.parent.name.rstrip('0123456789')}-{log.name}")


def _serve(
    app: str, base: Path, extra_args: tuple[str, ...] = (), extra_env: dict[str, str] | None = None
) -> Iterator[Lab]:
    """Run ``python -m <app>`` (jupyterlab or notebook) on a free port until the block ends."""
    from support import free_port

    root = base / "notebooks"
    root.mkdir()
    runtime = base / "runtime"
    runtime.mkdir(mode=0o700)
    token = secrets.token_hex(16)
    port = free_port()
    log = base / f"{app}.log"
    # kernels start "python" from PATH: this interpreter's, as in an activated environment
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    # the lab extension of this checkout's package (built by pip install or npm run build), ahead
    # of the copy pip placed in the environment at install time, which a later build leaves stale
    import gpudask_jupyter

    data = base / "data" / "labextensions"
    data.mkdir(parents=True)
    (data / "gpudask-jupyter").symlink_to(Path(gpudask_jupyter.__file__).parent / "labextension")
    env = dict(
        os.environ,
        JUPYTER_RUNTIME_DIR=str(runtime),
        PATH=path,
        JUPYTER_PATH=str(base / "data"),
        # the views are tested with a dashboard to link to, whoever else has an account here
        # (the shared-machine default, no dashboard, is tested in
        # tests/cpu/test_cluster_security.py)
        DASK_GPUDASK__SHARED_MACHINE="false",
    )
    env.update(extra_env or {})
    settings = base / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    app_class = "LabApp" if app == "jupyterlab" else "JupyterNotebookApp"
    args = [
        sys.executable,
        "-m",
        app,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_unauthenticated_access=False",
        # a fresh workspace and settings: nothing restored from an earlier run, no news
        f"--{app_class}.workspaces_dir={base / 'workspaces'}",
        f"--{app_class}.user_settings_dir={base / 'settings'}",
    ]
    args.extend(extra_args)
    if os.getuid() == 0:  # a CI container running as root
        args.append("--allow-root")
    url = f"http://127.0.0.1:{port}/"
    with _running(app, args, env, log, f"{url}api/status?token={token}"):
        yield Lab(url, token, root, log, "lab/tree/" if app == "jupyterlab" else "notebooks/")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _serve("jupyterlab", tmp_path_factory.mktemp("lab"))


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _serve("notebook", tmp_path_factory.mktemp("notebook"))


@pytest.fixture(scope="module")
def replay_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab whose frame route answers from a recording (replay_server.py): the sidebar
    draws replayed GPU frames without a GPU."""
    here = str(Path(__file__).parent)
    pythonpath = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    yield from _serve(
        "jupyterlab",
        tmp_path_factory.mktemp("replay"),
        ("--ServerApp.jpserver_extensions=replay_server=True",),
        {"PYTHONPATH": pythonpath},
    )


@pytest.fixture(scope="module")
def room_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    """JupyterLab on a shared machine with two GPUs of 16 GiB (the room's test seam: the
    clusters are CPU clusters, the leases real) and a room directory of its own; yields the
    server and that directory."""
    base = tmp_path_factory.mktemp("room")
    room = base / "room"
    env = {
        **stand_in_room("2:16GiB"),
        "DASK_GPUDASK__ROOM_DIR": str(room),
        "DASK_GPUDASK__SHARED_MACHINE": "true",
        "DASK_GPUDASK__ROOM_GPUS": "1",  # the tests' conftest turns the room off
        "DASK_GPUDASK__ROOM_STUDENTS": "4",
    }
    for lab in _serve("jupyterlab", base, extra_env=env):
        yield lab, room


VOILA_CELLS = ["import replay\nreplay.replay_widget()"]


def serve_voila(base: Path, notebook: Path, extra_args: tuple[str, ...] = ()) -> Iterator[str]:
    """Voila serving ``notebook`` until the block ends; yields the page's URL. The lab extension
    of this checkout is on its path, as in JupyterLab; kernels import this directory's modules
    (``replay``)."""
    from support import free_port

    import gpudask_jupyter

    data = base / "data" / "labextensions"
    data.mkdir(parents=True)
    # a copy: Voila's static handler refuses files a symbolic link leads out of its paths
    built = Path(gpudask_jupyter.__file__).parent / "labextension"
    shutil.copytree(built, data / "gpudask-jupyter")
    here = str(Path(__file__).parent)
    env = dict(
        os.environ,
        JUPYTER_PATH=str(base / "data"),
        JUPYTER_RUNTIME_DIR=str(base),
        PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    port = free_port()
    log = base / f"voila-{notebook.stem}.log"
    args = [sys.executable, "-m", "voila", str(notebook), "--no-browser"]
    args += [f"--port={port}", "--Voila.ip=127.0.0.1", *extra_args]
    url = f"http://127.0.0.1:{port}/"
    with _running("voila", args, env, log, f"{url}voila/static/voila.js"):
        yield url


@pytest.fixture(scope="module")
def voila(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Voila serving one notebook that shows the panel widget fed from a recording; yields the
    page's URL."""
    base = tmp_path_factory.mktemp("voila")
    Lab("", "", base, base / "voila.log", "").notebook("voila.ipynb", VOILA_CELLS)
    yield from serve_voila(base, base / "voila.ipynb")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            yield chromium
        finally:
            chromium.close()


def open_page(browser: Any, width: int = 1600, height: int = 1000) -> Any:
    """A page in a fresh context of ``width`` x ``height``; dialogs and page errors recorded."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    dialogs: list[str] = []
    errors: list[str] = []

    def on_dialog(dialog: Any) -> None:
        if dialog.type == "beforeunload":  # leaving a notebook with unsaved outputs
            dialog.accept()
        else:  # an alert would be a script run from data: recorded, tests fail on it
            dialogs.append(dialog.message)
            dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.dialogs = dialogs
    page.errors = errors
    return page


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = open_page(browser)
    try:
        yield page
    finally:
        page.context.close()
