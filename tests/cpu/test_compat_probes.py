"""The private calls of ``compat`` are taken on by what they do, not by release number.

Each compat module lists what it relies on (``needs()``); a probe runs those checks once a
process. Here: every library installed offers every call (on each Python these tests run on),
a lack is said once in a sentence naming the library, its release and what is done without it,
the callers fall back, and ``pyproject.toml`` bounds a library from above only where a comment
beside the bound names the break.
"""

from __future__ import annotations

import importlib
import logging
import re
import subprocess
import sys
import tomllib
import types
from collections.abc import Iterator
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

import pytest

from gpudask_jupyter import compat
from gpudask_jupyter.compat import probes, probing

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    probes.forget()
    yield
    probes.forget()


@pytest.mark.parametrize("name", compat.MODULES)
def test_each_installed_library_offers_every_call_this_package_makes(name: str) -> None:
    probe = probes.probe(name)
    if probe.release() is None:
        pytest.skip(f"{probe.distribution} is not installed here (the GPU tier probes it)")
    assert [lack.sentence() for lack in probe.lacks()] == []
    listed = importlib.import_module(f"gpudask_jupyter.compat.{name}").needs()
    assert listed, name
    for need, check, without in listed:
        assert isinstance(need, str) and callable(check) and without, need


def test_the_report_names_each_library_and_says_all_is_there() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpudask_jupyter.compat"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(compat.MODULES)
    version = ".".join(map(str, sys.version_info[:3]))
    assert f"python {version}: offers every call" in lines
    assert any(re.fullmatch(r"distributed \S+: offers every call", line) for line in lines)


def test_a_lack_is_said_once_in_a_sentence_and_the_caller_falls_back(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Tracker:  # a resource tracker of some future Python, without the private fields
        def __init__(self) -> None:
            self.calls = 0

    monkeypatch.setattr(resource_tracker, "_resource_tracker", Tracker())
    with caplog.at_level(logging.WARNING, logger=probing.log.name):
        assert compat.detach_resource_tracker() is None
        assert compat.detach_resource_tracker() is None
    said = [r.getMessage() for r in caplog.records if r.name == probing.log.name]
    version = ".".join(map(str, sys.version_info[:3]))
    assert said == [
        f"python {version} lacks multiprocessing.resource_tracker._resource_tracker's _lock, "
        "_fd and _pid: the resource tracker is left to end after the kernel, which can hold a "
        "kernel's shutdown for a few seconds"
    ]


def test_workers_are_not_forked_where_distributed_lacks_its_preload_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import distributed.utils

    from gpudask_jupyter.cluster import fork_server

    assert fork_server._can_fork() and fork_server._distributed_lets_fork()
    probes.forget()
    monkeypatch.delattr(distributed.utils, "_forkserver_preload_set")
    assert fork_server._can_fork()  # launching looks at Python alone, before distributed
    assert not fork_server._distributed_lets_fork()
    lacks = probes.probe("distributed").lacks()
    assert [lack.name for lack in lacks] == ["distributed.utils._forkserver_preload_set"]
    assert (
        lacks[0]
        .sentence()
        .endswith("a start's workers are spawned, as they were before the fork server")
    )


def test_a_collection_that_cannot_be_rebuilt_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import dask.dataframe as dd
    import pandas as pd

    frame = dd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=1)
    kind = type(frame)
    monkeypatch.setattr(kind, "__dask_postpersist__", lambda self: (None, ("not meta",)))
    with pytest.raises(RuntimeError, match=r"^dask \S+ lacks __dask_postpersist__\(\)'s arguments"):
        compat.persisted_frame(frame, {}, None)


def test_the_traceback_is_shown_through_ipythons_public_call_where_the_private_one_is_gone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shown: list[Any] = []
    own = ["Traceback", "MemoryError: out of memory"]
    shell = types.SimpleNamespace(
        InteractiveTB=types.SimpleNamespace(structured_traceback=lambda *a, **k: list(own)),
        showtraceback=lambda exc_tuple: shown.append(exc_tuple[:2]),
    )
    monkeypatch.delattr(InteractiveShell, "_showtraceback")
    error = MemoryError("out of memory")
    compat.show_structured_traceback(shell, MemoryError, error, [*own, "Your share: 4 GiB"])
    assert shown == [(MemoryError, error)]
    assert capsys.readouterr().err == "Your share: 4 GiB\n"


def test_a_probe_runs_its_checks_once_and_a_library_not_installed_lacks_nothing() -> None:
    ran: list[str] = []

    def needs() -> list[probing.NeedTuple]:
        ran.append("needs")

        def missing() -> None:
            raise AttributeError("gone")

        return [("Thing.gone", missing, "the thing is done another way"), ("Thing.here", int, "-")]

    probe = probing.Probe("python", "stand-in", needs)
    assert [lack.name for lack in probe.lacks()] == ["Thing.gone"]
    assert not probe.has("Thing.gone") and probe.has("Thing.here")
    probe.lacks()
    assert ran.count("needs") <= 3  # the checks ran once; has() reads the names
    with pytest.raises(KeyError):
        probe.has("Thing.unlisted")
    absent = probing.Probe("no-such-distribution-here", "absent", needs)
    assert absent.release() is None and absent.lacks() == ()


def test_sets_finds_what_a_constructor_makes_and_nothing_else() -> None:
    class Made:
        slot = 1

        def __init__(self) -> None:
            self.made = 2
            self.typed: int = 3

    probing.sets(Made, "slot")
    probing.sets(Made, "made")
    probing.sets(Made, "typed")
    with pytest.raises(AttributeError):
        probing.sets(Made, "mad")


def test_an_upper_bound_stands_only_where_a_comment_beside_it_names_the_break() -> None:
    text = PYPROJECT.read_text()
    document = tomllib.loads(text)
    project = document["project"]
    assert "<" not in project["requires-python"]
    requirements = [*document["build-system"]["requires"], *project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        requirements += extra
    lines = text.splitlines()
    bounded = sorted({req for req in requirements if "<" in req})
    for requirement in bounded:
        for i, line in enumerate(lines):
            if f'"{requirement}"' in line:
                beside = "#" in line.split(f'"{requirement}"', 1)[1]
                above = i > 0 and lines[i - 1].strip().startswith("#")
                assert beside or above, (
                    f"{requirement}: an upper bound with no comment on its break"
                )
    assert bounded == ["jupyterlab>=4,<5", "jupyterlab>=4.0.0,<5"]
