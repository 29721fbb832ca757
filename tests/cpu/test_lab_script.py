"""The README's main command started again with nothing changed: ``scripts/lab.sh`` keeps the
environment it made (no pip run: an instructor restarting JupyterLab mid-workshop waited 25 s
for one) and JupyterLab serves. Runs on the workshop's environment scripts/test.sh made with
``scripts/lab_env.sh``; the time to serving is kept in test-artifacts/measurements.json."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from support import free_port, measured

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(180)


def _environment() -> Path:
    python = os.environ.get("GPUDASK_NOTEBOOK_PYTHON")
    if not python:
        if os.environ.get("GPUDASK_REQUIRE_LAB_ENV"):
            pytest.fail("GPUDASK_NOTEBOOK_PYTHON is not set")
        pytest.skip("no workshop environment given (scripts/test.sh makes one)")
    return Path(python).parents[1]


def _serving(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return int(reply.status) == 200
    except OSError:
        return False


def test_a_second_start_with_nothing_changed_keeps_the_environment_and_serves(
    tmp_path: Path,
) -> None:
    env_dir = _environment()
    # as the first start left it (test.sh made it with lab_env.sh): up to date
    made = subprocess.run(
        [ROOT / "scripts" / "lab_env.sh", env_dir], capture_output=True, text=True, check=True
    )
    assert "up to date" in made.stdout, made.stdout + made.stderr

    port, token = free_port(), secrets.token_hex(8)
    env = {
        **os.environ,
        "GPUDASK_LAB_ENV": str(env_dir),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    args = ["--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1"]
    log = tmp_path / "lab.log"
    began = time.monotonic()
    with log.open("w") as out:
        lab = subprocess.Popen(
            [ROOT / "scripts" / "lab.sh", *args, f"--IdentityProvider.token={token}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}/api/status?token={token}"
        while not _serving(url):
            assert lab.poll() is None, log.read_text()
            assert time.monotonic() - began < 120, log.read_text()
            time.sleep(0.1)
        took = time.monotonic() - began
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(30)
    text = log.read_text()
    assert "up to date" in text, text  # nothing installed
    measured("scripts/lab.sh, second start, nothing changed: seconds to serving", round(took, 2))
