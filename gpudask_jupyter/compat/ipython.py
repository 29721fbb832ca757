"""The private part of IPython this package calls: showing a traceback it has added a line to."""

from __future__ import annotations

from typing import Any

#: the library (its name on PyPI) and the releases these calls were checked on, lowest and
#: newest (:class:`.releases.Checked`)
CHECKED = ("ipython", "8.12", "9.18")


def show_structured_traceback(
    shell: Any, etype: type, value: BaseException, stb: list[str]
) -> None:
    """Show ``stb`` (a structured traceback, as ``InteractiveTB.structured_traceback`` makes
    one) as the cell's error. A custom exception handler (``set_custom_exc``) must show the error
    itself: IPython's run loop drops what it returns. ``InteractiveShell._showtraceback``
    (private; IPython 8.12 – 9.18) is what ipykernel overrides to send the error to the front end,
    with the traceback's lines as given."""
    shell._showtraceback(etype, value, stb)
