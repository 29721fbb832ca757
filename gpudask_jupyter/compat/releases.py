"""The releases of a library whose private parts a compat module uses, as checked.

Each compat module names its library and the releases its calls were checked on (its
``CHECKED``, a plain tuple: a module of the scheduler's travels by value to schedulers without
this package, so it imports nothing of it); a test compares them with the library installed and
with the upper bound in ``pyproject.toml``, so that a new release is taken on only after it was
checked.
"""

from __future__ import annotations

from dataclasses import dataclass

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
"""The compat modules (of this folder), each with its ``CHECKED`` releases."""


def release(version: str) -> tuple[int, int]:
    """(major, minor) of a version such as ``2026.8.1``, ``26.10.0a3`` or ``3.1``."""
    parts = []
    for piece in version.split(".")[:2]:
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits or 0))
    while len(parts) < 2:
        parts.append(0)
    return parts[0], parts[1]


@dataclass(frozen=True)
class Checked:
    """``distribution`` (its name on PyPI), checked from release ``lowest`` to ``highest``."""

    distribution: str
    lowest: str
    highest: str

    def covers(self, version: str) -> bool:
        return release(self.lowest) <= release(version) <= release(self.highest)
