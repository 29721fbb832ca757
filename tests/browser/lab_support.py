"""The JupyterLab server under test and screenshots."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ARTIFACTS = Path(__file__).parents[2] / "test-artifacts"


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path
    open_prefix: str  # "lab/tree/" (JupyterLab) or "notebooks/" (Notebook 7)

    def notebook(self, name: str, cells: list[str]) -> str:
        nb = {
            "cells": [
                {
                    "cell_type": "code",
                    "metadata": {},
                    "source": src,
                    "outputs": [],
                    "execution_count": None,
                }
                for src in cells
            ],
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (self.root / name).write_text(json.dumps(nb))
        return f"{self.url}{self.open_prefix}{name}?token={self.token}"


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)
