"""The companion's top-level packages and modules (``game``, ``recognizer``, ``live``,
``simulator``, ``web``, ``bench``, ``cli``, ``store``...) import one another in layers: no
package imports one that imports it back, however long the way round. Imports inside functions
count too: a ring hidden in a function still ties two packages together. What measures the
companion (``companion.bench``) sits above what a player runs, which never imports it."""

from __future__ import annotations

import ast
from pathlib import Path

from test_web_imports import find_cycle

import companion

ROOT = Path(companion.__file__).parent
PACKAGE = "companion"


def units(root: Path = ROOT) -> set[str]:
    """The top-level packages and modules of ``companion`` (``companion`` itself is its
    ``__init__``)."""
    found = {PACKAGE}
    for path in root.iterdir():
        if path.is_dir() and (path / "__init__.py").is_file():
            found.add(path.name)
        elif path.suffix == ".py" and path.stem != "__init__":
            found.add(path.stem)
    return found


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str, known: set[str]) -> str | None:
    """The top-level unit a dotted module name lies in, or None outside ``companion``."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    return parts[1] if len(parts) > 1 and parts[1] in known else PACKAGE


def imported_units(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The units ``tree`` (the source of ``module``) imports, wherever the import stands."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            # ``from companion import web`` imports the package ``web``, not ``companion``'s
            # own ``__init__`` alone.
            names = [f"{base}.{alias.name}" for alias in node.names] if base == PACKAGE else [base]
        else:
            continue
        found.update(unit for name in names if (unit := unit_of(name, known)))
    return found


def import_graph(root: Path = ROOT) -> dict[str, dict[str, set[str]]]:
    """unit -> {unit it imports: the modules that import it}, between distinct units."""
    known = units(root)
    graph: dict[str, dict[str, set[str]]] = {unit: {} for unit in known}
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        source = unit_of(module, known)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for target in imported_units(tree, module, path.stem == "__init__", known) - {source}:
            graph[source].setdefault(target, set()).add(module)
    return graph


def describe(cycle: list[str], graph: dict[str, dict[str, set[str]]]) -> str:
    """``live -> simulator (companion.live.replay) -> live (companion.simulator.rounds)``."""
    steps = [cycle[0]]
    for source, target in zip(cycle, cycle[1:], strict=False):
        steps.append(f"{target} ({', '.join(sorted(graph[source][target]))})")
    return "a cycle between packages: " + " -> ".join(steps)


def test_the_reader_sees_every_kind_of_import():
    known = {PACKAGE, "game", "web", "live", "store", "bench"}
    tree = ast.parse(
        "import numpy\n"
        "from companion import CompanionError\n"
        "from companion.game.cards import Card\n"
        "def f():\n    import companion.store\n    from companion import web\n"
        "class C:\n    def g(self):\n        from ..live import zones\n"
        "from . import page\n"
    )
    found = imported_units(tree, "companion.bench.replay", False, known)
    assert found == {PACKAGE, "game", "store", "web", "live", "bench"}


def test_a_cycle_is_named_with_the_modules_that_make_it():
    graph = {
        "live": {"simulator": {"companion.live.replay"}},
        "simulator": {"live": {"companion.simulator.rounds"}},
    }
    cycle = find_cycle({unit: set(targets) for unit, targets in graph.items()})
    assert describe(cycle, graph) == (
        "a cycle between packages: live -> simulator (companion.live.replay)"
        " -> live (companion.simulator.rounds)"
    )


def test_the_companion_packages_import_one_another_without_a_cycle():
    graph = import_graph()
    # the graph was read: the command line stands on the game, the web app on the store
    assert "game" in graph["cli"] and "store" in graph["web"]
    cycle = find_cycle({unit: set(targets) for unit, targets in graph.items()})
    assert cycle is None, describe(cycle, graph)


def test_only_the_command_line_imports_the_measuring_wing():
    graph = import_graph()
    assert graph["bench"], "the measuring wing imports what it measures"
    users = {unit: sorted(targets["bench"]) for unit, targets in graph.items() if "bench" in targets}
    assert set(users) <= {"cli"}, users
