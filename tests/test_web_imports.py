"""The web package's modules import one another without a ring: each imports what it shares
from leaf modules (``pages``, ``forms``, ``errors``...), never from the package itself, so
that a module can be read, tested and moved on its own. Imports inside functions count too:
a cycle hidden in a function is still a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import companion.web

WEB = Path(companion.web.__file__).parent
PACKAGE = "companion.web"


def web_modules() -> dict[str, Path]:
    return {
        (PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"): path
        for path in WEB.glob("*.py")
    }


def imported(tree: ast.AST, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``tree`` imports (``from companion.web import x`` is module
    ``x`` when there is one, else a name of the package itself)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PACKAGE:
                for alias in node.names:
                    found.add(
                        f"{PACKAGE}.{alias.name}"
                        if f"{PACKAGE}.{alias.name}" in modules
                        else PACKAGE
                    )
            elif node.module in modules:
                found.add(node.module)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = web_modules()
    return {
        name: imported(ast.parse(path.read_text(encoding="utf-8")), modules) - {name}
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the list of its modules (first one repeated last), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_ring_and_passes_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_imports_inside_functions_and_from_the_package():
    modules = {PACKAGE: Path(), f"{PACKAGE}.match": Path(), f"{PACKAGE}.pages": Path()}
    tree = ast.parse(
        "from companion.web import create_app\n"
        "def f():\n    from companion.web.pages import render\n    from companion.web import match\n"
    )
    assert imported(tree, modules) == {PACKAGE, f"{PACKAGE}.pages", f"{PACKAGE}.match"}


def test_the_web_modules_import_one_another_without_a_cycle():
    graph = import_graph()
    assert f"{PACKAGE}.match" in graph and graph[PACKAGE]  # the graph was read
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_no_web_module_imports_from_the_package_itself():
    # The package is the app factory: a module importing from it would ring back through it.
    # The benchmarks that build an app (``create_app``) live in ``companion.bench``.
    users = {name for name, targets in import_graph().items() if PACKAGE in targets}
    assert not users, users
