"""How busy the host's cores are, from /proc/stat, with real busy processes beside the test."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from gpudask_jupyter import host_load

pytestmark = pytest.mark.skipif(not os.path.exists(host_load.STAT), reason="needs /proc/stat")

SPIN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def _window(seconds: float) -> float:
    before = host_load.sample()
    time.sleep(seconds)
    after = host_load.sample()
    assert before is not None and after is not None
    return host_load.others_busy(before, after)


def test_other_processes_spinning_are_counted() -> None:
    count = min(2, host_load.usable_cores() - 1)  # a core stays for the test itself
    if count < 1:
        pytest.skip("needs two cores: one to keep busy, one for the test")
    quiet = _window(0.5)
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        time.sleep(0.3)  # started and spinning
        busy = _window(1.0)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert busy >= quiet + 0.8 * count, (quiet, busy)


def test_this_process_own_work_is_not_counted() -> None:
    before = host_load.sample()
    end = time.monotonic() + 0.6
    while time.monotonic() < end:  # this process keeps one core busy
        pass
    after = host_load.sample()
    assert before is not None and after is not None
    assert host_load.others_busy(before, after) < 0.8


def test_fewer_threads_while_busy_never_below_two(monkeypatch) -> None:
    monkeypatch.setattr(host_load, "_affinity", lambda: 16)
    monkeypatch.setattr(host_load, "quota_cores", lambda: None)
    for others, expected in [(0.3, 14), (8.2, 8), (15.0, 2), (40.0, 2)]:
        monkeypatch.setattr(host_load._load, "others", lambda o=others: o)
        assert host_load.copy_threads(14) == expected
    monkeypatch.setattr(host_load._load, "others", lambda: None)  # not known: all of them
    assert host_load.copy_threads(14) == 14


def test_device_to_host_takes_every_core_and_host_to_device_leaves_two(monkeypatch) -> None:
    monkeypatch.setattr(host_load, "quota_cores", lambda: None)
    monkeypatch.setattr(host_load._load, "others", lambda: 0.0)
    for cores, up, down in [(16, 14, 16), (64, 16, 16), (4, 2, 4), (1, 2, 2)]:
        monkeypatch.setattr(host_load, "_affinity", lambda c=cores: c)
        assert host_load.default_threads(to_device=True) == up
        assert host_load.default_threads(to_device=False) == down
        # a pool of 16 threads: each direction uses its own share of it, a smaller pool caps it
        assert host_load.copy_threads(16, to_device=True) == up
        assert host_load.copy_threads(16, to_device=False) == down
        assert host_load.copy_threads(3, to_device=False) == min(3, down)
    monkeypatch.setattr(host_load._load, "others", lambda: 8.2)
    monkeypatch.setattr(host_load, "_affinity", lambda: 16)
    assert host_load.copy_threads(16, to_device=False) == 8  # busy: the free cores, either way


def test_a_container_cpu_limit_caps_the_threads(monkeypatch, tmp_path) -> None:
    root = tmp_path / "cgroup"
    group = root / "kubepods" / "pod1"
    group.mkdir(parents=True)
    (root / "kubepods" / "cpu.max").write_text("600000 100000\n")
    (group / "cpu.max").write_text("250000 100000\n")
    (root / "cpu.max").write_text("max 100000\n")
    membership = tmp_path / "cgroup-of-self"
    membership.write_text("0::/kubepods/pod1\n")
    assert host_load.quota_cores(root, str(membership)) == 2.5
    (group / "cpu.max").write_text("max 100000\n")
    assert host_load.quota_cores(root, str(membership)) == 6.0
    membership.write_text("12:cpu,cpuacct:/kubepods/pod1\n")  # cgroup v1 only: not read
    assert host_load.quota_cores(root, str(membership)) is None
    monkeypatch.setattr(host_load, "_affinity", lambda: 64)
    monkeypatch.setattr(host_load, "quota_cores", lambda: 2.5)
    assert host_load.usable_cores() == 3
    assert host_load.default_threads() == 2
    # other pods keep 40 of the node's 64 cores busy: the limit, not the node, decides
    monkeypatch.setattr(host_load._load, "others", lambda: 40.0)
    assert host_load.free_cores() == 3


def test_the_load_is_measured_between_transfers() -> None:
    load = host_load.Load()
    first = load.others()  # no transfer yet: the processes running at this instant
    assert first is not None and first >= 0
    load.transfer_done()
    time.sleep(host_load.MIN_WINDOW + 0.05)
    windowed = load.others()
    assert windowed is not None and windowed < host_load.usable_cores() + 1
    load.transfer_done()
    assert load.others() == windowed  # back to back: the last measure stands
