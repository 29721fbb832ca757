"""The shape of the package, checked: folders by concern, no import cycle, sizes that ask why,
one name for one thing, no measured figure outside the README, and no library's private name
reached outside ``compat``.

Import cycles are counted over every import of a package module, lazy ones inside functions and
type-only ones under ``if TYPE_CHECKING:`` included (a type-only cycle costs nothing at run time,
but ties two modules together for every reader).

The sizes are an alarm, not a line to cut along: a module over :data:`MAX_MODULE_LINES` or a
function over :data:`MAX_FUNCTION_LINES` says why in a comment starting ``# size:`` (in the
module's first lines, or the function's), which a reader can then weigh.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "gpudask_jupyter"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
#: the only modules outside a folder: what every folder uses
TOP_LEVEL = {"gpudask_jupyter", "gpudask_jupyter.config", "gpudask_jupyter.errors"}
#: a measured figure: a rate, a percentage, a ratio, a time in ms or µs, or the words of a report
FIGURE = re.compile(
    r"(?<![\w\"'])\d[\d.,]*\s?(?:GB/s|MB/s|GiB/s|tasks/s|ms\b|µs|%|×)"
    r"|×\s?\d|\b(?:measured on|medians? of)\b|\bH200 host",
    re.IGNORECASE,
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if "labextension" in parts or "static" in parts:
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        base = module.split(".")
        base = base if is_package else base[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    yield prefix
    for alias in node.names:
        yield f"{prefix}.{alias.name}"


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        edges = set()
        for node in _imports(tree):
            for target in _targets(name, path.name == "__init__.py", node):
                if target in modules and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle() -> None:
    # a package's __init__ that only re-exports its submodules is not a cycle of design
    graph = _graph()
    for name, edges in graph.items():
        graph[name] = {t for t in edges if not name.startswith(t + ".")}
    assert _cycles(graph) == []


def test_the_cycle_check_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _says_why(lines: list[str]) -> bool:
    return any(line.strip().startswith("# size:") for line in lines)


def test_long_modules_and_functions_say_why() -> None:
    unexplained = {}
    for name, path in _modules().items():
        text = path.read_text()
        lines = text.splitlines()
        if len(lines) > MAX_MODULE_LINES and not _says_why(lines[:40]):
            unexplained[name] = len(lines)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                body = lines[node.lineno - 1 : node.lineno + 10]
                if length > MAX_FUNCTION_LINES and not _says_why(body):
                    unexplained[f"{name}.{node.name}"] = length
    assert unexplained == {}


def test_only_what_every_folder_uses_sits_outside_a_folder() -> None:
    loose = {name for name, path in _modules().items() if path.parent == PACKAGE}
    assert loose == TOP_LEVEL


def test_every_folder_says_what_it_holds() -> None:
    for init in PACKAGE.rglob("__init__.py"):
        if "static" in init.parts or "labextension" in init.parts:
            continue
        assert ast.get_docstring(ast.parse(init.read_text())), init


#: what the package's own ``__init__`` may hold beyond re-exports: its version, the lazy
#: attributes that keep ``import gpudask_jupyter`` light (PEP 562), Jupyter's hooks, and the
#: wiring only the root may do
TOP_INIT_EXTRAS = {
    "__version__",
    "_LAZY",
    "__getattr__",
    "__dir__",
    "_tell_conversions_of_the_room",  # the root wires the room into the conversions
}


def _does_something(node: ast.stmt, top: bool) -> bool:
    """Whether a statement of an ``__init__`` does more than re-export."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        return False
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return False  # the docstring
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        return not (names <= {"__all__"} or (top and names <= TOP_INIT_EXTRAS))
    if top and isinstance(node, ast.FunctionDef):
        return node.name not in TOP_INIT_EXTRAS and not node.name.startswith("_jupyter_")
    return True


def test_an_init_module_re_exports_and_does_nothing_else() -> None:
    """Logic and state live in modules whose names say what they hold; a folder's
    ``__init__`` says what the folder holds and gathers its names for callers."""
    busy = []
    for name, path in _modules().items():
        if path.name != "__init__.py":
            continue
        top = name == "gpudask_jupyter"
        for node in ast.parse(path.read_text()).body:
            if _does_something(node, top):
                busy.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert busy == []


def test_the_init_check_finds_logic() -> None:
    tree = ast.parse("x = 1\ndef f():\n    pass\n__all__ = ['f']\nfrom . import y\n")
    assert [_does_something(node, top=False) for node in tree.body] == [True, True, False, False]


def test_no_two_modules_share_a_name() -> None:
    names = Counter(path.stem for path in _modules().values() if path.stem != "__init__")
    assert [name for name, count in names.items() if count > 1] == []


def _figures(text: str) -> list[tuple[int, str]]:
    """(line, figure) of every measured figure in the comments and docstrings of ``text``."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        is_doc = token.type == tokenize.STRING and token.string.lstrip("rbuRBU").startswith('"""')
        if token.type == tokenize.COMMENT or is_doc:
            for match in FIGURE.finditer(token.string):
                line = token.start[0] + token.string[: match.start()].count("\n")
                found.append((line, match.group(0)))
    return found


def test_no_measured_figure_stands_in_a_docstring_or_comment() -> None:
    # figures are measured by benchmarks/ and live in the README's performance table only
    found = {
        f"{path.relative_to(PACKAGE.parent)}:{line}": figure
        for path in _modules().values()
        for line, figure in _figures(path.read_text())
    }
    assert found == {}


@pytest.mark.parametrize(
    ("text", "figures"),
    [
        ('"""Ran at 41.8 GB/s against 51.0 GB/s."""', ["41.8 GB/s", "51.0 GB/s"]),
        ("x = 1  # about 0.4 ms of the kernel's CPU, 3% more\n", ["0.4 ms", "3%"]),
        ('"""Measured on an H200 host: 5.2× the library."""', ["Measured on", "H200 host", "5.2×"]),
        ('"""Parse "500ms" or "2min"."""', []),
        ('s = "12 GB/s"  # a string, not a docstring\n', []),
    ],
)
def test_the_figure_check_finds_figures(text: str, figures: list[str]) -> None:
    assert [figure for _, figure in _figures(text)] == figures


#: names with a leading underscore that their library documents as public
PUBLIC_UNDERSCORED = {"os._exit"}


def _private_reaches(text: str) -> list[str]:
    """Where code reaches another library's private name through that library's module: an
    attribute with one leading underscore of a name it imported from outside the package, or
    such a name imported itself (an object's private attributes: :func:`_private_attributes`)."""
    tree = ast.parse(text)
    imported: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            ours = [a for a in node.names if a.name.startswith(PACKAGE.name)]
            imported |= {a.asname or a.name.partition(".")[0] for a in node.names if a not in ours}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            if (node.module or "").startswith(PACKAGE.name):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"from {node.module} import {alias.name}")
                imported.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if node.attr.startswith("__") or not isinstance(base, ast.Name):
            continue
        if base.id in imported and ast.unparse(node) not in PUBLIC_UNDERSCORED:
            found.append(ast.unparse(node))
    return found


def test_no_private_name_of_a_library_is_reached_outside_compat() -> None:
    reaches = {
        name: found
        for name, path in _modules().items()
        if ".compat" not in name and (found := _private_reaches(path.read_text()))
    }
    assert reaches == {}


def test_the_private_name_check_finds_them() -> None:
    text = (
        "import os\nfrom multiprocessing import resource_tracker as rt, util\n"
        "from distributed.utils import _forkserver_preload_set\n"
        "from gpudask_jupyter import _ours\n"
        "def f(self):\n"
        "    os._exit(0); self._mine = 1; util._args_from_interpreter_flags()\n"
        "    return rt._resource_tracker._fd\n"
    )
    assert sorted(_private_reaches(text)) == [
        "from distributed.utils import _forkserver_preload_set",
        "rt._resource_tracker",
        "rt._resource_tracker._fd",
        "util._args_from_interpreter_flags",
    ]


def _own_names(trees: list[ast.AST]) -> set[str]:
    """Every name the package defines: functions, classes, attributes and variables it stores,
    arguments, keywords and the names it imports under."""
    own: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.alias):
                own.add(node.asname or node.name.rpartition(".")[2])
            elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
                own.add(node.arg)
    return own


def _private_attributes(tree: ast.AST, own: set[str]) -> list[str]:
    """Where code reads a private attribute of an object that no code of the package defines
    (``parser._actions``): another library's, reached through one of its objects."""
    return [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and node.attr not in own
        and ast.unparse(node) not in PUBLIC_UNDERSCORED
    ]


def test_no_private_attribute_of_a_library_object_is_read_outside_compat() -> None:
    trees = {name: ast.parse(path.read_text()) for name, path in _modules().items()}
    own = _own_names(list(trees.values()))
    reaches = {
        name: found
        for name, tree in trees.items()
        if ".compat" not in name and (found := _private_attributes(tree, own))
    }
    assert reaches == {}


def test_the_private_attribute_check_finds_them() -> None:
    ours = ast.parse("class A:\n    def _mine(self):\n        self._kept = 1\n")
    text = ast.parse("def f(parser, a):\n    a._mine(); a._kept\n    return parser._actions\n")
    assert _private_attributes(text, _own_names([ours, text])) == ["parser._actions"]


def _folder_graph() -> dict[str, set[str]]:
    """Folders (packages) and the folders their modules import; a module outside every folder
    (:data:`TOP_LEVEL`) is left out: every folder may use it."""
    modules = _modules()

    def folder(name: str) -> str:
        return name if modules[name].name == "__init__.py" else name.rpartition(".")[0]

    graph: dict[str, set[str]] = {}
    for name, edges in _graph().items():
        if name in TOP_LEVEL:
            continue
        here = folder(name)
        graph.setdefault(here, set()).update(
            folder(t) for t in edges if t not in TOP_LEVEL and folder(t) != here
        )
    return graph


def test_no_folder_imports_a_folder_that_imports_it_back() -> None:
    assert _cycles(_folder_graph()) == []


def test_the_folder_cycle_check_finds_cycles() -> None:
    graph = {"p.lifecycle": {"p.cluster"}, "p.cluster": {"p.lifecycle"}, "p.machine": set()}
    assert _cycles(graph) == [["p.cluster", "p.lifecycle"]]


#: what marks a module's mutable state as one per process, and says why
PER_PROCESS = "# per process:"


#: what a module-level call makes that is not state: type variables, context variables (each
#: thread and task sees its own), loggers
NOT_STATE = {"TypeVar", "ContextVar", "getLogger", "compile", "frozenset", "Path", "dataclass"}


def _makes_state(func: ast.expr) -> bool:
    """Whether calling ``func`` at a module's top makes mutable state: an instance of a class
    (``Holder()``, ``_Recent()``) or a lock or event (``threading.Lock()``)."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name not in NOT_STATE and name.lstrip("_")[:1].isupper()


def _said_above(lines: list[str], index: int) -> bool:
    """Whether line ``index``, or one of the block of lines just above it (up to a blank
    line), says why its state is one per process."""
    while index >= 0 and lines[index].strip():
        if PER_PROCESS in lines[index]:
            return True
        index -= 1
    return False


def _module_state(path: Path) -> list[str]:
    """The names a module keeps mutable state in: those a function rebinds (``global``), and
    instances, locks and events made at the top of the module (``name = Class()``), whose line
    (or the block of lines above it) does not say why there is one per process."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    rebound = {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}
    found = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        value = getattr(node, "value", None)
        made = isinstance(value, ast.Call) and _makes_state(value.func)
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            kept = target.id in rebound or (made and not target.id.isupper())
            if kept and not _said_above(lines, node.lineno - 1):
                found.append(target.id)
    return found


def test_state_kept_in_a_module_says_why_it_is_one_per_process() -> None:
    """A kernel's state is its extension's (:mod:`gpudask_jupyter.magics.extension`); what a
    module keeps is what a library or the operating system keeps once per process, said so."""
    kept = {name: found for name, path in _modules().items() if (found := _module_state(path))}
    assert kept == {}


def test_the_state_check_finds_unexplained_state(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import threading\n_lock = threading.Lock()\n_seen = False\n"
        "registry = Registry()\nT = TypeVar('T')\n"
        "# per process: the library keeps one\nhandle = Handle()\n"
        "def f():\n    global _seen\n    _seen = True\n"
    )
    assert _module_state(module) == ["_lock", "_seen", "registry"]


#: what marks a package import inside a function, and says why it cannot be at the module's top
LAZY = "# lazy:"


def _unexplained_lazy_imports(text: str) -> list[int]:
    """The lines of imports of the package's own modules (relative, or ``gpudask_jupyter``)
    made inside a function with no ``# lazy:`` comment saying why: on the line, or just above
    the block of imports it opens (a comment of several lines may start with it)."""
    lines = text.splitlines()
    tree = ast.parse(text)
    import_lines = {
        line
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }

    def ours(node: ast.Import | ast.ImportFrom) -> bool:
        if isinstance(node, ast.ImportFrom):
            return node.level > 0 or (node.module or "").split(".")[0] == PACKAGE.name
        return any(alias.name.split(".")[0] == PACKAGE.name for alias in node.names)

    def explained(lineno: int) -> bool:
        if LAZY in lines[lineno - 1]:
            return True
        index = lineno - 2  # up over the block's imports (isort's groups, blank lines between)
        while index >= 0 and (index + 1 in import_lines or not lines[index].strip()):
            index -= 1
        while index >= 0 and lines[index].strip().startswith("#"):
            if lines[index].strip().startswith(LAZY):
                return True
            index -= 1
        return False

    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        found += [
            node.lineno
            for node in ast.walk(function)
            if isinstance(node, ast.Import | ast.ImportFrom)
            and ours(node)
            and not explained(node.lineno)
        ]
    return sorted(set(found))


def test_a_package_import_inside_a_function_says_why_it_is_lazy() -> None:
    """An import at a module's top shows what the module depends on; one inside a function is
    kept for a reason a reader needs (the package's import stays cheap, the module travels by
    value to processes without the package, a heavy library), said in a ``# lazy:`` comment."""
    unexplained = {
        name: lines
        for name, path in _modules().items()
        if (lines := _unexplained_lazy_imports(path.read_text()))
    }
    assert unexplained == {}


def test_the_lazy_import_check_finds_unexplained_ones() -> None:
    text = (
        "import os\n"
        "def a():\n    import json\n    from . import x\n"  # 4: not said
        "def b():\n    # lazy: x imports this module\n    from . import x\n    from .y import z\n"
        "def c():\n    import json\n\n    from gpudask_jupyter import x  # lazy: heavy\n"
        "def d():\n    # lazy: for the block\n    import json\n\n    from . import x\n"
        "def e():\n    # lazy: for x only\n    from . import x\n    x.go()\n    from . import y\n"
    )
    assert _unexplained_lazy_imports(text) == [4, 22]


#: the room's core: caps and placement as a function of a typed reading of the machine and of
#: proved leases, with no I/O (the modules beside it read the machine and the lease files)
ROOM_CORE = {
    "gpudask_jupyter.cluster.room.holding",
    "gpudask_jupyter.cluster.room.placement",
    "gpudask_jupyter.cluster.room.shares",
}
#: what the core may import: the standard library's pure parts, the package's errors and units,
#: and the records it computes on (a GPU as NVML names it, a lease as its file says)
CORE_IMPORTS = {
    "__future__",
    "collections.abc",
    "dataclasses",
    "logging",
    "math",
    "typing",
    "gpudask_jupyter.errors",
    "gpudask_jupyter.text.units",
    "gpudask_jupyter.machine.nvml.Device",
    "gpudask_jupyter.cluster.room.leases.Lease",
}
#: calls that reach the machine, the files or the clock
IO_CALLS = {"open", "getuid", "getpid", "time", "monotonic", "read", "run", "Popen", "stat"}


def _core_reaches(module: str, text: str) -> list[str]:
    """What module ``module``'s source imports or calls beyond :data:`CORE_IMPORTS` and the
    core itself."""
    found = []
    tree = ast.parse(text)
    for node in _imports(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name not in CORE_IMPORTS]
            continue
        prefix = next(_targets(module, False, node))
        for alias in node.names:
            name = f"{prefix}.{alias.name}"
            allowed = {prefix, name} & (CORE_IMPORTS | ROOM_CORE)
            if not allowed and not any(name.startswith(core + ".") for core in ROOM_CORE):
                found.append(name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in IO_CALLS:
                found.append(f"{name}()")
    return found


def test_the_room_core_reads_nothing_itself() -> None:
    modules = _modules()
    reaches = {m: found for m in ROOM_CORE if (found := _core_reaches(m, modules[m].read_text()))}
    assert reaches == {}


def test_the_core_check_finds_what_reads() -> None:
    text = (
        "import os\nfrom ...machine import processes\nfrom .leases import Lease, RoomDir\n"
        "from . import holding\nfrom .placement import MIN_SHARE\n"
        "def f():\n    return os.getuid(), open('x')\n"
    )
    found = _core_reaches("gpudask_jupyter.cluster.room.shares", text)
    assert found == [
        "os",
        "gpudask_jupyter.machine.processes",
        "gpudask_jupyter.cluster.room.leases.RoomDir",
        "getuid()",
        "open()",
    ]


# -- the public surface ---------------------------------------------------------------------------

ROOT = PACKAGE.parent
#: modules the documentation runs as commands (``python -m ...``): public by their name alone
COMMANDS = {"gpudask_jupyter.cluster.gateway_worker"}
PACKAGE_NAME = re.compile(r"\bgpudask_jupyter(?:\.[A-Za-z_]\w*)*")


def _users_text() -> dict[str, str]:
    """What users read and run: the notebooks' code cells, the README and the user guides."""
    import json

    texts = {}
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        texts[notebook.name] = "\n".join(code)
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        texts[page.name] = page.read_text()
    return texts


def _beyond_the_surface(text: str, public: set[str]) -> list[str]:
    """Names of the package in ``text`` that are neither its root, a public name of the root
    nor a documented command."""
    found = []
    for match in PACKAGE_NAME.finditer(text):
        name = match.group(0)
        parts = name.split(".")
        if name == "gpudask_jupyter" or name in COMMANDS or parts[1] in public:
            continue
        found.append(name)
    return found


def test_notebooks_and_guides_use_only_the_public_surface() -> None:
    """What the root names (``__all__``) is the package's public surface, and ``dir()`` of the
    root (a notebook's tab completion) offers exactly that; the notebooks and the guides reach
    nothing else, so that a module's name can change without breaking what users were shown."""
    import gpudask_jupyter

    public = set(gpudask_jupyter.__all__)
    assert dir(gpudask_jupyter) == sorted([*public, "__version__"])
    for name in public:
        assert getattr(gpudask_jupyter, name).__doc__, name
    beyond = {
        where: found
        for where, text in _users_text().items()
        if (found := _beyond_the_surface(text, public))
    }
    assert beyond == {}


def test_the_surface_check_finds_internal_names() -> None:
    text = (
        "from gpudask_jupyter.machine import nvml\nimport gpudask_jupyter\n"
        "gpudask_jupyter.to_gpu(x)\npython -m gpudask_jupyter.cluster.gateway_worker\n"
        "see gpudask_jupyter.cluster.room.measure.Reader"
    )
    found = _beyond_the_surface(text, {"to_gpu"})
    assert found == ["gpudask_jupyter.machine", "gpudask_jupyter.cluster.room.measure.Reader"]
