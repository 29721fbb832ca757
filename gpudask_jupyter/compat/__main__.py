"""``python -m gpudask_jupyter.compat``: what each installed library lacks of the private calls
this package makes, and what the package does without each (exit status 1 where any lacks)."""

from __future__ import annotations

import logging
import sys

from .probes import report


def main() -> int:
    logging.basicConfig(level=logging.ERROR)  # the lacks are printed below, once
    lacking = 0
    for distribution, release, lacks in report():
        if release is None:
            print(f"{distribution}: not installed")
            continue
        if not lacks:
            print(f"{distribution} {release}: offers every call")
        for lack in lacks:
            lacking += 1
            print(lack.sentence())
    return 1 if lacking else 0


if __name__ == "__main__":
    sys.exit(main())
