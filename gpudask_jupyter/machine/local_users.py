"""Whether other people use this machine now: it decides the dashboard and the room.

The Dask dashboard has no authentication, and loopback is no boundary: every local user can open
``http://127.0.0.1:PORT``. So the dashboard starts by default only where nobody else is, and on a
machine other people use a start takes its share of the GPUs (:mod:`.room`). "Other people" is
decided on evidence that they are here now, not on accounts that merely exist (images carry an
idle ``ubuntu`` account, and a JupyterHub makes each student's account at their first login):

* a process of another person (a uid at or above ``UID_MIN`` of ``/etc/login.defs``, 1000 unless
  it says otherwise; ``nobody`` and system accounts do not count);
* a session of another user logged in (utmp, as ``who`` shows);
* another JupyterHub single-user server, even of this uid (servers of one shared account name
  their hub user in their environment).

The checks read small files only (one ``stat`` per ``/proc`` entry, the command lines of this
user's processes), about a millisecond; the paths are arguments, so tests hand in their own.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from .. import config

log = logging.getLogger(__name__)

DEFAULT_UID_MIN = 1000
#: uids of the unprivileged "nobody" accounts, never a person
NOBODY_UIDS = frozenset({65534, 65535, 4294967294})


@dataclass(frozen=True)
class Others:
    """The other people found here now, and what shows they are here."""

    running: tuple[str, ...] = ()  # owners of running processes: names, or "uid N"
    sessions: tuple[str, ...] = ()  # users logged in (utmp)
    hub: tuple[str, ...] = ()  # hub users of other JupyterHub servers of this account
    reason: str = ""  # set when the answer was given, not looked for (the shared-machine option)

    def __bool__(self) -> bool:
        return bool(self.running or self.sessions or self.hub or self.reason)

    def describe(self) -> str:
        """``alice, bob, uid 1003``: at most four names, for one line."""
        if self.reason:
            return self.reason
        names = list(dict.fromkeys([*self.running, *self.sessions, *self.hub]))
        shown = ", ".join(names[:4])
        return shown + (f" and {len(names) - 4} more" if len(names) > 4 else "")

    def evidence(self) -> str:
        """What made the machine shared, in words, with how to say otherwise."""
        if self.reason:
            return self.reason
        said = []
        if self.running:
            said.append(f"processes of {_few(self.running)}")
        if self.sessions:
            said.append(f"{_few(self.sessions)} logged in")
        if self.hub:
            said.append(f"the JupyterHub servers of {_few(self.hub)}")
        return "; ".join(said) + " (set the shared-machine option to false if this is yours alone)"


def _few(names: tuple[str, ...]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


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


def _hub_user(environ: bytes) -> str | None:
    for item in environ.split(b"\0"):
        if item.startswith(b"JUPYTERHUB_USER="):
            return item.partition(b"=")[2].decode(errors="replace")
    return None


def hub_servers(proc: Path, own_uid: int, own_hub_user: str | None) -> list[str]:
    """The hub users of JupyterHub single-user servers of this uid other than this one's: on a
    hub whose students share one account, each student's server is one of them."""
    found: set[str] = set()
    try:
        entries = list(os.scandir(proc))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != own_uid:
                continue
            with open(os.path.join(entry.path, "cmdline"), "rb") as handle:
                if b"jupyterhub-singleuser" not in handle.read(4096):
                    continue
            with open(os.path.join(entry.path, "environ"), "rb") as handle:
                user = _hub_user(handle.read(1 << 20))
        except OSError:  # ended meanwhile, or not readable
            continue
        if user and user != own_hub_user:
            found.add(user)
    return sorted(found)


def logged_in(own: str) -> list[str]:
    """Users with a login session now (utmp), other than ``own``."""
    try:
        import psutil

        return sorted({user.name for user in psutil.users() if user.name and user.name != own})
    except Exception:  # no utmp here (a container): nobody is logged in that way
        log.debug("cannot read the login sessions", exc_info=True)
        return []


def others(
    passwd: Path = Path("/etc/passwd"),
    login_defs: Path = Path("/etc/login.defs"),
    proc: Path = Path("/proc"),
    own_uid: int | None = None,
    sessions: list[str] | None = None,
) -> Others:
    """Other people here now: their processes, their sessions, other hub servers of this
    account. ``passwd`` only names uids; an account alone is no one."""
    import pwd

    own = os.getuid() if own_uid is None else own_uid
    first = uid_min(login_defs)
    names = {uid: name for name, uid, _ in _accounts(passwd)}
    running = [names.get(uid, f"uid {uid}") for uid in process_uids(proc, first, own)]
    try:
        own_name = pwd.getpwuid(own).pw_name
    except KeyError:
        own_name = f"uid {own}"
    if sessions is None:
        sessions = logged_in(own_name)
    hub = hub_servers(proc, own, os.environ.get("JUPYTERHUB_USER"))
    log.debug(
        "other people here: processes %s, sessions %s, hub servers %s", running, sessions, hub
    )
    return Others(tuple(running), tuple(sessions), tuple(hub))


def shared_machine() -> Others:
    """The other people here, as the ``shared-machine`` option says or, on ``auto``, as found."""
    setting = config.get("shared-machine")
    if setting == "auto":
        return others()
    if setting:
        return Others(reason="the shared-machine option says so")
    return Others()
