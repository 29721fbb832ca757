"""Whether other people use this machine: it decides whether a started cluster serves a dashboard.

The Dask dashboard has no authentication, and loopback is no boundary: every local user can open
``http://127.0.0.1:PORT``. So the dashboard starts by default only where nobody else is: no other
human account (a uid at or above ``UID_MIN`` of ``/etc/login.defs``, 1000 unless it says
otherwise, with a login shell) and no process of another such uid. ``nobody`` and system accounts
do not count. Both checks read small files only (``/etc/passwd``, one ``stat`` per ``/proc``
entry), so the answer costs about a millisecond; the paths are arguments, so tests can hand in
their own files.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_UID_MIN = 1000
#: uids of the unprivileged "nobody" accounts, never a person
NOBODY_UIDS = frozenset({65534, 65535, 4294967294})
#: shells that refuse a login
NO_LOGIN = ("nologin", "false", "sync", "shutdown", "halt")


@dataclass(frozen=True)
class Others:
    """The other people found on this machine: their accounts, and who of them runs processes."""

    accounts: tuple[str, ...] = ()
    running: tuple[str, ...] = ()  # owners of running processes: names, or "uid N"
    reason: str = ""  # set when the answer was given, not looked for (the shared-machine option)

    def __bool__(self) -> bool:
        return bool(self.accounts or self.running or self.reason)

    def describe(self) -> str:
        """``alice, bob, uid 1003``: at most four names, for one line."""
        if self.reason:
            return self.reason
        names = list(dict.fromkeys([*self.running, *self.accounts]))
        shown = ", ".join(names[:4])
        return shown + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def uid_min(login_defs: Path = Path("/etc/login.defs")) -> int:
    """``UID_MIN`` of ``login_defs``: the first uid ``useradd`` gives to a person."""
    try:
        text = login_defs.read_text(errors="replace")
    except OSError:
        return DEFAULT_UID_MIN
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "UID_MIN" and fields[1].isdigit():
            return int(fields[1])
    return DEFAULT_UID_MIN


def _is_person(uid: int, first: int, own: int) -> bool:
    return uid >= first and uid != own and uid not in NOBODY_UIDS


def _accounts(passwd: Path) -> list[tuple[str, int, str]]:
    """(name, uid, shell) of every well-formed line of ``passwd``."""
    try:
        lines = passwd.read_text(errors="replace").splitlines()
    except OSError:
        log.debug("cannot read %s", passwd, exc_info=True)
        return []
    found = []
    for line in lines:
        fields = line.split(":")
        if len(fields) >= 7 and fields[2].isdigit():
            found.append((fields[0], int(fields[2]), fields[6].strip()))
    return found


def human_accounts(accounts: list[tuple[str, int, str]], first: int, own: int) -> list[str]:
    """The names of ``accounts`` that are people other than ``own``: a uid from ``first`` on,
    not ``nobody``, with a shell that allows a login (an empty one means ``/bin/sh``)."""
    return [
        name
        for name, uid, shell in accounts
        if name != "nobody"
        and _is_person(uid, first, own)
        and os.path.basename(shell) not in NO_LOGIN
    ]


def process_uids(proc: Path, first: int, own: int) -> list[int]:
    """uids of people other than ``own`` that run a process (all of them unless ``/proc`` hides
    other users' processes; the accounts check still sees those people)."""
    uids: set[int] = set()
    try:
        entries = list(os.scandir(proc))
    except OSError:
        log.debug("cannot list %s", proc, exc_info=True)
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):  # the process ended meanwhile
            uid = entry.stat(follow_symlinks=False).st_uid
            if _is_person(uid, first, own):
                uids.add(uid)
    return sorted(uids)


def others(
    passwd: Path = Path("/etc/passwd"),
    login_defs: Path = Path("/etc/login.defs"),
    proc: Path = Path("/proc"),
    own_uid: int | None = None,
) -> Others:
    """Other people on this machine, from its accounts and its running processes."""
    own = os.getuid() if own_uid is None else own_uid
    first = uid_min(login_defs)
    accounts = _accounts(passwd)
    names = {uid: name for name, uid, _ in accounts}
    people = human_accounts(accounts, first, own)
    running = [names.get(uid, f"uid {uid}") for uid in process_uids(proc, first, own)]
    log.debug("other people here: accounts %s, running processes %s", people, running)
    return Others(tuple(people), tuple(running))
