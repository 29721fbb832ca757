"""The public Python API is documented as the field does it (numpydoc), and its examples run.

``help()`` and IPython's ``?`` show each public object's Parameters, Returns, Raises and
Examples; every example is run by :mod:`doctest` in a namespace of its own (an example imports
what it uses), and each object has at least one that really runs, not only skipped ones. The
examples show a machine without a GPU; those that need a GPU or a cluster are skipped.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pydoc
import re
from collections.abc import Callable
from typing import Any

import pytest

from gpudask_jupyter.machine import availability
from gpudask_jupyter.widget import STATIC

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
MODULES = (
    "gpudask_jupyter.api.conversions",
    "gpudask_jupyter.widget.panel",
    "gpudask_jupyter.cluster.session",
)
SESSION = "gpudask_jupyter.cluster.session.ClusterSession"
KERNEL = "gpudask_jupyter.cluster.session.KernelCluster"

#: each documented object (by its qualified name) and the numpydoc sections it must have
SECTIONS: dict[str, tuple[str, ...]] = {
    "gpudask_jupyter.api.conversions.to_gpu": ("Parameters", "Returns", "Raises", "Examples"),
    "gpudask_jupyter.api.conversions.to_cpu": ("Parameters", "Returns", "Raises", "Examples"),
    "gpudask_jupyter.widget.panel.Panel": ("Parameters", "Attributes", "Raises", "Examples"),
    SESSION: ("Parameters", "Attributes", "Examples"),
    f"{SESSION}.start": ("Parameters", "Returns", "Raises", "Examples"),
    f"{SESSION}.attach": ("Parameters", "Returns", "Raises", "Examples"),
    f"{SESSION}.join": ("Parameters", "Returns", "Raises", "Examples"),
    f"{SESSION}.workers": ("Returns", "Raises", "Examples"),
    f"{SESSION}.scale": ("Parameters", "Raises", "Examples"),
    f"{SESSION}.adapt": ("Parameters", "Raises", "Examples"),
    f"{SESSION}.restart": ("Raises", "Examples"),
    f"{SESSION}.leave": ("Parameters", "Returns", "Raises", "Examples"),
    f"{SESSION}.close": ("Parameters", "Examples"),
    KERNEL: ("Examples",),
    f"{KERNEL}.require": ("Examples",),
}


def _resolve(name: str) -> Any:
    """The object called ``name`` (``module.attribute[.attribute]``)."""
    for module_name in MODULES:
        if name.startswith(module_name + "."):
            obj: Any = importlib.import_module(module_name)
            for part in name[len(module_name) + 1 :].split("."):
                obj = getattr(obj, part)
            return obj
    raise LookupError(name)


def _own_text(name: str) -> str:
    """What ``help()`` prints for ``name``; for a class, only down to its members, so that a
    section must be the class's own, not one of a method's."""
    obj = _resolve(name)
    rendered = pydoc.render_doc(obj, renderer=pydoc.plaintext)
    return rendered.split("\n |  Method", 1)[0] if isinstance(obj, type) else rendered


def _has_section(text: str, title: str) -> bool:
    """A numpydoc section header: its title, and under it a rule of as many dashes."""
    rule = "-" * len(title)
    return re.search(rf"^[ |]*{title}\n[ |]*{rule}$", text, re.MULTILINE) is not None


def _run_examples(obj: Any, name: str) -> tuple[int, int, str]:
    """Run the examples of ``obj``'s own docstring, each in a fresh namespace: (examples run,
    examples skipped, the report of any failure)."""
    tests = doctest.DocTestFinder(recurse=False).find(obj, name, globs={})
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = io.StringIO()
    ran = total = failed = 0
    for test in tests:
        total += len(test.examples)
        result = runner.run(test, out=report.write)
        # from Python 3.13 on, what was skipped counts as attempted and is told apart
        ran += result.attempted - getattr(result, "skipped", 0)
        failed += result.failed
    return ran, total - ran, report.getvalue() if failed else ""


def _needs(name: str) -> str | None:
    """Why ``name``'s examples cannot run here, or None."""
    if name.endswith(".to_gpu") and availability.reason() is None:
        return "to_gpu's examples show a machine without a usable GPU, and this one has one"
    if name.endswith(".Panel") and not STATIC.exists():
        return "front end not built (npm run build)"
    return None


@pytest.mark.filterwarnings("ignore:Widget.* is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name", list(SECTIONS))
def test_help_shows_the_numpydoc_sections(name: str) -> None:
    text = _own_text(name)
    missing = [title for title in SECTIONS[name] if not _has_section(text, title)]
    assert not missing, f"help({name}) lacks {missing}:\n{text}"


@pytest.mark.filterwarnings("ignore::gpudask_jupyter.convert.GpuUnavailableWarning")
@pytest.mark.parametrize("name", list(SECTIONS))
def test_every_example_runs_as_written(name: str) -> None:
    why = _needs(name)
    if why is not None:
        pytest.skip(why)
    ran, skipped, failures = _run_examples(_resolve(name), name)
    assert not failures, failures
    assert ran >= 1, f"{name}: none of its {skipped} example(s) runs (all skipped)"


def test_no_example_of_these_modules_goes_unchecked() -> None:
    """Every docstring with examples in the public objects' modules is one of those above."""
    with_examples = {
        test.name
        for module_name in MODULES
        for test in doctest.DocTestFinder().find(importlib.import_module(module_name))
        if test.examples
    }
    assert with_examples <= set(SECTIONS), with_examples - set(SECTIONS)


def _wrong() -> None:
    """A docstring whose example is wrong.

    >>> 1 + 1
    3
    """


def _all_skipped() -> None:
    """A docstring whose only example is skipped.

    >>> 1 + 1  # doctest: +SKIP
    2
    """


@pytest.mark.parametrize(
    ("function", "check"),
    [
        (_wrong, lambda ran, skipped, failures: ran == 1 and "Expected:\n    3" in failures),
        (_all_skipped, lambda ran, skipped, failures: (ran, skipped, failures) == (0, 1, "")),
    ],
)
def test_the_check_sees_a_wrong_or_skipped_example(
    function: Callable[[], None], check: Callable[[int, int, str], bool]
) -> None:
    assert check(*_run_examples(function, function.__name__))
