"""Bad input to %gpu_cluster is a UsageError with the usage line, and starts nothing."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from support import spawned_workers, this_kernel


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
        (
            "scale",
            "scale needs a number of workers (or --adapt MIN MAX)",
            "usage: %gpu_cluster scale",
        ),
        ("attach --timeout x tcp://a:1", "not a duration", "usage: %gpu_cluster attach"),
        ("status now", "unrecognized arguments: now", "usage: %gpu_cluster status"),
        ("start --memory-limit 1e400", "'1e400' is not a finite size", "usage: %gpu_cluster"),
        ("start --memory-limit 1e30GB", "larger than any machine's memory", "usage: %gpu"),
        ("start --memory-limit 1e400GB", "a size like 16GB", "usage: %gpu_cluster start"),
        ("start --rmm-pool-size inf", "not a finite size", "usage: %gpu_cluster start"),
        ("start --device-memory-limit nan", "not a finite size", "usage: %gpu_cluster start"),
        ("start --dashboard-address 99999", "port 99999 is out of range", "usage: %gpu_cluster"),
        (
            "start --dashboard-address 0.0.0.0:70000",
            "port 70000 is out of range: ports are 0 to 65535",
            "usage: %gpu_cluster start",
        ),
        ("start --resources GPU", "expected NAME=AMOUNT (like GPU=1)", "usage: %gpu_cluster"),
        ("start --resources GPU=lots", "GPU: expected a number", "usage: %gpu_cluster start"),
        ("start --resources GPU=nan", "must be a positive number", "usage: %gpu_cluster"),
        ("start --resources GPU=1,GPU=2", "GPU is given twice", "usage: %gpu_cluster start"),
        ("start --resources 9x=1", "expected NAME=AMOUNT", "usage: %gpu_cluster start"),
        ("panel --interval nan", "not a duration", "usage: %gpu_cluster panel"),
        ("panel --interval inf", "not a duration", "usage: %gpu_cluster panel"),
        ("panel --history 1e999", "not a duration", "usage: %gpu_cluster panel"),
        ("attach --timeout nan tcp://a:1", "not a duration", "usage: %gpu_cluster attach"),
        ("start --host 'x", "cannot split the arguments (No closing quotation)", "usage: %gpu"),
        ('attach "tcp://a:1', "No closing quotation", "usage: %gpu_cluster attach"),
        ("status 'v", "No closing quotation", "usage: %gpu_cluster status"),
        ("scale '2", "No closing quotation", "usage: %gpu_cluster scale"),
        ("restart 'x", "No closing quotation", "usage: %gpu_cluster restart"),
        ("stop 'x", "No closing quotation", "usage: %gpu_cluster stop"),
        ("panel --interval '1", "No closing quotation", "usage: %gpu_cluster panel"),
        ("config '", "No closing quotation", "usage: %gpu_cluster config"),
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
    assert this_kernel().current() is None
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
    assert this_kernel().current() is None
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


@pytest.mark.parametrize("magic", ["to_gpu", "to_cpu"])
@pytest.mark.parametrize("line", ["'x", 'df "y', "--exclude 'a"])
def test_an_unbalanced_quote_in_a_cell_magic_is_a_usage_error(shell, magic: str, line: str) -> None:
    with pytest.raises(UsageError, match=r"No closing quotation.*\n.*usage: %"):
        shell.run_cell_magic(magic, line, "never_run = 1")
    assert "never_run" not in shell.user_ns


def test_cpu_workers_are_bounded_by_the_cores_unless_asked(shell) -> None:
    from gpudask_jupyter.cluster.options import usable_cores
    from gpudask_jupyter.machine import nvml

    if nvml.status().available:
        pytest.skip("the bound on CPU workers applies to the CPU fallback; this machine has a GPU")
    cores = usable_cores()
    with pytest.raises(UsageError, match=f"--n-workers 100000: this kernel may use {cores} core"):
        shell.run_line_magic("gpu_cluster", "start --n-workers 100000")
    assert this_kernel().current() is None and spawned_workers() == []
    shell.run_line_magic(
        "gpu_cluster", f"start --n-workers {cores + 1} --oversubscribe --memory-limit 1GB"
    )
    assert len(spawned_workers()) == cores + 1
    with pytest.raises(UsageError, match=f"scale 100000: this kernel may use {cores} core"):
        shell.run_line_magic("gpu_cluster", "scale 100000")  # as many as the start asked, no more
    shell.run_line_magic("gpu_cluster", "scale 1")
    shell.run_line_magic("gpu_cluster", f"scale {cores + 1}")
    assert len(spawned_workers()) == cores + 1
