"""The palette of task prefixes and GPUs against JupyterLab's own theme backgrounds, measured with
a colour library (coloraide): WCAG contrast and CIEDE2000 colour differences."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest

from gpudask_jupyter.schema import frame

coloraide = pytest.importorskip("coloraide")
Color = coloraide.Color

_spec = importlib.util.spec_from_file_location(
    "palette_script", Path(__file__).resolve().parents[2] / "scripts" / "palette.py"
)
assert _spec is not None and _spec.loader is not None
palette_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(palette_script)

BACKGROUNDS = {theme: palette_script.theme_background(theme) for theme in ("light", "dark")}
#: colour differences (CIEDE2000) a reader tells apart side by side, and at a glance
APART = 14.0
FAR = 20.0
#: notebook 04's pipeline: the prefixes one workshop computation shows at once
PIPELINE = 17


def _delta(a: str, b: str) -> float:
    return float(Color(a).delta_e(Color(b), method="2000"))


def _smallest(colors: list[str]) -> float:
    return min(_delta(a, b) for a, b in itertools.combinations(colors, 2))


def test_the_palette_is_the_scripts() -> None:
    fixed = [*frame.ACTION_COLORS.values(), frame.ERROR_COLOR]
    assert palette_script.make_palette(fixed) == frame.PALETTE


@pytest.mark.parametrize("theme", sorted(BACKGROUNDS))
def test_every_colour_stands_out_from_the_background(theme: str) -> None:
    background = Color(BACKGROUNDS[theme])
    for color in frame.PALETTE:
        ratio = Color(color).contrast(background)
        assert ratio >= 3.0, f"{color} on {theme} {background}: {ratio:.2f}:1"


def test_a_pipelines_prefixes_are_told_apart() -> None:
    """Twelve colours cycled gave 17 prefixes five pairs of one colour; now every pair differs."""
    assert len(set(frame.PALETTE)) == len(frame.PALETTE) >= 20
    assert _smallest(frame.PALETTE) >= APART
    assert _smallest(frame.PALETTE[:PIPELINE]) >= 15.0
    # the first few prefixes of any computation are far apart
    assert _smallest(frame.PALETTE[:6]) >= FAR


def test_the_first_colours_are_the_farthest() -> None:
    """Each next colour is as far as it can be from those before: the smallest difference of
    the first n never grows with n."""
    smallest = [_smallest(frame.PALETTE[:n]) for n in range(2, len(frame.PALETTE) + 1)]
    assert smallest == sorted(smallest, reverse=True)


def test_no_prefix_colour_looks_like_a_fixed_one_or_grey() -> None:
    fixed = {*frame.ACTION_COLORS.values(), frame.ERROR_COLOR}
    for color in frame.PALETTE:
        assert Color(color).convert("lch")["chroma"] >= palette_script.MIN_CHROMA, color
        for other in fixed:
            assert _delta(color, other) >= 15.0, (color, other)


def test_dasks_own_colours_would_fail() -> None:
    """Why the view does not use distributed's colour_of: its Viridis ends fail one theme each."""
    dark_purple, yellow = "#440154", "#FDE724"
    assert Color(dark_purple).contrast(Color(BACKGROUNDS["dark"])) < 3
    assert Color(yellow).contrast(Color(BACKGROUNDS["light"])) < 3


@pytest.mark.parametrize("theme", sorted(BACKGROUNDS))
def test_other_stands_out_and_apart_from_every_named_colour(theme: str) -> None:
    """The colour of prefixes beyond the palette: seen, and never taken for a named one."""
    assert Color(frame.OTHER_COLOR).contrast(Color(BACKGROUNDS[theme])) >= 3.0
    named = [*frame.PALETTE, *frame.ACTION_COLORS.values(), frame.ERROR_COLOR]
    assert min(_delta(frame.OTHER_COLOR, c) for c in named) >= APART
