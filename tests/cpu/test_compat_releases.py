"""Each compat module's library is taken on only at releases its private calls were checked on:
the release installed here lies within them, and ``pyproject.toml`` bounds the library from above
just past the newest one checked (a library whose bound goes further fails here, as does an
installed release outside the range)."""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import re
import tomllib
from pathlib import Path

import pytest

from gpudask_jupyter import compat
from gpudask_jupyter.compat.releases import Checked, release

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
CHECKED = [
    Checked(*importlib.import_module(f"gpudask_jupyter.compat.{m}").CHECKED) for m in compat.MODULES
]


def _specs() -> dict[str, list[str]]:
    """Every requirement of pyproject.toml (dependencies and extras) by distribution name."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    lines = [f"python{project['requires-python']}", *project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        lines += extra
    found: dict[str, list[str]] = {}
    for line in lines:
        name = re.split(r"[\s\[<>=!~;]", line, maxsplit=1)[0].lower().replace("_", "-")
        found.setdefault(name, []).append(line)
    return found


def _upper(spec: str) -> tuple[int, int] | None:
    match = re.search(r"<\s*([\d.]+)", spec)
    return release(match.group(1)) if match else None


def _just_past(highest: str) -> set[tuple[int, int]]:
    """The bounds that admit ``highest`` and nothing newer: the next minor, or the next major."""
    major, minor = release(highest)
    return {(major, minor + 1), (major + 1, 0)}


@pytest.mark.parametrize("checked", CHECKED, ids=lambda c: c.distribution)
def test_pyproject_bounds_each_library_just_past_the_newest_release_checked(
    checked: Checked,
) -> None:
    specs = _specs().get(checked.distribution)
    assert specs, f"{checked.distribution} is not a requirement in pyproject.toml"
    for spec in specs:
        assert _upper(spec) in _just_past(checked.highest), (spec, checked)


@pytest.mark.parametrize("checked", CHECKED, ids=lambda c: c.distribution)
def test_the_installed_release_is_one_that_was_checked(checked: Checked) -> None:
    try:
        installed = (
            platform.python_version()
            if checked.distribution == "python"
            else importlib.metadata.version(checked.distribution)
        )
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{checked.distribution} is not installed here (the GPU tier checks it)")
    assert checked.covers(installed), (installed, checked)


def test_a_release_outside_what_was_checked_is_not_covered() -> None:
    checked = Checked("distributed", "2024.8", "2026.8")
    assert checked.covers("2026.8.1") and checked.covers("2024.8.0") and checked.covers("2025.3")
    assert not checked.covers("2026.9.0") and not checked.covers("2024.7.1")
    assert release("26.10.0a3") == (26, 10) and release("3") == (3, 0)
