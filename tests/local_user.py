"""A second local user for the tests, and a process acting as that user.

Creating a user needs root (CI runs as root); elsewhere the tests that need one are skipped with
that reason. The process acting as the other user starts as this one, imports what it needs, and
only then drops to the other user's uid and gid: the interpreter and its libraries may live where
only this user can read them (a pyenv under /root), while everything the process does after the
drop, connecting to the cluster above all, it does with nothing but the other user's rights.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

ATTACK = r"""
import json, os, sys, urllib.request
import distributed, distributed.comm.tcp, distributed.protocol, msgpack, cloudpickle, ssl
import distributed.protocol.pickle, distributed.protocol.serialize, distributed.client
import distributed.comm.addressing, distributed.security, distributed.utils_comm
import tornado.netutil, tornado.iostream, tornado.tcpclient, asyncio, concurrent.futures
from distributed import Client, Security
order = json.loads(sys.argv[1])
own = Security.temporary() if order.get("own_certificate") else None
os.setgroups([])
os.setgid(order["gid"])
os.setuid(order["uid"])
out = {"uid": os.getuid()}
for path in order.get("read", []):
    try:
        with open(path) as handle:
            out.setdefault("read", {})[path] = handle.read()[:20]
    except OSError as err:
        out.setdefault("read", {})[path] = type(err).__name__
if order.get("url"):
    try:
        with urllib.request.urlopen(order["url"], timeout=10) as answer:
            out["http"] = answer.status
    except urllib.error.HTTPError as err:
        out["http"] = err.code
    except OSError as err:
        out["http"] = type(err).__name__
if order.get("address"):
    try:
        with Client(order["address"], security=own, timeout=5) as client:
            out["ran_as"] = client.run_on_scheduler(os.getuid)
    except Exception as err:
        out["error"] = f"{type(err).__name__}: {err}"[:300]
print(json.dumps(out))
"""


@contextmanager
def second_user(suffix: str = "") -> Iterator[pwd.struct_passwd]:
    """A fresh account with a login shell and a uid in the people's range, removed after."""
    if os.getuid() != 0:
        pytest.skip("creating a second local user needs root (CI runs the tests as root)")
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        pytest.skip("useradd/userdel are not installed")
    name = f"gdtest{os.getpid() % 100000}{suffix}"
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/bin/bash", name],
        check=True,
        capture_output=True,
    )
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def act_as(user: pwd.struct_passwd, **order: object) -> dict[str, object]:
    """Run :data:`ATTACK` as ``user``: ``address`` to connect to and run ``os.getuid`` there,
    ``own_certificate`` to bring a certificate of its own, ``read`` files, fetch ``url``."""
    order.update(uid=user.pw_uid, gid=user.pw_gid)
    done = subprocess.run(
        [sys.executable, "-c", ATTACK, json.dumps(order)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, done.stderr[-2000:]
    result: dict[str, object] = json.loads(lines[-1])
    assert result["uid"] == user.pw_uid  # it really was the other user
    return result


STUDENT = r"""
import json, os, sys
import dask.config, psutil
from gpudask_jupyter.cluster.room import holder, leases, measure, shares
from gpudask_jupyter.machine import processes
order = json.loads(sys.argv[1])
os.setgroups([])
os.setgid(order["gid"])
os.setuid(order["uid"])
os.environ["HOME"] = "/tmp"
dask.config.set(order.get("config", {}))
exec(order["code"])
"""


def as_student(user: pwd.struct_passwd, code: str, **config: object) -> subprocess.Popen[str]:
    """A process of ``user`` that runs ``code`` with the room's modules imported and the
    ``gpudask.*`` options ``config`` set (a student's kernel, as far as the room sees one): its
    standard input and output are pipes, for the test to tell it when to go on and read what it
    found."""
    order = {
        "uid": user.pw_uid,
        "gid": user.pw_gid,
        "code": code,
        "config": {f"gpudask.{k.replace('_', '-')}": v for k, v in config.items()},
    }
    return subprocess.Popen(
        [sys.executable, "-c", STUDENT, json.dumps(order)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd="/",
    )


@contextmanager
def users(count: int) -> Iterator[list[pwd.struct_passwd]]:
    """``count`` fresh accounts (see :func:`second_user`), removed after."""
    with contextlib.ExitStack() as stack:
        made = []
        for i in range(count):
            made.append(stack.enter_context(second_user(suffix=str(i))))
        yield made
