"""Rewrite the README's options table from gpudask_jupyter/config.py (checked by a test)."""

from __future__ import annotations

from pathlib import Path

from gpudask_jupyter import config

START = (
    "<!-- options table: generated from gpudask_jupyter/config.py, "
    "kept equal by tests/cpu/test_readme.py -->\n"
)
END = "<!-- end of options table -->"


def main() -> None:
    readme = Path(__file__).parents[1] / "README.md"
    text = readme.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(head + START + config.markdown_table() + "\n" + END + tail)


if __name__ == "__main__":
    main()
