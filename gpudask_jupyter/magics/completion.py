"""Tab completion for ``%gpu_cluster``: the subcommands, then the options of the one typed.

Registered as one of IPython's custom matchers (``IPCompleter.custom_matchers``, matcher API
v2), which the terminal and Jupyter kernels both consult; on a ``%gpu_cluster`` line its matches
replace IPython's generic ones (which completed ``%gpu_cluster st`` to ``%store`` and offered
Python keywords after ``%gpu_cluster ``). Everything offered is read from the parsers of
:mod:`.parsers`, so completion cannot disagree with what is parsed. Loading the extension
adds the matcher, unloading removes it.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from .. import compat
from . import parsers

log = logging.getLogger(__name__)

MAGIC = "%gpu_cluster"


def _subcommand_actions(sub: str) -> list[argparse.Action]:
    spec = parsers.SUBCOMMANDS.get(sub)
    if spec is None:
        return []
    return compat.parser_actions(parsers.parser_of(spec))


def candidates(text_until_cursor: str) -> list[str]:
    """What may come next after ``text_until_cursor`` (a ``%gpu_cluster ...`` line)."""
    words = text_until_cursor.split()
    typed = words[1:]
    finished = text_until_cursor.endswith((" ", "\t"))
    if not typed or (len(typed) == 1 and not finished):
        return list(parsers.SUBCOMMANDS)
    actions = _subcommand_actions(typed[0])
    previous = typed[-1] if finished else (typed[-2] if len(typed) > 1 else "")
    for action in actions:
        if previous in action.option_strings and action.nargs != 0:
            return [str(choice) for choice in action.choices or ()]  # a value comes next
    given = set(typed[1:])
    options: list[str] = []
    for action in actions:
        if set(action.option_strings) & given and action.dest != "help":
            continue  # already given once
        options.extend(flag for flag in action.option_strings if flag.startswith("--"))
    return options


def _gpu_cluster_line(text: str) -> bool:
    """Whether ``text`` is ``%gpu_cluster`` (or ``gpu_cluster``, automagic) and a space on."""
    words = text.split()
    return bool(words) and words[0] in {MAGIC, MAGIC[1:]} and text.lstrip() != words[0]


def matcher(context: Any) -> dict[str, Any]:
    """IPython's matcher (API v2): on a ``%gpu_cluster`` line, the candidates that start with
    the word being typed, and nothing from IPython's other matchers (which offered ``%store``
    for ``%gpu_cluster st``, and Python keywords after ``%gpu_cluster ``)."""
    from IPython.core.completer import SimpleCompletion

    found: list[str] = []
    try:
        text = str(context.text_until_cursor)
        if _gpu_cluster_line(text):
            token = "" if text.endswith((" ", "\t")) else text.split()[-1]
            found = [c for c in candidates(text) if c.startswith(token)]
    except Exception:  # completion must never break the prompt
        log.debug("completing %r failed", getattr(context, "full_text", ""), exc_info=True)
    return {
        "completions": [SimpleCompletion(c, type="gpu_cluster") for c in found],
        "suppress": bool(found),
        "ordered": True,
    }


matcher.matcher_api_version = 2  # type: ignore[attr-defined]


def install(shell: Any) -> None:
    completer = getattr(shell, "Completer", None)
    if completer is not None and matcher not in completer.custom_matchers:
        completer.custom_matchers.append(matcher)


def uninstall(shell: Any) -> None:
    completer = getattr(shell, "Completer", None)
    if completer is not None and matcher in completer.custom_matchers:
        completer.custom_matchers.remove(matcher)
