"""Looking up a converter never fails the cell: an object whose ``__class__`` raises (a proxy,
a half-built object) simply has no converter, in the lookup and in ``%%to_gpu``."""

from __future__ import annotations

import sys
import types

import pytest

from gpudask_jupyter.convert import find
from gpudask_jupyter.convert.converter import module_class


class Hostile:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        raise RuntimeError("no class for you")


@pytest.fixture
def fake_module() -> types.ModuleType:
    """A module by a name the built-in converters look for, so that their tests really run."""
    module = types.ModuleType("gpudask_fake_lib")

    class Frame:
        pass

    module.Frame = Frame  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def test_isinstance_really_raises_for_it() -> None:
    class Other:
        pass

    with pytest.raises(RuntimeError):
        isinstance(Hostile(), Other)


def test_module_class_says_no(fake_module: types.ModuleType) -> None:
    matches = module_class("gpudask_fake_lib", "Frame")
    assert matches(fake_module.Frame())
    assert not matches(Hostile())


def test_find_returns_no_converter(caplog: pytest.LogCaptureFixture) -> None:
    import numpy  # noqa: F401  - the built-in converters now have classes to test against

    with caplog.at_level("DEBUG", logger="gpudask_jupyter.convert"):
        assert find(Hostile(), "gpu") is None
        assert find(Hostile(), "cpu") is None
    assert "raised" in caplog.text  # logged for whoever debugs, not shown to the user


def test_to_gpu_leaves_it_alone(shell) -> None:
    import numpy  # noqa: F401  - so that the NumPy converter really tests the object

    shell.user_ns["Hostile"] = Hostile
    try:
        shell.run_cell_magic("to_gpu", "-q", "h = Hostile()\nl = [1]")
        assert type(shell.user_ns["h"]) is Hostile  # no converter, no error: the name stays
    finally:
        for name in ("Hostile", "h", "l"):  # the shell outlives the test
            shell.user_ns.pop(name, None)
