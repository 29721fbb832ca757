"""Bad input to %gpu_cluster is a UsageError with the usage line, and starts nothing."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from support import spawned_workers

from gpudask_jupyter import cluster


@pytest.mark.parametrize(
    ("line", "message", "usage"),
    [
        ("frobnicate", "unknown subcommand 'frobnicate'", "usage: %gpu_cluster {start,attach"),
        ("start --bogus", "unrecognized arguments: --bogus", "usage: %gpu_cluster start"),
        (
            "start --n-workers -3",
            "--n-workers: must be 1 or more, got -3",
            "usage: %gpu_cluster start",
        ),
        (
            "start --n-workers two",
            "expected a whole number, got 'two'",
            "usage: %gpu_cluster start",
        ),
        ("start --gpus x,y", "'x' is neither a GPU index", "usage: %gpu_cluster start"),
        ("start --gpus 0,,1", "empty entry", "usage: %gpu_cluster start"),
        ("start --gpus 1,1", "listed twice", "usage: %gpu_cluster start"),
        ("start --memory-limit lots", "a size like 16GB", "usage: %gpu_cluster start"),
        ("start --rmm-pool-size -1", "must be positive", "usage: %gpu_cluster start"),
        (
            "start --protocol carrier-pigeon",
            "invalid choice: 'carrier-pigeon'",
            "usage: %gpu_cluster start",
        ),
        ("start --dashboard-address somewhere", "expected HOST:PORT", "usage: %gpu_cluster start"),
        ("start --timeout soon", "not a duration", "usage: %gpu_cluster start"),
        ("scale many", "expected a number of workers, got 'many'", "usage: %gpu_cluster scale"),
        ("scale -1", "must be 0 or more", "usage: %gpu_cluster scale"),
        ("scale", "the following arguments are required: n", "usage: %gpu_cluster scale"),
        ("attach --timeout x tcp://a:1", "not a duration", "usage: %gpu_cluster attach"),
        ("status now", "unrecognized arguments: now", "usage: %gpu_cluster status"),
    ],
)
def test_bad_input_is_a_usage_error_and_starts_nothing(
    shell, line: str, message: str, usage: str
) -> None:
    with pytest.raises(UsageError) as info:
        shell.run_line_magic("gpu_cluster", line)
    text = str(info.value)
    assert message in text
    assert usage in text
    assert cluster.current() is None
    assert spawned_workers() == []


@pytest.mark.parametrize("line", ["scale 2", "restart"])
def test_management_without_a_cluster_says_how_to_start(shell, line: str) -> None:
    with pytest.raises(
        UsageError, match="this kernel has no cluster; start one with %gpu_cluster start"
    ):
        shell.run_line_magic("gpu_cluster", line)


def test_help_of_the_magic_lists_every_subcommand(shell) -> None:
    doc = shell.find_line_magic("gpu_cluster").__doc__
    for sub in ["start", "attach", "status", "scale", "restart", "stop", "config"]:
        assert f"%gpu_cluster {sub}" in doc
    assert "--rmm-pool-size" in doc and "--scheduler-file" in doc
    info = shell.object_inspect("%gpu_cluster")
    assert "client = %gpu_cluster start" in info["docstring"]


def test_subcommand_help_prints_and_does_nothing(shell, capsys) -> None:
    assert shell.run_line_magic("gpu_cluster", "start --help") is None
    out = capsys.readouterr().out
    assert "%gpu_cluster start" in out and "--device-memory-limit" in out
    assert cluster.current() is None
    shell.run_line_magic("gpu_cluster", "attach -h")
    assert "--tls-ca-file" in capsys.readouterr().out


def test_status_without_cluster_explains(shell, capsys) -> None:
    shell.run_line_magic("gpu_cluster", "status")
    out = capsys.readouterr().out
    assert "No cluster in this kernel" in out
    assert "%gpu_cluster start" in out


def test_stop_without_cluster_is_harmless(shell, capsys) -> None:
    shell.run_line_magic("gpu_cluster", "stop")
    assert "No cluster to stop." in capsys.readouterr().out


def test_config_shows_options_and_accepts_ipython_config(shell, capsys, caplog) -> None:
    shell.run_line_magic("config", "GpuDaskMagics.pinned_buffer = '64MiB'")
    shell.run_line_magic("gpu_cluster", "config")
    out = capsys.readouterr().out
    assert "pinned-buffer" in out and "64 MiB" in out
    shell.run_line_magic("config", "GpuDaskMagics.pinned_buffer = 'huge'")
    assert "not a size: 'huge'" in caplog.text
    shell.run_line_magic("gpu_cluster", "config")
    assert "64 MiB" in capsys.readouterr().out
