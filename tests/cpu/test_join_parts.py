"""The parts of ``join`` that need no scheduler: its parser, help and completion, the workers'
keywords, the registry's list of our workers, the words of ``leave``."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from IPython.core.completer import provisionalcompleter

from gpudask_jupyter import registry
from gpudask_jupyter.cluster.join import Retirement
from gpudask_jupyter.cluster.options import LEAVE_TIMEOUT, StartOptions, join_keywords
from gpudask_jupyter.cluster.target import AttachTarget
from gpudask_jupyter.machine import processes
from gpudask_jupyter.machine.nvml import Device
from gpudask_jupyter.magics import parsers


def _complete(shell, line: str) -> list[str]:
    with provisionalcompleter():
        return [c.text for c in shell.Completer.completions(line, len(line))]


def test_completion_knows_join_and_leave(shell) -> None:
    assert {"join", "leave"} <= set(_complete(shell, "%gpu_cluster "))
    assert _complete(shell, "%gpu_cluster j") == ["join"]
    assert _complete(shell, "%gpu_cluster le") == ["leave"]
    options = _complete(shell, "%gpu_cluster join --")
    for flag in (
        "--scheduler-file",
        "--gpus",
        "--n-workers",
        "--threads-per-worker",
        "--memory-limit",
        "--device-memory-limit",
        "--rmm-pool-size",
        "--rmm-async",
        "--resources",
        "--tls-ca-file",
        "--tls-cert",
        "--tls-key",
        "--require-gpu",
        "--timeout",
        "--replace",
    ):
        assert flag in options, flag
    assert "--no-tls" not in options and "--host" not in options  # the scheduler decides those
    assert _complete(shell, "%gpu_cluster leave --") == ["--timeout"]


def test_help_shows_join_and_leave(shell, capsys) -> None:
    doc = shell.find_line_magic("gpu_cluster").__doc__
    assert "gpu_cluster join" in doc and "gpu_cluster leave" in doc
    assert "join only schedulers you trust" in " ".join(doc.split())
    shell.run_line_magic("gpu_cluster", "join --help")
    assert "--rmm-pool-size" in capsys.readouterr().out


def test_joins_options_are_starts_defaults() -> None:
    parser = parsers.parser_of(parsers.join)
    args = parser.parse_argstring("tcp://10.0.0.5:8786")
    assert parsers.join_options(args) == StartOptions()
    assert parser.parse_argstring("").address is None
    leave = parsers.parser_of(parsers.leave).parse_argstring("")
    assert leave.timeout == LEAVE_TIMEOUT


def test_gpu_workers_are_bound_and_advertise_a_gpu() -> None:
    devices = [Device(1, "GPU-1111", "H200", 2**30), Device(3, "GPU-3333", "H200", 2**30)]
    opts = StartOptions(rmm_pool_size=0.5, rmm_async=True, resources={"MEM": 2e9})
    assert join_keywords(opts, devices, security="S") == {
        "preload": ["gpudask_jupyter.cluster.worker_setup"],
        "silence_logs": logging.WARNING,  # as LocalCluster's: no INFO of theirs in a cell
        "security": "S",
        "dashboard": False,
        "dashboard_address": None,
        "memory_limit": "auto",
        "nthreads": 1,
        "rmm_async": True,
        "resources": "GPU=1,MEM=2e+09",
        "rmm_pool_size": 0.5,
    }


def test_cpu_workers_share_the_cores_and_advertise_what_was_asked() -> None:
    keywords = join_keywords(StartOptions(n_workers=1, memory_limit="1GB"), [], security=None)
    assert keywords["nthreads"] >= 1 and keywords["resources"] is None
    assert keywords["memory_limit"] == "1GB"
    asked = join_keywords(StartOptions(threads_per_worker=3, resources={"X": 1}), [], None)
    assert asked["nthreads"] == 3 and asked["resources"] == {"X": 1}


def test_workers_listen_where_the_scheduler_reaches_them(tmp_path: Path) -> None:
    assert AttachTarget("tcp://127.0.0.1:8786").facing_host() == "127.0.0.1"
    assert AttachTarget("inproc://x").facing_host() is None
    assert AttachTarget("tcp://127.0.0.1:8786").worker_security() is None
    for role in ("ca", "cert", "key"):
        (tmp_path / f"{role}.pem").write_text(role)
    target = AttachTarget(
        "tls://127.0.0.1:8786",
        str(tmp_path / "ca.pem"),
        str(tmp_path / "cert.pem"),
        str(tmp_path / "key.pem"),
    )
    security = target.worker_security()
    assert security.require_encryption
    assert security.tls_worker_cert == str(tmp_path / "cert.pem")
    assert security.tls_ca_file == str(tmp_path / "ca.pem")


def _raw(**changes: object) -> dict[str, object]:
    raw: dict[str, object] = {
        "kernel_id": "k1",
        "pid": os.getpid(),
        "mode": "joined",
        "scheduler_address": "tcp://10.0.0.5:8786",
        "dashboard_link": None,
        "tls": None,
        "created": 1.0,
        "version": registry.SCHEMA_VERSION,
        "started": processes.process_started(os.getpid()),
        "workers": ["tcp://10.0.0.7:4001", "tcp://10.0.0.7:4002"],
    }
    raw.update(changes)
    return raw


def _read(folder: Path, raw: dict[str, object]) -> registry.Entry:
    path = folder / f"{registry.ENTRY_PREFIX}k1.json"
    path.write_text(json.dumps(raw))
    path.chmod(0o600)
    return registry.read_all(folder)["k1"]


def test_the_registry_lists_our_workers(tmp_path: Path) -> None:
    entry = _read(tmp_path, _raw())
    assert entry.mode == "joined"
    assert entry.workers == ["tcp://10.0.0.7:4001", "tcp://10.0.0.7:4002"]


@pytest.mark.parametrize(
    "workers",
    ["tcp://10.0.0.7:4001", [1, 2], ["http://evil.example/"], ["tcp://x"] * 5000, {"a": 1}],
    ids=repr,
)
def test_a_wrong_list_of_workers_marks_none_and_keeps_the_entry(
    tmp_path: Path, workers: object
) -> None:
    assert _read(tmp_path, _raw(workers=workers)).workers is None


def test_an_entry_of_before_join_still_reads(tmp_path: Path) -> None:
    raw = _raw(mode="cpu")
    del raw["workers"]
    assert _read(tmp_path, raw).workers is None


def test_leaving_says_whether_the_data_moved() -> None:
    both = ("tcp://a:1", "tcp://a:2")
    assert "moved the data they held" in Retirement(both, both).describe("tcp://s:1")
    partly = Retirement(both, both[:1]).describe("tcp://s:1")
    assert "1 of the 2 workers" in partly and "no other worker could take it" in partly
    late = Retirement(both, problem="not done within 2 s").describe("tcp://s:1")
    assert "not done within 2 s" in late and "computes them again" in late
    assert "no worker left" in Retirement(()).describe("tcp://s:1")
