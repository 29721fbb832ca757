"""The palette of task prefixes and GPUs against JupyterLab's own theme backgrounds, measured with
a colour library (coloraide): WCAG contrast and CIEDE2000 colour differences."""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import pytest

from gpudask_jupyter.schema import frame

coloraide = pytest.importorskip("coloraide")
Color = coloraide.Color

#: colour differences (CIEDE2000) a reader tells apart at a glance, and far apart
APART = 15.0
FAR = 20.0


def _theme_background(theme: str) -> str:
    """``--jp-layout-color1`` (the panel's background) of an installed JupyterLab theme."""
    css = (
        Path(sys.prefix) / "share/jupyter/lab/themes/@jupyterlab" / f"theme-{theme}-extension"
    ) / "index.css"
    text = css.read_text()
    # "white", or "var(--md-grey-900,#212121)": the colour, or a variable's fallback colour
    match = re.search(r"--jp-layout-color1:\s*(?:var\([^,]+,\s*)?([#a-zA-Z0-9]+)", text)
    assert match, f"no --jp-layout-color1 in {css}"
    return match.group(1)


BACKGROUNDS = {theme: _theme_background(theme) for theme in ("light", "dark")}


def _delta(a: str, b: str) -> float:
    return float(Color(a).delta_e(Color(b), method="2000"))


@pytest.mark.parametrize("theme", sorted(BACKGROUNDS))
def test_every_colour_stands_out_from_the_background(theme: str) -> None:
    background = Color(BACKGROUNDS[theme])
    for color in frame.PALETTE:
        ratio = Color(color).contrast(background)
        assert ratio >= 3.0, f"{color} on {theme} {background}: {ratio:.2f}:1"


def test_the_colours_are_told_apart_and_neighbours_far_apart() -> None:
    assert len(set(frame.PALETTE)) == len(frame.PALETTE) >= 10
    for a, b in itertools.combinations(frame.PALETTE, 2):
        assert _delta(a, b) >= APART, (a, b)
    n = len(frame.PALETTE)
    for i in range(n):  # the prefixes that appear one after the other, cycling
        for step in (1, 2, 3):
            a, b = frame.PALETTE[i], frame.PALETTE[(i + step) % n]
            assert _delta(a, b) >= FAR, (a, b)


def test_no_prefix_colour_looks_like_a_fixed_one() -> None:
    fixed = {*frame.ACTION_COLORS.values(), frame.ERROR_COLOR}
    for color in frame.PALETTE:
        for other in fixed:
            assert _delta(color, other) >= APART, (color, other)


def test_dasks_own_colours_would_fail() -> None:
    """Why the view does not use distributed's colour_of: its Viridis ends fail one theme each."""
    dark_purple, yellow = "#440154", "#FDE724"
    assert Color(dark_purple).contrast(Color(BACKGROUNDS["dark"])) < 3
    assert Color(yellow).contrast(Color(BACKGROUNDS["light"])) < 3
