"""Write the TypeScript the views share with Python, from the modules of gpudask_jupyter/schema/.

Each module of :data:`SOURCES` is the one description of what it holds; the view's
``*.generated.ts`` file beside it is this script's output, committed, and
``tests/cpu/test_schema.py`` fails when a committed file differs from what the script writes now.
Run it after changing a schema module (or the interval/history options):

    python scripts/generate_ts.py

What is written, in the module's order: every public constant (a number, a string, a tuple of
them, a dict of strings: ``export const``), every type alias (a ``Literal`` or a union: ``export
type``), every TypedDict (an ``interface``). The docstring under a name becomes its comment. For
the Frame, ``DeviceReading``'s fields give ``SAMPLE_FIELDS`` and the labelled tuple
``DeviceValues``. The output is formatted as prettier formats it.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import itertools
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
VIEW = ROOT / "labextension" / "src" / "view"
#: schema module -> the TypeScript file written from it
SOURCES = {
    "gpudask_jupyter.schema.frame": VIEW / "frame.generated.ts",
    "gpudask_jupyter.schema.protocol": VIEW / "protocol.generated.ts",
}
WIDTH = 100  # prettier's printWidth


def _header(module: str) -> str:
    path = module.replace(".", "/") + ".py"
    return f"""\
/**
 * Generated from {path} by scripts/generate_ts.py: do not edit
 * (tests/cpu/test_schema.py checks it).
 */
"""


def _module(name: str) -> types.ModuleType:
    return importlib.import_module(name)


def _docstrings(source: str) -> dict[str, dict[str, str]]:
    """``{class: {"": class docstring, field: the docstring under the field}}``; the module's
    own names under the class name ``""``."""
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


def _order(source: str) -> list[str]:
    """The module's top-level names in the order they are defined."""
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            names.append(node.targets[0].id)
    return names


def _comment(text: str, indent: str) -> list[str]:
    words = " ".join(text.replace("``", "`").split())
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


def _key(name: str) -> str:
    return name if name.isidentifier() else _string(name)


def _is_alias(value: Any) -> bool:
    origin = typing.get_origin(value)
    return (
        origin is Literal
        or origin in (types.UnionType, typing.Union)
        or (isinstance(value, types.GenericAlias))
    )


class _Writer:
    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        source = Path(module.__file__ or "").read_text()
        self.docs = _docstrings(source)
        self.order = [name for name in _order(source) if not name.startswith("_")]
        self.aliases = {
            name: getattr(module, name)
            for name in self.order
            if not name.isupper() and _is_alias(getattr(module, name))
        }
        self.reading = getattr(module, "DeviceReading", None)
        self.bases = {
            node.name: [b.id for b in node.bases if isinstance(b, ast.Name)]
            for node in ast.parse(source).body
            if isinstance(node, ast.ClassDef)
        }

    def type(self, hint: Any, by_name: bool = True) -> str:
        """``hint`` in TypeScript; a type equal to an alias of the module is written by its name
        (unless ``by_name`` is false: when writing the alias itself)."""
        for name, value in self.aliases.items():
            if by_name and hint == value:
                return name
        if typing.get_origin(hint) is typing.NotRequired:
            return self.type(typing.get_args(hint)[0])
        if hint is type(None):
            return "null"
        if hint is str:
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
        raise TypeError(f"{self.module.__name__} uses a type the generator cannot write: {hint!r}")

    def _value(self, value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return _number(value)
        if isinstance(value, str):
            return _string(value)
        raise TypeError(f"{self.module.__name__}: a constant the generator cannot write: {value!r}")

    def constant(self, name: str, value: Any) -> list[str]:
        lines = _comment(self.docs[""].get(name, ""), "")
        if name == "SAMPLE_FIELDS" and self.reading is not None:
            docs = self.docs["DeviceReading"]
            fields = dataclasses.fields(self.reading)
            lines.append(f"export const {name} = [")
            for index, field in enumerate(fields):
                comma = "," if index < len(fields) - 1 else ""
                note = f" // {docs[field.name]}" if field.name in docs else ""
                lines.append(f"  {_string(field.name)}{comma}{note}")
            return [*lines, "] as const;"]
        if isinstance(value, tuple | list):
            items = ", ".join(self._value(v) for v in value)
            one_line = f"export const {name} = [{items}] as const;"
            if len(one_line) <= WIDTH:
                return [*lines, one_line]
            body = [f"  {self._value(v)}," for v in value]
            body[-1] = body[-1][:-1]
            return [*lines, f"export const {name} = [", *body, "] as const;"]
        if isinstance(value, dict):
            entries = [f"  {_key(str(k))}: {self._value(v)}," for k, v in value.items()]
            entries[-1] = entries[-1][:-1]
            return [*lines, f"export const {name} = {{", *entries, "} as const;"]
        return [*lines, f"export const {name} = {self._value(value)};"]

    def alias(self, name: str, value: Any) -> list[str]:
        lines = _comment(self.docs[""].get(name, ""), "")
        if name == "DeviceValues" and self.reading is not None:
            hints = typing.get_type_hints(self.reading)
            members = [
                f"{f.name}: {self.type(hints[f.name])}" for f in dataclasses.fields(self.reading)
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
        hints = typing.get_type_hints(cls, include_extras=True)
        named = (getattr(self.module, b, None) for b in self.bases.get(cls.__name__, ()))
        bases = [b for b in named if typing.is_typeddict(b)]
        inherited: set[str] = set()
        for base in bases:
            inherited |= set(typing.get_type_hints(base))
        extends = f" extends {', '.join(b.__name__ for b in bases)}" if bases else ""
        lines = [*_comment(docs.get("", ""), ""), f"export interface {cls.__name__}{extends} {{"]
        for name, hint in hints.items():
            if name in inherited:
                continue
            required = typing.get_origin(hint) is not typing.NotRequired
            optional = "" if required and name in cls.__required_keys__ else "?"
            lines += _comment(docs.get(name, ""), "  ")
            lines.append(f"  {name}{optional}: {self.type(hint)};")
        return [*lines, "}"]

    def blocks(self) -> list[list[str]]:
        """Constants first, then type aliases, then interfaces; each in the module's order."""
        constants, aliases, interfaces = [], [], []
        for name in self.order:
            value = getattr(self.module, name)
            if name.isupper():
                constants.append(self.constant(name, value))
            elif name in self.aliases:
                aliases.append(self.alias(name, value))
            elif typing.is_typeddict(value) and value.__module__ == self.module.__name__:
                interfaces.append(self.interface(value))
        return [*constants, *aliases, *interfaces]


def imports(module: types.ModuleType, body: str) -> list[str]:
    """``import type`` lines for the names a module takes from another schema module."""
    lines = []
    for other, target in SOURCES.items():
        if other == module.__name__:
            continue
        theirs = _module(other)
        used = sorted(
            name
            for name, value in vars(module).items()
            if getattr(theirs, name, None) is value and f": {name}" in body
        )
        if used:
            lines.append(f"import type {{ {', '.join(used)} }} from './{target.stem}';")
    return lines


def render(name: str, module: types.ModuleType | None = None) -> str:
    """The generated file's text for schema module ``name`` (or for ``module``, a version of it
    that is not the installed one: a test's)."""
    module = module or _module(name)
    blocks = _Writer(module).blocks()
    body = "\n\n".join("\n".join(block) for block in blocks)
    head = imports(module, body)
    parts = [_header(name)]
    if head:
        parts.append("\n".join(head) + "\n")
    return "\n".join([*parts, body]) + "\n"


def main() -> None:
    # run as a script, the checkout's package is the one rendered; imported (by the tests), the
    # path is left as it is, so that no later import finds the checkout instead of what is installed
    sys.path.insert(0, str(ROOT))
    for name, target in SOURCES.items():
        target.write_text(render(name))


if __name__ == "__main__":
    main()
