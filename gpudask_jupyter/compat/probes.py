"""One :class:`.probing.Probe` per compat module, and the questions the rest of the package asks
them: whether a call is there (:func:`usable`), and what every installed library lacks
(:func:`report`, which ``python -m gpudask_jupyter.compat`` prints)."""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

from .probing import Lack, Probe

MODULES = (
    "python",
    "ipykernel",
    "ipython",
    "distributed",
    "dask_cuda",
    "dask",
    "pandas",
    "cudf",
    "dask_gateway",
)
"""The compat modules (of this folder), each with its ``DISTRIBUTION`` and ``needs()``."""

# per process: what the installed libraries offer, probed once per process
_lock = threading.Lock()
_probes: dict[str, Probe] = {}  # one per process: what a library offers does not change


def module(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def probe(name: str) -> Probe:
    """The probe of compat module ``name`` (or of the library it names, e.g. ``dask-cuda``)."""
    key = _module_name(name)
    with _lock:
        found = _probes.get(key)
        if found is None:
            source = module(key)
            found = _probes[key] = Probe(
                source.DISTRIBUTION, key, source.needs, getattr(source, "installed", None)
            )
        return found


def usable(name: str, *needs: str) -> bool:
    """Whether every one of ``needs`` (as module ``name``'s ``needs()`` names them) is there."""
    found = probe(name)
    return all(found.has(need) for need in needs)


def report() -> list[tuple[str, str | None, tuple[Lack, ...]]]:
    """(library, installed release or None, what it lacks) for every compat module."""
    return [(p.distribution, p.release(), p.lacks()) for p in map(probe, MODULES)]


def forget() -> None:
    """Probe again on the next question (tests that swap a library for a stand-in)."""
    with _lock:
        for found in _probes.values():
            found.forget()


def _module_name(name: str) -> str:
    if name in MODULES:
        return name
    for candidate in MODULES:
        if name == module(candidate).DISTRIBUTION:
            return candidate
    raise KeyError(f"no compat module for {name!r}")
