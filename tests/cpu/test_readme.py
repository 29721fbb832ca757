"""The README documents every magic and option, and its options table is the code's."""

from __future__ import annotations

from pathlib import Path

from gpudask_jupyter import config
from gpudask_jupyter.magics.parsers import SUBCOMMANDS

README = (Path(__file__).parents[2] / "README.md").read_text()


def test_options_table_is_generated_from_config() -> None:
    start = README.index("<!-- options table")
    body = README[README.index("\n", start) + 1 : README.index("<!-- end of options table -->")]
    assert body.strip() == config.markdown_table().strip()


def test_every_subcommand_has_an_example() -> None:
    for sub in SUBCOMMANDS:
        assert f"%gpu_cluster {sub}" in README, sub


def test_every_start_flag_is_documented() -> None:
    parser = SUBCOMMANDS["start"].parser  # type: ignore[attr-defined]
    for action in parser._actions:
        for flag in action.option_strings:
            assert f"`{flag}" in README, flag


def test_two_setup_commands_exist() -> None:
    root = Path(__file__).parents[2]
    for script in ("scripts/lab.sh", "scripts/test.sh"):
        assert f"./{script}" in README
        assert (root / script).stat().st_mode & 0o111
    assert "./scripts/test.sh" in (root / ".ci/run").read_text()
