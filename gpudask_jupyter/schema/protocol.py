"""What the views and the package say to each other besides the Frame.

- The panel widget's messages over its comm (:data:`ViewMessage` from a view,
  :data:`KernelMessage` from the kernel), its synced traits (:data:`PANEL_TRAITS`) and the
  marker in its outputs (:data:`PANEL_MIME`).
- The cluster actions of the views' buttons, and the result the kernel answers with: through the
  widget's comm, or, for the sidebar, as the one line :data:`RESULT_PREFIX` + JSON that
  :data:`CONTROL_MODULE`'s ``run_json`` prints when the sidebar runs it in the kernel.
- The server extension's routes, under the Jupyter server's base URL.

Like :mod:`.frame`, this module is the one description: ``scripts/generate_ts.py`` writes
``labextension/src/view/protocol.generated.ts`` from it, and a test fails when the two differ.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from .frame import Frame

ControlAction = Literal["start", "stop", "restart", "scale", "detach"]
"""A cluster action a view's button asks the kernel for."""

CONTROL_ACTIONS: tuple[ControlAction, ...] = ("start", "stop", "restart", "scale", "detach")
"""Every action, in the order the views offer them."""

CONTROL_MODULE = "gpudask_jupyter.widget.sidebar_actions"
"""The module whose ``run_json(action, n)`` the sidebar runs in the kernel."""

RESULT_PREFIX = "GPUDASK_CONTROL_RESULT "
"""What the one line ``run_json`` prints starts with; the JSON of an ActionResult follows."""

PANEL_TRAITS = ("interval", "paused", "history", "processes")
"""The panel widget's traits that the view and the kernel keep in step."""

PANEL_MIME = "application/vnd.gpudask.panel+json"
"""A marker entry (an empty object) in the display bundle of the panel widget: a front end that
reopens a saved notebook knows the output was this panel even where its model is gone."""

FRAME_ROUTE = "gpudask/api/frame"
"""GET ?kernel=&cursor=&interval=: the next Frame of that kernel's cluster."""

KERNELS_ROUTE = "gpudask/api/kernels"
"""GET: the kernels that have a cluster, and whether this machine's GPUs are visible."""


class ResultCluster(TypedDict):
    """The kernel's cluster as it is after an action."""

    state: str
    """"running" or "closed"."""
    mode: str
    """"gpu", "cpu", "attached", "joined" or "gateway"."""
    address: str
    workers: int
    dashboard: str | None


class ActionResult(TypedDict):
    """What the kernel answers to an action."""

    ok: bool
    action: str
    text: str
    """A few lines of plain words: what was done, or why not."""
    cluster: ResultCluster | None
    """Empty (null) when the kernel has no cluster now."""
    time: float
    """When the action ended, seconds since the epoch on the kernel's clock: a view shows the
    result's cluster until a frame sampled after this time says how it is."""


class HelloMessage(TypedDict):
    """A view is drawn (or resumed): send it a snapshot, then frames."""

    type: Literal["hello"]
    view: NotRequired[str]
    """Tells two views of one panel apart; without it, one bye stands for every view."""


class ByeMessage(TypedDict):
    """A view is gone: stop sending to it."""

    type: Literal["bye"]
    view: NotRequired[str]


class ControlMessage(TypedDict):
    """A button was pressed."""

    type: Literal["control"]
    id: int
    action: ControlAction
    n: NotRequired[int]
    """Workers, for scale (required) and start (optional)."""


ViewMessage = HelloMessage | ByeMessage | ControlMessage
"""A message from a view to the kernel."""


class FrameMessage(TypedDict):
    type: Literal["frame"]
    frame: Frame


class ControlStartedMessage(TypedDict):
    """The kernel begins an action; until then it waits behind a running cell."""

    type: Literal["control-started"]
    id: int


class ControlResultMessage(ActionResult):
    type: Literal["control-result"]
    id: int


KernelMessage = FrameMessage | ControlStartedMessage | ControlResultMessage
"""A message from the kernel to a view."""
