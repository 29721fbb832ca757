"""Make the task prefixes' palette (``PALETTE`` in gpudask_jupyter/schema/frame.py), with a colour
library (coloraide) measuring every colour.

A pipeline of a workshop notebook has 17 task prefixes; twelve colours cycled, so its two most
common prefixes shared one teal. The palette is as long as :data:`SIZE` and ordered so that
every first n colours are as far apart as the colours allowed can be: each next colour is the
allowed one farthest (CIEDE2000) from all before it. The n-th prefix the scheduler saw takes
the n-th colour, so a pipeline of up to :data:`SIZE` prefixes shows no colour twice.

A colour is allowed when a reader sees it on both JupyterLab themes (3:1 contrast against the
light and the dark background: WCAG AA for graphics), it is not near a fixed colour
(transfer, spill, deserialise, error) and it is not greyish (chroma at least
:data:`MIN_CHROMA`). The candidates are the sRGB colours of a grid of :data:`STEP`.

    python scripts/palette.py      # prints PALETTE; tests/cpu/test_palette.py checks it is current
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from coloraide import Color

SIZE = 20
FIRST = "#3f69d3"
"""The first colour (the first prefix, the first GPU): the blue the views always had."""
MIN_CONTRAST = 3.05
"""3:1 with a margin for rounding to #rrggbb."""
MIN_CHROMA = 30.0
NEAR_FIXED = 15.0
"""CIEDE2000 distance every colour keeps from a fixed action colour."""
STEP = 8


def theme_background(theme: str) -> str:
    """``--jp-layout-color1`` (the panel's background) of the installed JupyterLab theme."""
    css = (
        Path(sys.prefix) / "share/jupyter/lab/themes/@jupyterlab" / f"theme-{theme}-extension"
    ) / "index.css"
    text = css.read_text()
    # "white", or "var(--md-grey-900,#212121)": the colour, or a variable's fallback colour
    match = re.search(r"--jp-layout-color1:\s*(?:var\([^,]+,\s*)?([#a-zA-Z0-9]+)", text)
    if match is None:
        raise LookupError(f"no --jp-layout-color1 in {css}")
    return match.group(1)


def delta(a: Color, b: Color) -> float:
    return float(a.delta_e(b, method="2000"))


def allowed(color: Color, backgrounds: list[Color], fixed: list[Color]) -> bool:
    return (
        all(color.contrast(b) >= MIN_CONTRAST for b in backgrounds)
        and color.convert("lch")["chroma"] >= MIN_CHROMA
        and all(delta(color, f) >= NEAR_FIXED for f in fixed)
    )


def make_palette(fixed_colors: list[str]) -> list[str]:
    """The palette: FIRST, then each allowed colour farthest from those chosen before it."""
    backgrounds = [Color(theme_background(t)) for t in ("light", "dark")]
    fixed = [Color(c) for c in fixed_colors]
    levels = [v / 255 for v in range(0, 256, STEP)]
    candidates = [
        c
        for r in levels
        for g in levels
        for b in levels
        if allowed(c := Color("srgb", [r, g, b]), backgrounds, fixed)
    ]
    chosen = [Color(FIRST)]
    nearest = [delta(c, chosen[0]) for c in candidates]
    while len(chosen) < SIZE:
        best = max(range(len(candidates)), key=nearest.__getitem__)
        chosen.append(candidates[best])
        new = candidates[best]
        nearest = [min(d, delta(c, new)) for c, d in zip(candidates, nearest, strict=True)]
    return [c.to_string(hex=True) for c in chosen]


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gpudask_jupyter.schema.frame import ACTION_COLORS, ERROR_COLOR

    palette = make_palette([*ACTION_COLORS.values(), ERROR_COLOR])
    print("PALETTE: list[str] = [")
    for color in palette:
        print(f'    "{color}",')
    print("]")


if __name__ == "__main__":
    main()
