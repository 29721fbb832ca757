"""``%gpu_cluster <Tab>``: the subcommands, then the options of the subcommand typed, through
IPython's own completer in a real shell; registered by loading the extension, gone after unload."""

from __future__ import annotations

import pytest
from IPython.core.completer import provisionalcompleter

from gpudask_jupyter.magics.parsers import SUBCOMMANDS


def _complete(shell, line: str) -> list[str]:
    """What IPython offers at the end of ``line`` (the terminal's and Jupyter's API)."""
    with provisionalcompleter():
        return [c.text for c in shell.Completer.completions(line, len(line))]


def test_subcommands_after_the_magic(shell) -> None:
    assert _complete(shell, "%gpu_cluster ") == list(SUBCOMMANDS)
    assert _complete(shell, "%gpu_cluster st") == ["start", "status", "stop"]
    assert _complete(shell, "%gpu_cluster sta") == ["start", "status"]
    assert "%store" not in _complete(shell, "%gpu_cluster st")


def test_options_after_a_subcommand(shell) -> None:
    matches = _complete(shell, "%gpu_cluster start --")
    for flag in ("--gpus", "--no-tls", "--resources", "--dashboard-address", "--replace"):
        assert flag in matches
    assert _complete(shell, "%gpu_cluster start --rmm") == ["--rmm-pool-size", "--rmm-async"]
    assert _complete(shell, "%gpu_cluster attach --tls") == [
        "--tls-ca-file",
        "--tls-cert",
        "--tls-key",
    ]
    assert "--replace" not in _complete(shell, "%gpu_cluster start --replace --")


def test_choices_of_an_option(shell) -> None:
    assert _complete(shell, "%gpu_cluster start --protocol ") == ["tcp", "ucx"]
    assert _complete(shell, "%gpu_cluster start --protocol u") == ["ucx"]


def test_without_the_percent_sign(shell) -> None:
    assert _complete(shell, "gpu_cluster sc") == ["scale"]


def test_the_older_complete_api_too(shell) -> None:
    with pytest.warns(PendingDeprecationWarning):
        _, matches = shell.complete("", "%gpu_cluster re", 15)
    assert list(matches) == ["restart"]


@pytest.mark.usefixtures("shell")
def test_unloading_removes_the_completer() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("unload_ext", "gpudask_jupyter")
    try:
        assert not any(
            "gpudask" in getattr(m, "__module__", "") for m in ip.Completer.custom_matchers
        )
        assert "start" not in _complete(ip, "%gpu_cluster st")
    finally:
        ip.run_line_magic("load_ext", "gpudask_jupyter")
