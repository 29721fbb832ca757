"""What ``to_gpu`` / ``to_cpu`` and ``%%to_gpu`` / ``%%to_cpu`` accept together, checked once.

The functions and the magics share these rules, so that neither drops an argument silently: a
``device`` next to ``distribute`` (every worker uses its own GPU), an ``npartitions`` or a
``client`` without the spreading or gathering they belong to, a count that is not a whole
number above zero. A refusal is an :class:`~..errors.ArgumentError` naming the argument as the
caller spelled it (``npartitions=`` or ``--npartitions``), raised before anything runs.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentError
from ..machine.availability import device_count


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Spelling:
    def __init__(self, magic: bool) -> None:
        self.magic = magic

    def __call__(self, name: str, flag: bool = False) -> str:
        """``name`` as the caller wrote it: ``--name`` in a magic, ``name`` (``name=True`` for
        a ``flag``) in a function call."""
        if self.magic:
            return f"--{name}"
        return f"{name}=True" if flag else name


def check_to_gpu(
    device: Any = None,
    distribute: bool = False,
    npartitions: Any = None,
    client: Any = None,
    *,
    magic: bool = False,
) -> None:
    """Refuse what ``to_gpu`` (``magic``: ``%%to_gpu``) cannot do as asked; ``device`` is
    checked against the GPUs of this machine where CUDA can count them."""
    say = _Spelling(magic)
    if npartitions is not None:
        if not distribute:
            raise ArgumentError(f"{say('npartitions')} goes with {say('distribute', True)}")
        if not _whole(npartitions) or npartitions < 1:
            raise ArgumentError(
                f"{say('npartitions')} must be a whole number of 1 or more (got {npartitions!r})"
            )
    if client is not None and not distribute:
        raise ArgumentError(
            f"client goes with {say('distribute', True)}: the kernel's own GPU needs no client"
        )
    if device is None:
        return
    if distribute:
        raise ArgumentError(
            f"{say('device')} and {say('distribute')} exclude each other: "
            f"{say('distribute')} uses every worker's own GPU"
        )
    if not _whole(device) or device < 0:
        raise ArgumentError(f"{say('device')} must be a GPU index, 0 or more (got {device!r})")

    count = device_count()
    if count and device >= count:
        raise ArgumentError(f"{say('device')} {device}: this machine has GPUs 0–{count - 1}")


def check_to_cpu(gather: bool = False, client: Any = None) -> None:
    """Refuse what ``to_cpu`` cannot do as asked."""
    if client is not None and not gather:
        raise ArgumentError("client goes with gather=True: a GPU object of the kernel needs none")
