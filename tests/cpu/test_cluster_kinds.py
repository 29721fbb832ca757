"""The kinds of cluster as kinds: a new kind is a new class, and the magics, the tables, the
registry and the close work with it unchanged. Against a real scheduler and worker in other
processes, in a real IPython shell."""

from __future__ import annotations

from typing import Any

import pytest
from distributed import Client
from IPython.core.error import UsageError
from support import DaskProcesses, this_kernel

from gpudask_jupyter import registry
from gpudask_jupyter.cluster.join import Retirement
from gpudask_jupyter.cluster.kinds import KINDS, Kind, KindBase
from gpudask_jupyter.cluster.session import ClusterSession


class Lent(KindBase):
    """A kind none of the package's: a scheduler a course lends for one lesson."""

    mode = "attached"  # as the views draw it: the registry takes a closed set of modes
    heading = "Lent cluster"

    def __init__(self) -> None:
        self.let_go_with: list[bool] = []
        self.ended = 0

    def title(self, session: ClusterSession, workers: dict[str, Any]) -> str:
        return f"Lent for the lesson: {len(workers)} worker(s) at {session.address}"

    def reach(self, session: ClusterSession) -> str:
        return "lent by the course; the course decides who else reaches it"

    def notes(self, session: ClusterSession) -> list[str]:
        return ["given back at the end of the lesson"]

    def stopped(self, session: ClusterSession, retirement: Retirement | None) -> str:
        return "Given back to the course."

    def gone(self) -> tuple[str, str]:
        return "lent", "forgets it"

    def let_go(self, session: ClusterSession, alive: bool) -> None:
        self.let_go_with.append(alive)

    def end(self, session: ClusterSession) -> None:
        self.ended += 1


def test_a_new_kind_works_through_every_command_unchanged(
    shell, scheduler: DaskProcesses, capsys: pytest.CaptureFixture[str]
) -> None:
    kind = Lent()
    session = ClusterSession(Client(scheduler.address), kind, [])
    session._register()
    this_kernel().set(session)
    entry = registry.read_all()[session.kernel_id]
    assert entry.mode == "attached" and entry.workers is None

    shell.run_line_magic("gpu_cluster", "status")
    out = capsys.readouterr().out
    assert f"Lent cluster at {scheduler.address}: 1 worker" in out
    assert "remote-0" in out and "given back at the end of the lesson" in out
    with pytest.raises(UsageError, match=r"attached to .* cannot scale it"):
        shell.run_line_magic("gpu_cluster", "scale 2")
    with pytest.raises(UsageError, match="Adaptive scaling is offered for clusters of dask"):
        shell.run_line_magic("gpu_cluster", "scale --adapt 1 2")

    shell.run_line_magic("gpu_cluster", "stop")
    assert "Given back to the course." in capsys.readouterr().out
    assert kind.let_go_with == [True] and kind.ended == 1
    assert this_kernel().current() is None
    assert not registry.path_for(session.kernel_id).exists()
    assert session.client.status == "closed"
    session.close()  # twice: nothing more
    assert kind.ended == 1


def test_a_kind_that_stopped_answering_says_what_stop_does(scheduler: DaskProcesses) -> None:
    session = ClusterSession(Client(scheduler.address), Lent(), [])
    session.client.close()
    assert session.gone() == (
        f"The cluster at {scheduler.address} is no longer lent: its client was closed. "
        "%gpu_cluster stop forgets it again."
    )


def test_every_kind_of_the_package_is_listed() -> None:
    from gpudask_jupyter.cluster import kinds

    made_here = {
        value
        for value in vars(kinds).values()
        if isinstance(value, type) and issubclass(value, KindBase) and value is not KindBase
    }
    assert made_here == set(KINDS)
    assert {kind.mode for kind in KINDS if kind.mode} == {"attached", "joined", "gateway"}
    annotations: list[type[Kind]] = list(KINDS)  # what mypy checks in the package
    assert len(annotations) == 4
