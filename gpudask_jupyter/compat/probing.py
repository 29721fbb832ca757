"""Whether the installed libraries still offer the private calls ``compat`` makes, by what they do.

A release number says nothing about whether a private name is still there: a new release that
keeps it should be taken on without asking, and one that drops it should be met with a
fallback or a sentence, never with a test that refuses the number or a traceback from deep
inside the library. So each compat module lists what it needs (its ``needs()``: a name as the
library spells it, a check that raises where it is missing, and what the package does without
it), and a :class:`Probe` runs those checks once per process, the first time any is asked,
logging each lack once in one sentence that names the library, its release and the fallback.

The checks only look things up (an attribute, a signature, a line of source); none starts a
cluster, touches a GPU or imports more than the library itself.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import platform
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

#: (name as the library spells it, a check that raises where it is missing, what the package
#: does without it): what each compat module's ``needs()`` lists. Plain tuples, so that the
#: module of the scheduler's (:mod:`.distributed`), which travels by value to schedulers without
#: this package, needs nothing of this one.
NeedTuple = tuple[str, Callable[[], object], str]


@dataclass(frozen=True)
class Lack:
    """One private call the installed ``distribution`` lacks, and what is done without it."""

    distribution: str
    release: str
    name: str
    without: str

    def sentence(self) -> str:
        return f"{self.distribution} {self.release} lacks {self.name}: {self.without}"


class Probe:
    """What one library lacks of the calls its compat module makes, found once per process.

    ``needs`` gives the module's list (it may import the library; an import that fails is a
    lack of the library as a whole, unless the library is not installed at all: then nothing is
    lacking, since nothing will be called). Thread-safe; :meth:`forget` starts again (tests
    that swap the library they run on).
    """

    def __init__(
        self,
        distribution: str,
        module: str,
        needs: Callable[[], Sequence[NeedTuple]],
        release: Callable[[], str | None] | None = None,
    ) -> None:
        self.distribution = distribution
        self.module = module
        self._needs = needs
        self._release = release
        self._lock = threading.Lock()
        self._found: tuple[Lack, ...] | None = None
        self._listed: frozenset[str] | None = None  # the names needs() gave, once probed

    def lacks(self) -> tuple[Lack, ...]:
        """What is missing, probed on first use and kept; each lack logged once, as a warning."""
        with self._lock:
            if self._found is None:
                self._found = self._probe()
                for lack in self._found:
                    log.warning("%s", lack.sentence())
            return self._found

    def has(self, name: str) -> bool:
        """Whether the call named ``name`` (as its compat module's ``needs()`` names it) is
        there; a name the module does not list is a programming error."""
        lacking = {lack.name for lack in self.lacks()}
        if self._listed is not None and name not in self._listed:
            raise KeyError(f"{self.module}.needs() lists no {name!r}")
        return name not in lacking

    def forget(self) -> None:
        with self._lock:
            self._found = None
            self._listed = None

    def release(self) -> str | None:
        """The installed release, or None where the library is not installed."""
        if self._release is not None:
            return self._release()
        if self.distribution == "python":
            return platform.python_version()
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None

    def _probe(self) -> tuple[Lack, ...]:
        release = self.release()
        if release is None:
            return ()
        try:
            needs = list(self._needs())
        except Exception as err:
            log.debug("probing %s %s failed", self.distribution, release, exc_info=True)
            whole = f"a probe that runs ({type(err).__name__}: {err})"
            return (Lack(self.distribution, release, whole, "every call of it falls back"),)
        self._listed = frozenset(name for name, _, _ in needs)
        lacking = []
        for name, check, without in needs:
            try:
                check()
            except Exception:
                log.debug("%s %s lacks %s", self.distribution, release, name, exc_info=True)
                lacking.append(Lack(self.distribution, release, name, without))
        return tuple(lacking)


# -- checks, each raising where what it looks for is missing -----------------------------------


def has_path(root: Any, dotted: str) -> None:
    """Raise AttributeError unless ``root`` has the attribute path ``dotted`` (a descriptor, as
    a property or a slot is on its class, counts). ``root`` may be a module's name."""
    if isinstance(root, str):
        root = importlib.import_module(root)
    for part in dotted.split("."):
        root = getattr(root, part)


def takes(obj: Any, count: int = 0, keywords: Sequence[str] = ()) -> inspect.Signature | None:
    """Raise TypeError unless ``obj`` can be called with ``count`` positional arguments and the
    keyword arguments ``keywords``, as far as its signature can be read (which it returns);
    where it cannot, being callable is enough."""
    if not callable(obj):
        raise TypeError(f"{obj!r} is not callable")
    found = signature(obj)
    if found is None:
        log.debug("the signature of %r cannot be read: taken as it is", obj)
        return None
    found.bind(*range(count), **dict.fromkeys(keywords))
    return found


def sets(cls: type, attribute: str) -> None:
    """Raise AttributeError unless ``cls`` has ``attribute`` or a method of its class hierarchy
    assigns ``self.<attribute>`` (an attribute made per instance, as a constructor does)."""
    if hasattr(cls, attribute):
        return
    assigned = re.compile(rf"\bself\.{re.escape(attribute)}\s*(?::[^=\n]*)?=")
    for klass in inspect.getmro(cls):
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if assigned.search(source):
            return
    raise AttributeError(f"{cls.__qualname__} sets no {attribute}")


def source_holds(obj: Any, text: str) -> None:
    """Raise ValueError unless the source of ``obj`` holds ``text``."""
    if text not in inspect.getsource(obj):
        raise ValueError(f"the source of {obj!r} no longer holds {text!r}")


def signature(obj: Any) -> inspect.Signature | None:
    """``obj``'s signature, or None where it cannot be read.

    Cython's functions and methods (compiled with ``binding=True``) give theirs to
    :func:`inspect.signature`; its classes give none, or only ``(*args, **kwargs)``, but carry
    it as their docstring's first line (``embedsignature``), read here instead.
    """
    try:
        found = inspect.signature(obj)
    except (TypeError, ValueError):
        found = None
    if found is not None and not any(
        p.kind is inspect.Parameter.VAR_POSITIONAL for p in found.parameters.values()
    ):
        return found
    return docstring_signature(obj)


def docstring_signature(obj: Any) -> inspect.Signature | None:
    """The signature Cython's ``embedsignature`` writes as the docstring's first line, such as
    ``Column(DataType data_type, size_type size, data: Span | None, ..., bool validate=True)``
    (C types before a name, Python annotations after one), or None."""
    doc = getattr(obj, "__doc__", None)
    name = getattr(obj, "__name__", None)
    if not isinstance(doc, str) or not isinstance(name, str):
        return None
    lines = doc.strip().splitlines()
    found = re.fullmatch(rf"{re.escape(name)}\((.*)\)\s*(?:->.*)?", lines[0]) if lines else None
    if found is None:
        return None
    parameters = []
    keyword_only = False
    for piece in _top_level_split(found.group(1)):
        if piece == "/" or piece.startswith("**"):
            continue
        if piece == "*":
            keyword_only = True
            continue
        if piece.startswith("*"):
            return None  # any number of arguments: nothing to check them against
        head, has_default, _ = piece.partition("=")
        words = head.split(":")[0].split() if ":" in head else head.split()
        if not words or not words[-1].isidentifier():
            return None
        default = None if has_default else inspect.Parameter.empty
        kind = (
            inspect.Parameter.KEYWORD_ONLY
            if keyword_only
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        parameters.append(inspect.Parameter(words[-1], kind, default=default))
    try:
        return inspect.Signature(parameters)
    except ValueError:  # a parameter without a default after one with: not a signature
        return None


def _top_level_split(text: str) -> list[str]:
    """``text`` split at the commas outside brackets, each piece stripped, empty ones dropped."""
    pieces, depth, current = [], 0, ""
    for char in text:
        depth += (char in "([{") - (char in ")]}")
        if char == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += char
    pieces.append(current)
    return [piece.strip() for piece in pieces if piece.strip()]
