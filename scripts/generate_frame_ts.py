"""Write the Frame's TypeScript types and constants from gpudask_jupyter/frame.py.

The Python module is the one description of the Frame; the view's ``frame.generated.ts`` is this
script's output, committed, and ``tests/test_frame_schema.py`` fails when it differs from what
the script writes now. Run it after changing frame.py (or the interval/history options):

    python scripts/generate_frame_ts.py

What is exported, in frame.py's order: every TypedDict (an interface), every module-level
type alias (a type), ``DeviceReading``'s fields (``SAMPLE_FIELDS``, and ``DeviceValues`` as a
labelled tuple), ``VERSION`` and the interval/history ranges and defaults. Field comments are
the docstrings written under the fields. The output is formatted as prettier formats it.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "labextension" / "src" / "view" / "frame.generated.ts"
WIDTH = 100  # prettier's printWidth

HEADER = """\
/**
 * The Frame's types and constants, generated from gpudask_jupyter/frame.py by
 * scripts/generate_frame_ts.py: do not edit (tests/test_frame_schema.py checks it).
 * Helpers that only the view needs are in frame.ts.
 */
"""


def _frame_module() -> types.ModuleType:
    sys.path.insert(0, str(ROOT))
    from gpudask_jupyter import frame

    return frame


def _docstrings(source: str) -> dict[str, dict[str, str]]:
    """``{class: {"": class docstring, field: the docstring under the field}}``; the module's
    own aliases under the class name ``""``."""
    found: dict[str, dict[str, str]] = {}

    def scan(owner: str, body: list[ast.stmt]) -> None:
        docs = found.setdefault(owner, {})
        for before, after in itertools.pairwise(body):
            target = None
            if isinstance(before, ast.AnnAssign) and isinstance(before.target, ast.Name):
                target = before.target.id
            elif isinstance(before, ast.Assign) and isinstance(before.targets[0], ast.Name):
                target = before.targets[0].id
            if target and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                docs[target] = str(after.value.value)

    tree = ast.parse(source)
    scan("", tree.body)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            scan(node.name, node.body)
            found[node.name][""] = ast.get_docstring(node) or ""
    return found


def _comment(text: str, indent: str) -> list[str]:
    words = " ".join(text.split())
    if not words:
        return []
    if len(indent) + len(words) + 7 <= WIDTH:
        return [f"{indent}/** {words} */"]
    lines, line = [], ""
    for word in words.split():
        if line and len(indent) + 3 + len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return [f"{indent}/**", *(f"{indent} * {line}" for line in lines), f"{indent} */"]


def _number(value: float) -> str:
    return json.dumps(int(value) if float(value).is_integer() else value)


def _string(value: str) -> str:
    return "'" + json.dumps(value)[1:-1].replace("'", "\\'") + "'"


class _Writer:
    def __init__(self, frame: types.ModuleType) -> None:
        self.frame = frame
        self.docs = _docstrings(Path(frame.__file__ or "").read_text())
        self.aliases = {
            name: value
            for name, value in vars(frame).items()
            if not name.startswith("_")
            and (typing.get_origin(value) is Literal or isinstance(value, types.GenericAlias))
        }
        self.interfaces = [
            value
            for value in vars(frame).values()
            if typing.is_typeddict(value) and value.__module__ == frame.__name__
        ]

    def type(self, hint: Any, by_name: bool = True) -> str:
        """``hint`` in TypeScript; a type equal to an alias of frame.py is written by its name
        (unless ``by_name`` is false: when writing the alias itself)."""
        for name, value in self.aliases.items():
            if by_name and hint == value:
                return name
        if hint is type(None):
            return "null"
        if hint in (str,):
            return "string"
        if hint in (int, float):
            return "number"
        if hint is bool:
            return "boolean"
        if typing.is_typeddict(hint):
            return str(hint.__name__)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is Literal:
            return " | ".join(_string(a) for a in args)
        if origin in (types.UnionType, typing.Union):
            return " | ".join(self.type(a) for a in args)
        if origin is list:
            inner = self.type(args[0])
            return f"({inner})[]" if " | " in inner else f"{inner}[]"
        if origin is dict and args[0] is str:
            return f"Record<string, {self.type(args[1])}>"
        raise TypeError(f"frame.py uses a type the generator cannot write: {hint!r}")

    def constants(self) -> list[str]:
        frame = self.frame
        reading = dataclasses.fields(frame.DeviceReading)
        docs = self.docs["DeviceReading"]
        lines = [
            "/** Frames of another version are refused by the view, with a message. */",
            f"export const VERSION = {frame.VERSION};",
            "",
            "/** The per-device values of a sample, in their order on the wire (DeviceReading). */",
            "export const SAMPLE_FIELDS = [",
        ]
        for index, field in enumerate(reading):
            comma = "," if index < len(reading) - 1 else ""
            note = f" // {docs[field.name]}" if field.name in docs else ""
            lines.append(f"  {_string(field.name)}{comma}{note}")
        lines += ["] as const;", ""]
        for name in ("INTERVAL_RANGE", "HISTORY_RANGE"):
            low, high = getattr(frame, name)
            lines.append(f"export const {name} = [{_number(low)}, {_number(high)}] as const;")
        for name in ("DEFAULT_INTERVAL", "DEFAULT_HISTORY"):
            lines.append(f"export const {name} = {_number(getattr(frame, name))};")
        return lines

    def alias(self, name: str, value: Any) -> list[str]:
        lines = _comment(self.docs[""].get(name, ""), "")
        if name == "DeviceValues":  # a labelled tuple: DeviceReading's fields in their order
            hints = typing.get_type_hints(self.frame.DeviceReading)
            members = [
                f"{f.name}: {self.type(hints[f.name])}"
                for f in dataclasses.fields(self.frame.DeviceReading)
            ]
            items = [f"  {m}," for m in members[:-1]] + [f"  {members[-1]}"]
            return [*lines, f"export type {name} = [", *items, "];"]
        body = self.type(value, by_name=False)
        one_line = f"export type {name} = {body};"
        if len(one_line) <= WIDTH:
            return [*lines, one_line]
        *parts, last = body.split(" | ")
        return [*lines, f"export type {name} =", *(f"  | {p}" for p in parts), f"  | {last};"]

    def interface(self, cls: Any) -> list[str]:
        docs = self.docs.get(cls.__name__, {})
        hints = typing.get_type_hints(cls)
        lines = [*_comment(docs.get("", ""), ""), f"export interface {cls.__name__} {{"]
        for name, hint in hints.items():
            optional = "?" if name in cls.__optional_keys__ else ""
            lines += _comment(docs.get(name, ""), "  ")
            lines.append(f"  {name}{optional}: {self.type(hint)};")
        return [*lines, "}"]


def render() -> str:
    """The generated file's text."""
    writer = _Writer(_frame_module())
    blocks = [writer.constants()]
    blocks += [writer.alias(name, value) for name, value in writer.aliases.items()]
    blocks += [writer.interface(cls) for cls in writer.interfaces]
    return HEADER + "\n" + "\n\n".join("\n".join(block) for block in blocks) + "\n"


def main() -> None:
    TARGET.write_text(render())


if __name__ == "__main__":
    main()
