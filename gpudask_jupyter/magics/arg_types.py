"""Argument types of the magics: each turns one word into a value, or raises
``argparse.ArgumentTypeError`` with a sentence argparse shows as is (after the option's name).

Sizes, durations, ``--gpus`` and the dashboard address are parsed by the modules that use them;
these functions put that into argparse's terms and add the few forms only the magics take (a
fraction of memory, a keyword such as ``auto``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from ..cluster.options import parse_dashboard, parse_resources
from ..machine.gpus import parse_spec
from ..text.units import parse_bytes, parse_seconds


def _whole_number(text: str, what: str, least: int) -> int:
    """``text`` as an int of at least ``least``; the error names ``what`` was expected."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {least} or more, got {value}")
    return value


def positive_int(text: str) -> int:
    return _whole_number(text, "a whole number", 1)


def n_workers(text: str) -> int:
    return _whole_number(text, "a number of workers", 0)


def gpu_list(text: str) -> list[int | str]:
    try:
        return parse_spec(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--gpus: ")) from None


#: larger sizes are surely a typo (and overflow the libraries' integers): 1 EiB
MAX_SIZE = 2**60


def size_or_fraction(*keywords: str) -> Callable[[str], int | float | str | None]:
    def parse(text: str) -> int | float | str | None:
        lowered = text.strip().lower()
        if lowered in keywords:
            return lowered
        if lowered in {"none", "0"} and "none" in keywords:
            return 0
        try:
            fraction = float(lowered)
        except ValueError:
            pass
        else:
            if not math.isfinite(fraction):
                raise argparse.ArgumentTypeError(f"{text!r} is not a finite size")
            if 0 < fraction <= 1:
                return fraction
            if fraction <= 0:
                raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
        try:
            size = parse_bytes(text)
        except (ValueError, OverflowError):
            choices = ", ".join(k for k in keywords) + ", " if keywords else ""
            raise argparse.ArgumentTypeError(
                f"expected {choices}a size like 16GB or a fraction like 0.8, got {text!r}"
            ) from None
        if size > MAX_SIZE:
            raise argparse.ArgumentTypeError(f"{text!r} is larger than any machine's memory")
        return size

    return parse


def seconds(text: str) -> float:
    try:
        return parse_seconds(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def dashboard_address(text: str) -> str:
    try:
        return parse_dashboard(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def resources(text: str) -> dict[str, float]:
    try:
        return parse_resources(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def variable_name(text: str) -> str:
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not a variable name")
    return text


def gpu_number(text: str) -> int:
    return _whole_number(text, "a GPU number", 0)


def name_value(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` (a gateway's cluster option)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name.strip(), value.strip()
