"""How busy the host's cores are, from /proc/stat, with real busy processes beside the test, and
the copy threads a transfer takes from it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from gpudask_jupyter.convert.pinned import thread_count
from gpudask_jupyter.machine import cores

pytestmark = pytest.mark.skipif(not os.path.exists(cores.STAT), reason="needs /proc/stat")

SPIN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def _window(seconds: float) -> float:
    before = cores.sample()
    time.sleep(seconds)
    after = cores.sample()
    assert before is not None and after is not None
    return cores.others_busy(before, after)


def test_other_processes_spinning_are_counted() -> None:
    """Spinners add their cores to what other processes keep busy, or fill the machine: on a
    machine already busy (two cores, a browser beside the tests) they cannot add a whole core
    each, and a full machine is what the count must then say."""
    usable = cores.usable_cores()
    count = min(2, usable - 1)  # a core stays for the test itself
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
    assert busy >= min(quiet + 0.8 * count, usable - 0.3), (quiet, busy, usable)


def test_this_process_own_work_is_not_counted() -> None:
    """This process's busy core is not counted among the others', measured against what the
    other processes keep busy just before and after (the machine need not be quiet)."""
    around = [_window(0.4)]
    before = cores.sample()
    end = time.monotonic() + 0.6
    while time.monotonic() < end:  # this process keeps one core busy
        pass
    after = cores.sample()
    around.append(_window(0.4))
    assert before is not None and after is not None
    spun = cores.others_busy(before, after)
    assert spun < max(around) + 0.6, (spun, around)


def test_fewer_threads_while_busy_never_below_two(monkeypatch) -> None:
    monkeypatch.setattr(cores, "affinity", lambda: 16)
    monkeypatch.setattr(cores, "quota_cores", lambda: None)
    for others, expected in [(0.3, 14), (8.2, 8), (15.0, 2), (40.0, 2)]:
        monkeypatch.setattr(thread_count._load, "others", lambda o=others: o)
        assert thread_count.copy_threads(14) == expected
    monkeypatch.setattr(thread_count._load, "others", lambda: None)  # not known: all of them
    assert thread_count.copy_threads(14) == 14


def test_device_to_host_takes_every_core_and_host_to_device_leaves_two(monkeypatch) -> None:
    monkeypatch.setattr(cores, "quota_cores", lambda: None)
    monkeypatch.setattr(thread_count._load, "others", lambda: 0.0)
    for count, up, down in [(16, 14, 16), (64, 16, 16), (4, 2, 4), (1, 2, 2)]:
        monkeypatch.setattr(cores, "affinity", lambda c=count: c)
        assert thread_count.default_threads(to_device=True) == up
        assert thread_count.default_threads(to_device=False) == down
        # a pool of 16 threads: each direction uses its own share of it, a smaller pool caps it
        assert thread_count.copy_threads(16, to_device=True) == up
        assert thread_count.copy_threads(16, to_device=False) == down
        assert thread_count.copy_threads(3, to_device=False) == min(3, down)
    monkeypatch.setattr(thread_count._load, "others", lambda: 8.2)
    monkeypatch.setattr(cores, "affinity", lambda: 16)
    assert thread_count.copy_threads(16, to_device=False) == 8  # busy: the free cores, either way


def test_a_container_cpu_limit_caps_the_threads(monkeypatch, tmp_path) -> None:
    root = tmp_path / "cgroup"
    group = root / "kubepods" / "pod1"
    group.mkdir(parents=True)
    (root / "kubepods" / "cpu.max").write_text("600000 100000\n")
    (group / "cpu.max").write_text("250000 100000\n")
    (root / "cpu.max").write_text("max 100000\n")
    membership = tmp_path / "cgroup-of-self"
    membership.write_text("0::/kubepods/pod1\n")
    assert cores.quota_cores(root, str(membership)) == 2.5
    (group / "cpu.max").write_text("max 100000\n")
    assert cores.quota_cores(root, str(membership)) == 6.0
    membership.write_text("12:cpu,cpuacct:/kubepods/pod1\n")  # cgroup v1 only: not read
    assert cores.quota_cores(root, str(membership)) is None
    monkeypatch.setattr(cores, "affinity", lambda: 64)
    monkeypatch.setattr(cores, "quota_cores", lambda: 2.5)
    assert cores.usable_cores() == 3
    assert thread_count.default_threads() == 2
    # other pods keep 40 of the node's 64 cores busy: the limit, not the node, decides
    monkeypatch.setattr(thread_count._load, "others", lambda: 40.0)
    assert thread_count.free_cores() == 3


def test_the_load_is_measured_between_transfers() -> None:
    load = thread_count.Load()
    first = load.others()  # no transfer yet: the processes running at this instant
    assert first is not None and first >= 0
    load.transfer_done()
    time.sleep(thread_count.MIN_WINDOW + 0.05)
    windowed = load.others()
    assert windowed is not None and windowed < cores.usable_cores() + 1
    load.transfer_done()
    assert load.others() == windowed  # back to back: the last measure stands
