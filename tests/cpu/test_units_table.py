from __future__ import annotations

import pytest

from gpudask_jupyter.text.table import Table
from gpudask_jupyter.text.units import format_bytes, parse_bytes, parse_seconds


@pytest.mark.parametrize(
    ("text", "value"),
    [("16GB", 16 * 10**9), ("1.5 GiB", 3 * 2**29), ("4096", 4096), ("512MiB", 2**29), (10, 10)],
)
def test_parse_bytes(text: str | int, value: int) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["lots", "-1", "5 parsecs", "", "kB", "1e999"])
def test_parse_bytes_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_bytes(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [("1.5h", 5400), ("2 minutes", 120), ("250us", 250e-6), ("10 sec", 10), ("3", 3)],
)
def test_durations_are_read_as_dask_reads_them(text: str, value: float) -> None:
    import dask.utils

    assert parse_seconds(text) == pytest.approx(value)
    if "sec" not in text:  # "10 sec" and "2min" are ours beside dask's "10s", "2m"
        assert parse_seconds(text) == pytest.approx(dask.utils.parse_timedelta(text))


def test_seconds_and_format() -> None:
    assert parse_seconds("500ms") == 0.5
    assert parse_seconds("2min") == 120
    assert format_bytes(141 * 2**30) == "141 GiB"
    with pytest.raises(ValueError, match="not a duration"):
        parse_seconds("soon")


def test_table_escapes_html_and_aligns_text() -> None:
    table = Table("t <b>", ["name", "value"])
    table.add("<img src=x onerror=alert(1)>", 1)
    table.links.append(("dashboard", "javascript:alert(1)"))
    html = table._repr_html_()
    assert "<img" not in html and "&lt;img" in html
    assert 'href="javascript' not in html
    text = str(table)
    assert text.splitlines()[1].startswith("  name")
