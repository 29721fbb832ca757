"""What a start or attach asks for, checked and turned into keywords, without starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudask_jupyter.cluster.options import StartOptions, cluster_keywords, parse_dashboard
from gpudask_jupyter.cluster.target import AttachTarget
from gpudask_jupyter.errors import ClusterError
from gpudask_jupyter.machine.nvml import Device
from gpudask_jupyter.magics import gpudask_magics, parsers


@pytest.mark.parametrize(
    ("asked", "host", "expected"),
    [
        (None, "127.0.0.1", "127.0.0.1:0"),
        (None, "10.0.0.5", "10.0.0.5:0"),  # the default follows --host
        ("none", "127.0.0.1", None),
        ("8787", "10.0.0.5", "127.0.0.1:8787"),
        ("0.0.0.0:8787", "127.0.0.1", "0.0.0.0:8787"),
    ],
)
def test_dashboard_address_is_resolved_in_one_place(
    asked: str | None, host: str, expected: str | None
) -> None:
    opts = StartOptions(host=host, dashboard_address=asked and parse_dashboard(asked))
    assert opts.dashboard() == expected


@pytest.mark.parametrize("text", ["somewhere", "host:port", ""])
def test_bad_dashboard_address(text: str) -> None:
    with pytest.raises(ValueError, match="expected HOST:PORT, PORT or none"):
        parse_dashboard(text)


def test_the_parsers_defaults_are_the_options_defaults() -> None:
    args = parsers.parser_of(parsers.start).parse_argstring("")
    assert parsers.start_options(args) == StartOptions()


def test_cpu_keywords() -> None:
    opts = StartOptions(n_workers=2, memory_limit="1GB")
    keywords = cluster_keywords(opts, [], security="S", dashboard="127.0.0.1:0")
    assert keywords == {
        "preload": ["gpudask_jupyter.cluster.worker_setup"],
        "host": "127.0.0.1",
        "dashboard_address": "127.0.0.1:0",
        "protocol": "tls",
        "security": "S",
        "memory_limit": "1GB",
        "n_workers": 2,
        "threads_per_worker": None,
        "processes": True,
    }


def test_gpu_keywords_bind_one_worker_per_device() -> None:
    devices = [
        Device(1, "GPU-1111", "H200", 2**30),
        Device(2, "MIG-2222-aaaa-bbbb", "H200 MIG", 2**30, mig_index=0),
    ]
    opts = StartOptions(rmm_pool_size=0.5, rmm_async=True, dashboard_address="none", tls=False)
    keywords = cluster_keywords(opts, devices, security=None, dashboard=None)
    assert keywords == {
        "preload": ["gpudask_jupyter.cluster.worker_setup"],
        "host": "127.0.0.1",
        "dashboard_address": None,
        "protocol": "tcp",
        "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"},
        "resources": {"GPU": 1},
        "CUDA_VISIBLE_DEVICES": ["1", "MIG-2222-aaaa-bbbb"],
        "n_workers": 2,
        "threads_per_worker": 1,
        "rmm_async": True,
        "rmm_pool_size": 0.5,
    }


def test_attach_target_adds_the_scheme_and_expands_tls_files(tmp_path: Path) -> None:
    assert AttachTarget.resolve("10.0.0.5:8786", None).address == "tcp://10.0.0.5:8786"
    files = {}
    for role in ("ca", "cert", "key"):
        files[role] = tmp_path / f"{role}.pem"
        files[role].write_text(role)
    target = AttachTarget.resolve(
        "10.0.0.5:8786", None, str(files["ca"]), str(files["cert"]), str(files["key"])
    )
    assert target.address == "tls://10.0.0.5:8786"
    assert target.tls_files() == {
        "ca_file": str(files["ca"]),
        "cert_file": str(files["cert"]),
        "key_file": str(files["key"]),
    }


def test_attach_target_reads_a_scheduler_file(tmp_path: Path) -> None:
    good = tmp_path / "scheduler.json"
    good.write_text('{"address": "tcp://10.0.0.5:8786"}')
    assert AttachTarget.resolve(None, str(good)).address == "tcp://10.0.0.5:8786"
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ClusterError, match="not a Dask scheduler file"):
        AttachTarget.resolve(None, str(bad))


def test_every_subcommand_has_one_handler() -> None:
    assert set(gpudask_magics._handlers) == set(parsers.SUBCOMMANDS.values())


def test_attach_tls_files_are_recorded_as_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry accepts absolute TLS paths only: relative ones would name other files in
    the server's working directory."""
    for role in ("ca", "cert", "key"):
        (tmp_path / f"{role}.pem").write_text(role)
    monkeypatch.chdir(tmp_path)
    target = AttachTarget.resolve("10.0.0.5:8786", None, "ca.pem", "cert.pem", "key.pem")
    files = target.tls_files()
    assert files is not None
    assert files["ca_file"] == str(tmp_path / "ca.pem")
