"""The companion's top-level packages and modules (``game``, ``recognizer``, ``live``,
``simulator``, ``web``, ``bench``, ``cli``, ``store``...) import one another in layers: no
package imports one that imports it back, however long the way round. Imports inside functions
count too: a ring hidden in a function still ties two packages together. What measures the
companion (``companion.bench``) sits above what a player runs, which never imports it."""

from __future__ import annotations

import ast
import re
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
    names = imported_names(tree, module, is_package)
    return {unit for name in names if (unit := unit_of(name, known))}


def imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """The dotted names ``tree`` (the source of ``module``) imports, wherever the import stands
    (``from companion.live import zones``: ``companion.live.zones``)."""
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
            # own ``__init__`` alone; ``from companion.live import zones`` may import a module.
            names = [f"{base}.{alias.name}" for alias in node.names]
            if base != PACKAGE:
                names.append(base)
        else:
            continue
        found.update(names)
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


# -- the table of docs/ARCHITECTURE.md ------------------------------------------------------

ARCHITECTURE = ROOT.parent / "docs" / "ARCHITECTURE.md"
GROUND_FLOOR = "the ground floor"
EVERYTHING_ABOVE = "everything above"


def unit_of_path(path: str, known: set[str]) -> str | None:
    """``companion/live/`` -> ``live``; ``companion/store.py`` -> ``store``;
    ``companion/__init__.py`` -> ``companion``."""
    parts = path.strip("/").removesuffix(".py").split("/")
    if parts[0] != PACKAGE:
        return None
    if len(parts) == 1 or parts[1] == "__init__":
        return PACKAGE
    return parts[1] if parts[1] in known else None


def layering_table(text: str, known: set[str]) -> list[tuple[set[str], set[str], dict]]:
    """The rows of the table under "## The packages": (the units of the row, the units it may
    import, {unit: the only name in it the row may import}), top to bottom. A row may
    import the units named in backticks in its last column, those of every row above it when
    it says "everything above", and the ground floor (the first row) in any case. "`live`
    (only `zones`: ...)" allows ``companion.live.zones`` alone."""
    section = text.split("## The packages", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    rows, above, ground = [], set(), set()
    for line in lines[1:]:  # past the header
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        own = {u for p in re.findall(r"`(companion/[^`]*)`", cells[0]) if (u := unit_of_path(p, known))}
        may = cells[-1]
        allowed = {name for name in re.findall(r"`([a-z_]+)`", may) if name in known}
        if EVERYTHING_ABOVE in may:
            allowed |= above
        only = {
            unit: {f"{PACKAGE}.{unit}.{name}"}
            for unit, name in re.findall(r"`([a-z_]+)` \(only `([a-z_]+)`", may)
        }
        if cells[0].startswith(GROUND_FLOOR):
            ground = own
        rows.append((own, allowed | ground, only))
        above |= own
    return rows


def module_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module of ``companion`` -> the dotted names of ``companion`` it imports."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = imported_names(tree, module, path.stem == "__init__")
        found[module] = {n for n in names if n.split(".")[0] == PACKAGE}
    return found


def table_breaches(text: str, root: Path = ROOT) -> list[str]:
    """What the imports do that the table does not allow, one line each."""
    known = units(root)
    rows = layering_table(text, known)
    breaches = []
    covered = [unit for own, _, _ in rows for unit in own]
    for unit in sorted(known - set(covered)):
        breaches.append(f"{unit}: in no row of the table")
    for unit in sorted({u for u in covered if covered.count(u) > 1}):
        breaches.append(f"{unit}: in more than one row of the table")
    row_of = {unit: (allowed | own, only) for own, allowed, only in rows for unit in own}
    for module, names in module_imports(root).items():
        source = unit_of(module, known)
        if source not in row_of:
            continue
        allowed, only = row_of[source]
        for name in sorted(names):
            target = unit_of(name, known)
            if target == source:
                continue
            if target not in allowed:
                breaches.append(f"{module} imports {name}: its row may not import {target}")
            elif target in only and not any(
                name == m or name.startswith(m + ".") for m in only[target]
            ) and name != f"{PACKAGE}.{target}":
                breaches.append(f"{module} imports {name}: its row allows only {sorted(only[target])}")
    return breaches


def test_the_table_reader_reads_rows_above_the_ground_floor_and_only():
    known = {PACKAGE, "messages", "game", "store", "live", "web"}
    text = (
        "## The packages\n\n| package | what | may import |\n|---|---|---|\n"
        "| the ground floor: `companion/__init__.py`, `companion/messages.py` | x | stdlib |\n"
        "| `companion/game/` | x | the ground floor only |\n"
        "| `companion/store.py` | x | `game`, sqlite-utils |\n"
        "| `companion/live/` | x | `game` (only `cards`), numpy |\n"
        "| `companion/web/` | x | everything above, Flask |\n\n## Next\n| `companion/x/` | | |\n"
    )
    rows = layering_table(text, known)
    ground = {PACKAGE, "messages"}
    assert rows == [
        (ground, ground, {}),
        ({"game"}, ground, {}),
        ({"store"}, ground | {"game"}, {}),
        ({"live"}, ground | {"game"}, {"game": {"companion.game.cards"}}),
        ({"web"}, ground | {"game", "store", "live"}, {}),
    ]


def test_the_architecture_table_allows_every_import_and_covers_every_module():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert table_breaches(text) == []
    # and it can fail: the table without the web's row leaves the web in no row, and the
    # recognizer not allowed the store is caught by its module
    without_web = "\n".join(line for line in text.splitlines() if "`companion/web/`" not in line)
    assert "web: in no row of the table" in table_breaches(without_web)
    no_store = text.replace("`store` (only `default_db_path`", "the store (only `default_db_path`")
    assert any(
        line.startswith("companion.recognizer.decks imports companion.store")
        for line in table_breaches(no_store)
    )
    only_lens = text.replace("`recognizer` (only `decks`", "`recognizer` (only `drawing`")
    assert (
        "companion.simulator.synth imports companion.recognizer.decks.back_image: its row allows"
        " only ['companion.recognizer.drawing']" in table_breaches(only_lens)
    )


# -- every module named in a document -----------------------------------------------------

DOCUMENTS = (ROOT.parent / "README.md", *sorted((ROOT.parent / "docs").glob("*.md")))


def sections(text: str) -> list[str]:
    """A markdown text cut at its headings."""
    return re.split(r"\n(?=#{1,4} )", text)


def unnamed_modules(texts: list[str], root: Path = ROOT) -> list[str]:
    """The modules of ``companion`` no text names: neither by path (``companion/live/zones.py``)
    nor dotted (``companion.live.zones``), nor by their own name in backticks (``zones`` or
    ``zones.py``) in a section that names their package's folder (``companion/live/``). A
    package is named by its folder; ``__main__`` by its package's ``python -m``."""
    everything = "\n".join(texts)
    parts = [part for text in texts for part in sections(text)]
    missing = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        folder = rel.rsplit("/", 1)[0] + "/"
        dotted = module_name(path, root)
        if path.stem == "__init__":
            named = folder in everything or re.search(re.escape(dotted) + r"\b", everything)
        elif path.stem == "__main__":
            named = f"-m {dotted.removesuffix('.__main__')}" in everything
        else:
            own = re.compile(rf"`{re.escape(path.stem)}(\.py)?`")
            named = (
                rel in everything
                or re.search(re.escape(dotted) + r"\b", everything)
                or any(folder in part and own.search(part) for part in parts)
            )
        if not named:
            missing.append(rel)
    return missing


def test_every_module_is_named_in_a_document():
    texts = [path.read_text(encoding="utf-8") for path in DOCUMENTS]
    assert unnamed_modules(texts) == []
    # and a module the documents do not name is found
    assert "companion/live/zones.py" in unnamed_modules(
        [text.replace("zones", "areas") for text in texts]
    )
