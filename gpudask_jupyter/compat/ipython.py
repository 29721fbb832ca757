"""The private part of IPython this package calls: showing a traceback it has added a line to."""

from __future__ import annotations

import sys
from typing import Any

from .probes import usable
from .probing import NeedTuple, takes

DISTRIBUTION = "ipython"
SHOW = "InteractiveShell._showtraceback(etype, value, stb)"


def needs() -> list[NeedTuple]:
    from IPython.core.interactiveshell import InteractiveShell

    return [
        (
            SHOW,
            lambda: takes(InteractiveShell._showtraceback, 4),
            "an out-of-memory error is shown by IPython's public showtraceback, and the line "
            "this package adds to it is printed after it",
        )
    ]


def show_structured_traceback(
    shell: Any, etype: type, value: BaseException, stb: list[str]
) -> None:
    """Show ``stb`` (a structured traceback, as ``InteractiveTB.structured_traceback`` makes
    one) as the cell's error. A custom exception handler (``set_custom_exc``) must show the error
    itself: IPython's run loop drops what it returns. ``InteractiveShell._showtraceback``
    (private; probed) is what ipykernel overrides to send the error to the front end, with the
    traceback's lines as given. Without it, the public ``showtraceback`` shows the error and what
    ``stb`` adds beyond IPython's own lines is printed after."""
    if usable(DISTRIBUTION, SHOW):
        shell._showtraceback(etype, value, stb)
        return
    own = shell.InteractiveTB.structured_traceback(etype, value, value.__traceback__)
    shell.showtraceback((etype, value, value.__traceback__))
    for line in stb[len(own) :]:
        print(line, file=sys.stderr)
