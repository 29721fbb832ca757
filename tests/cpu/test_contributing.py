"""CONTRIBUTING.md, followed once: every path it names exists, and each recipe's code, put where
the recipe says, works as the recipe promises. A recipe that drifts from the code fails here (one
once told converters to pass ``unavailable=reason("cudf")``, a string where a function is
called: the first ``%%to_gpu`` raised ``TypeError``)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from gpudask_jupyter.convert import find, register, unregister
from gpudask_jupyter.convert.converter import Converter

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "CONTRIBUTING.md").read_text()
#: what a recipe asks the reader to create: it cannot exist yet
NEW_FILES = {"gpudask_jupyter/convert/polars.py"}


def recipe(name: str) -> str:
    """The code block after ``<!-- recipe: name -->``, without the list item's indentation."""
    match = re.search(
        rf"^( *)<!-- recipe: {re.escape(name)} -->\n\1```python\n(.*?)\n\1```", TEXT, re.M | re.S
    )
    assert match, f"CONTRIBUTING.md has no recipe {name!r}"
    indent = len(match.group(1))
    return "\n".join(line[indent:] for line in match.group(2).splitlines()) + "\n"


def _run(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter (a recipe changes process-wide tables); it prints one
    JSON line last."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_every_path_it_names_exists() -> None:
    named = set(re.findall(r"`((?:gpudask_jupyter|labextension|scripts|tests)/[\w./-]+)`", TEXT))
    assert len(named) > 20
    missing = sorted(p for p in named - NEW_FILES if not (ROOT / p.rstrip("/")).exists())
    assert missing == []


def test_the_folder_table_names_every_folder() -> None:
    folders = {
        str(init.parent.relative_to(ROOT)) + "/"
        for init in (ROOT / "gpudask_jupyter").rglob("__init__.py")
        if init.parent != ROOT / "gpudask_jupyter"
    }
    table = set(re.findall(r"^\| `(gpudask_jupyter/[\w/]+/)` \|", TEXT, re.M))
    assert table == folders


def test_the_chart_recipe_reaches_the_typescript(tmp_path: Path, monkeypatch) -> None:
    source = (ROOT / "gpudask_jupyter" / "schema" / "frame.py").read_text()
    anchor = "\n    def values(self) -> DeviceValues:"
    assert anchor in source, "DeviceReading changed: update the chart recipe"
    changed = source.replace(anchor, "\n" + recipe("chart") + anchor, 1)
    path = tmp_path / "frame.py"
    path.write_text(changed)
    spec = importlib.util.spec_from_file_location("gpudask_jupyter.schema.recipe_frame", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # a dataclass looks its module up
    spec.loader.exec_module(module)
    assert module.SAMPLE_FIELDS[-1] == "nvlink_tx"
    generator = _script("generate_ts")
    text = generator.render("gpudask_jupyter.schema.frame", module)
    assert "  'nvlink_tx' // Bytes/s sent over NVLink (sampled every few seconds only)." in text
    assert "  nvlink_tx: number | null\n];" in text


def test_the_converter_recipe_leaves_the_data_and_says_why(shell, monkeypatch, capsys) -> None:
    namespace: dict[str, object] = {}
    exec(recipe("converter"), namespace)
    to_cudf, to_polars = namespace["POLARS_TO_CUDF"], namespace["CUDF_TO_POLARS"]
    assert isinstance(to_cudf, Converter) and isinstance(to_polars, Converter)
    polars = types.ModuleType("polars")
    polars.DataFrame = type("DataFrame", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "polars", polars)
    register(to_cudf)
    register(to_polars)
    try:
        frame = polars.DataFrame()  # type: ignore[attr-defined]
        assert find(frame, "gpu") is to_cudf
        why = to_cudf.unavailable()
        if why is None:
            pytest.skip("cuDF and polars are both here: the recipe's conversion would run")
        shell.user_ns["pl_frame"] = frame
        shell.run_cell_magic("to_gpu", "pl_frame", "pl_frame = pl_frame")
        assert shell.user_ns["pl_frame"] is frame  # left where it was
        assert why in capsys.readouterr().err  # and the reason said once
    finally:
        unregister(to_cudf)
        unregister(to_polars)


def test_the_subcommand_recipe_adds_a_working_subcommand() -> None:
    parser_block, handler_block = recipe("subcommand parser"), recipe("subcommand handler")
    code = textwrap.dedent(
        f"""
        import json
        from IPython.core.error import UsageError
        from IPython.core.interactiveshell import InteractiveShell
        from IPython.utils.capture import capture_output
        from gpudask_jupyter.magics import completion, gpudask_magics, parsers

        exec({parser_block!r}, vars(parsers))
        exec({handler_block!r}, vars(gpudask_magics))
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "gpudask_jupyter")
        out = {{"offered": "workers" in completion.candidates("%gpu_cluster wor")}}
        with capture_output() as help_text:
            ip.run_line_magic("gpu_cluster", "workers --help")
        out["help"] = help_text.stdout
        for line in ("workers --limit x", "workers"):
            try:
                ip.run_line_magic("gpu_cluster", line)
            except UsageError as err:
                out[line] = str(err)
        ip.run_line_magic("gpu_cluster", "start --n-workers 2")
        with capture_output() as listed:
            ip.run_line_magic("gpu_cluster", "workers --limit 1")
        ip.run_line_magic("gpu_cluster", "stop")
        out["listed"] = listed.stdout.split()
        print(json.dumps(out))
        """
    )
    out = _run(code)
    assert out["offered"] is True
    assert "List the workers of this kernel's cluster, by address." in str(out["help"])
    assert "--limit" in str(out["workers --limit x"])
    assert "no cluster" in str(out["workers"]).lower()
    listed = out["listed"]
    assert (
        isinstance(listed, list) and len(listed) == 1 and listed[0].startswith(("tls://", "tcp://"))
    )


def test_the_option_recipe_gives_a_documented_settable_option() -> None:
    code = textwrap.dedent(
        f"""
        import json, os
        os.environ["DASK_GPUDASK__PANEL_THEME"] = "light"
        from gpudask_jupyter import config
        from gpudask_jupyter.config import Option

        option = eval({recipe("option")!r}, vars(config))
        assert isinstance(option, Option)
        config.OPTIONS[option.name] = option
        from IPython.core.interactiveshell import InteractiveShell

        out = {{"from dask": config.get("panel-theme")}}
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "gpudask_jupyter")
        ip.run_line_magic("config", 'GpuDaskMagics.panel_theme = "dark"')
        out["from %config"] = config.get("panel-theme")
        out["readme row"] = [r for r in config.markdown_table().splitlines() if "panel-theme" in r]
        print(json.dumps(out))
        """
    )
    out = _run(code)
    assert out["from dask"] == "light"
    assert out["from %config"] == "dark"
    assert out["readme row"] == [
        "| `panel-theme` | `panel_theme` | `auto` | The panel's colours: `auto` follows "
        "JupyterLab's theme; `light` or `dark` fix them. |"
    ]


def _script(name: str) -> types.ModuleType:
    path = ROOT / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
