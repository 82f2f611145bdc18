"""The house's shape, checked from the source: the pure core imports nothing outside it, no two modules
depend on each other at run time, and no import runs back up the layers of docs/architecture.md.

The graph is built from the AST of every module under ``src/agentstudy``: every ``import`` and
``from … import`` counts, also one inside a function (it runs when the function does); only imports
under ``if TYPE_CHECKING:`` are left out (they never run). ``from package import name`` is an edge to
the submodule ``package.name`` when there is one, else to ``package``. A module that calls
``importlib.import_module`` also imports every ``agentstudy`` module it names in a string constant (the
agent registry's modules, issue 42): an import by name runs all the same.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "agentstudy"
CORE = ("protocol", "stream", "pricing", "fsm")

LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "__main__", "commands"),
    ("controlled", "adjudication", "web", "rehearsal.adjudicator_policy"),
    ("runners", "report"),
    ("agents", "transports", "rehearsal.codex_run"),
    ("rehearsal",),
    ("io",),
    ("protocol", "stream", "pricing", "fsm", ""),
)
"""docs/architecture.md's layers, top first, as module prefixes under ``agentstudy`` (the longest prefix
places a module; ``""`` is the package itself, its ``__version__``). A module may import its own layer
and every layer below it, never one above."""


def _name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in sorted(PACKAGE.rglob("*.py")) if "corpora" not in path.parts}


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """``(imported name, line)`` of every import of ``module`` that runs (``TYPE_CHECKING`` blocks left out)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]

    def walk(node: ast.AST) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for other in child.orelse:
                    yield from walk_one(other)
                continue
            yield from walk_one(child)

    def walk_one(child: ast.AST) -> Iterator[tuple[str, int]]:
        if isinstance(child, ast.Import):
            yield from ((alias.name, child.lineno) for alias in child.names)
        elif isinstance(child, ast.ImportFrom):
            base = ".".join([*package[:len(package) - child.level + 1], *([child.module] if child.module else [])]
                            ) if child.level else (child.module or "")
            yield base, child.lineno
            yield from ((f"{base}.{alias.name}", child.lineno) for alias in child.names)
        yield from walk(child)

    tree = ast.parse(path.read_text(encoding="utf-8"))
    yield from walk(tree)
    if any(isinstance(node, ast.Attribute) and node.attr == "import_module" for node in ast.walk(tree)):
        yield from ((node.value, node.lineno) for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in MODULES)


@cache
def _edges() -> dict[str, dict[str, int]]:
    """module -> {agentstudy module it imports at run time: first line}."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in MODULES.items():
        targets: dict[str, int] = {}
        for name, line in _imported(module, path):
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.setdefault(name, line)
        graph[module] = targets
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for node in graph:
        if node not in index:
            visit(node)
    return found


def _layer(module: str) -> int:
    inner = module.removeprefix("agentstudy").removeprefix(".")
    best, rank = -1, -1
    for position, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (inner == prefix or inner.startswith(prefix + ".") or prefix == "") and len(prefix) > best:
                best, rank = len(prefix), position
    return rank


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if _layer(m) < 0 or (m != "agentstudy" and _layer(m) == len(LAYERS) - 1
                                                     and m.split(".")[1] not in CORE)] == []


def _described(graph: dict[str, dict[str, int]]) -> list[str]:
    return [" <-> ".join(cycle) + ": " + "; ".join(
        f"{a} line {graph[a][b]} imports {b}" for a in cycle for b in graph[a] if b in cycle)
        for cycle in _cycles(graph)]


def test_no_two_modules_depend_on_each_other_at_run_time() -> None:
    described = _described(_edges())
    assert described == [], "\n".join(described)


def test_a_transport_never_imports_the_agent_registry() -> None:
    """The agent seam owns the lookup by name; a transport is handed its ``AgentCli`` (issue 42)."""
    assert [module for module, targets in _edges().items()
            if module.startswith("agentstudy.transports.") and "agentstudy.agents.registry" in targets] == []


def test_the_circle_check_sees_a_circle() -> None:
    """The same check on a graph with the transport's old lookup by name put back finds that circle."""
    graph = {module: dict(targets) for module, targets in _edges().items()}
    graph["agentstudy.transports.cli"]["agentstudy.agents.registry"] = 1
    assert any("agentstudy.transports.cli" in cycle and "agentstudy.agents.registry" in cycle
               for cycle in _cycles(graph))


def test_an_import_by_name_is_an_edge() -> None:
    """The registry imports its agent modules by name (``importlib``): the graph sees those edges."""
    assert {"agentstudy.agents.claude_code", "agentstudy.agents.codex"} <= set(_edges()["agentstudy.agents.registry"])


def test_no_import_runs_up_the_layers() -> None:
    upward = [f"{module} line {line} imports {target} (layer {LAYERS[_layer(target)][0]} is above "
              f"{LAYERS[_layer(module)][0]})"
              for module, targets in _edges().items() for target, line in targets.items()
              if _layer(target) < _layer(module)]
    assert upward == [], "\n".join(upward)


PROBE = """
import json, sys
for name in {modules!r}:
    __import__(name)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("agentstudy.") and m.split(".")[1] not in {core!r})))
"""


def test_the_pure_core_imports_nothing_outside_it() -> None:
    """A fresh interpreter imports every core module: what it then holds of agentstudy lies in the core (the
    union of what each module loads alone). On failure the core modules importing outside it are named."""
    core_modules = [m for m in MODULES if m.count(".") >= 1 and m.split(".")[1] in CORE]
    assert len(core_modules) > 50
    done = subprocess.run([sys.executable, "-c", PROBE.format(core=CORE, modules=core_modules)],
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout)
    culprits = [f"{module} line {line} imports {target}" for module in core_modules
                for target, line in _edges()[module].items()
                if target != "agentstudy" and target.split(".")[1] not in CORE]
    assert loaded == [], f"the core loads {', '.join(loaded)}: " + "; ".join(culprits)


@pytest.mark.parametrize("prefix", [p for layer in LAYERS for p in layer if p])
def test_every_layer_prefix_names_a_module(prefix: str) -> None:
    assert f"agentstudy.{prefix}" in MODULES
