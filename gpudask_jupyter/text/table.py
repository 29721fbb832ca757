"""A small table that shows as aligned text in a terminal and as HTML in a notebook.

Every cell is escaped on the HTML side: worker names, GPU names and variable names are user or
machine strings and must never be interpreted as markup.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Table:
    title: str
    columns: Sequence[str]
    rows: list[Sequence[object]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append(cells)

    def __str__(self) -> str:
        cells = [[str(c) for c in self.columns], *[[str(c) for c in r] for r in self.rows]]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))]
        lines = [self.title]
        if self.rows:
            for n, row in enumerate(cells):
                lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
                if n == 0:
                    lines.append("  " + "  ".join("-" * w for w in widths))
        lines += [f"{label}: {url}" for label, url in self.links]
        lines += self.notes
        return "\n".join(line.rstrip() for line in lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        printer.text(str(self))  # type: ignore[attr-defined]

    def _repr_html_(self) -> str:
        esc = html.escape
        out = [f'<div class="gpudask-table"><strong>{esc(self.title)}</strong>']
        if self.rows:
            out.append('<table style="border-collapse:collapse"><thead><tr>')
            out += [
                f'<th style="text-align:left;padding:2px 8px">{esc(str(c))}</th>'
                for c in self.columns
            ]
            out.append("</tr></thead><tbody>")
            for row in self.rows:
                out.append("<tr>")
                out += [
                    f'<td style="text-align:left;padding:2px 8px">{esc(str(c))}</td>' for c in row
                ]
                out.append("</tr>")
            out.append("</tbody></table>")
        for label, url in self.links:
            safe = url if url.startswith(("http://", "https://")) else ""
            out.append(
                f'<div>{esc(label)}: <a href="{esc(safe)}" target="_blank" rel="noopener">'
                f"{esc(url)}</a></div>"
            )
        out += [f"<div>{esc(note)}</div>" for note in self.notes]
        out.append("</div>")
        return "".join(out)
