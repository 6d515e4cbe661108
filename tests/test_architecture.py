"""The layout's rules, checked on the source: no import cycles, no redline import hidden inside a
function, the layer order of ARCHITECTURE.md, and a CLI that starts without the heavy packages."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "redline"

#: Lowest layer first, as in ARCHITECTURE.md and pyproject.toml's import-linter contract.
LAYERS: list[set[str]] = [
    {"errors", "eventloop", "jsonio", "textsafety"},
    {"attempt", "plugins", "untrusted"},
    {"hub", "text_encodings", "taxonomy", "images", "attachments"},
    {"datasets"},
    {"generators"},
    {"detectors"},
    {"lve"},
    {"evaluation"},
    {"probes"},
    {"attacks"},
    {"store"},
    {"engine", "report"},
    {"view"},
    {"cli"},
]


def _modules() -> dict[str, Path]:
    modules = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(path: Path, module: str) -> list[tuple[str, ast.AST, bool]]:
    """(imported redline module, node, inside a function or class body?) for every import."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, ast.AST, bool]] = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((a.name, child, nested) for a in child.names if a.name.split(".")[0] == "redline")
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    name = ".".join([*base, child.module] if child.module else base)
                else:
                    name = child.module or ""
                if name.split(".")[0] == "redline":
                    # "from redline.x import y" names the submodule redline.x.y when there is one
                    found.extend((f"{name}.{a.name}", child, nested) for a in child.names)
            visit(child, inner)

    visit(tree, False)
    return found


def _type_checking_block(tree: ast.AST) -> list[ast.If]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING"
    ]


def test_no_redline_import_inside_a_function_or_under_type_checking():
    offenders = []
    for module, path in _modules().items():
        for name, node, nested in _imports(path, module):
            if nested:
                offenders.append(f"{path.relative_to(SRC.parent)}:{node.lineno} imports {name} inside a function")
        for block in _type_checking_block(ast.parse(path.read_text())):
            offenders.append(f"{path.relative_to(SRC.parent)}:{block.lineno} has an 'if TYPE_CHECKING' import block")
    assert not offenders, "\n".join(offenders)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for name, _, _ in _imports(path, module):
            # "from redline.x import y" may import the submodule redline.x.y
            target = name
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target != module:
                graph[module].add(target)
    return graph


def test_no_import_cycles():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            connect(module)
    assert not cycles, f"import cycles: {cycles}"


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 2:
        return None
    for position, names in enumerate(LAYERS):
        if parts[1] in names:
            return position
    return None


def test_imports_only_go_downward():
    upward = []
    for module, targets in _graph().items():
        mine = _layer(module)
        for target in targets:
            theirs = _layer(target)
            if mine is None or theirs is None or theirs < mine:
                continue
            if theirs > mine or module.split(".")[1] != target.split(".")[1]:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports against the layer order:\n" + "\n".join(sorted(upward))


def test_every_top_level_part_has_a_layer():
    names = {m.split(".")[1] for m in _modules() if "." in m}
    known = set().union(*LAYERS) | {"__main__"}
    assert names <= known, f"add {sorted(names - known)} to LAYERS, ARCHITECTURE.md and the import-linter contract"


def test_cli_starts_without_heavy_packages():
    code = (
        "import sys, redline.cli.main; "
        "heavy = ['torch', 'transformers', 'httpx', 'aiohttp', 'jinja2', 'presidio_analyzer', 'spacy', 'datasets', 'yaml', 'ray']; "
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("contract_file", ["pyproject.toml"])
def test_import_linter_contract_lists_the_same_layers(contract_file):
    import tomllib

    config = tomllib.loads((SRC.parents[1] / contract_file).read_text())["tool"]["importlinter"]["contracts"][0]
    layers = [{part.strip().split(".")[1] for part in line.split("|")} for line in reversed(config["layers"])]
    assert layers == LAYERS
