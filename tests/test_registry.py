"""The registry is the only place a game is named: the store, the summaries, the statistics and
the web app look a game up there (or in their own maps keyed by the game) instead of comparing
its name, and every game has its summary and its page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import companion
from companion.game import registry

PACKAGE = Path(companion.__file__).parent
GAME_NAMES = set(registry.GAMES)
# A game's own modules and templates may say its name (its state, its summary, its page).
# The command list names the ``companion hanamikoji`` command, not a match's game.
OWN_MODULES = {"game/registry.py", "cli/base.py"} | {
    f"{folder}/{name}.py" for name in GAME_NAMES for folder in ("game", "summaries", "web", "cli")
}


def _own(relative: str) -> bool:
    return relative in OWN_MODULES or any(name in Path(relative).name for name in GAME_NAMES)


def _literal_names(node) -> list[str]:
    """The game names a comparison operand says as string literals (itself or a tuple's)."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [
        item.value for item in items if isinstance(item, ast.Constant) and item.value in GAME_NAMES
    ]


def test_no_module_compares_a_game_name_but_the_registry():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if _own(relative):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                for operand in [node.left, *node.comparators]:
                    found += [
                        f"{relative}:{node.lineno} {name!r}" for name in _literal_names(operand)
                    ]
            elif isinstance(node, ast.Constant) and node.value in GAME_NAMES:
                found.append(f"{relative}:{node.lineno} {node.value!r} (a game named outside)")
    assert found == []


def test_no_template_names_another_game():
    names = "|".join(map(re.escape, sorted(GAME_NAMES)))
    quoted = re.compile(rf"""['"]({names})['"]""")
    found = []
    for path in sorted((PACKAGE / "web" / "templates").rglob("*.html")):
        if _own(path.name):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.name}:{n} {m.group(0)}" for m in quoted.finditer(line)]
            if re.search(r"\.game\s*(==|!=)", line):
                found.append(f"{path.name}:{n} compares a match's game")
    assert found == []


def test_the_registry_names_no_module_by_a_string():
    source = (PACKAGE / "game" / "registry.py").read_text(encoding="utf-8")
    assert "importlib" not in source
    assert not re.search(r"""['"]companion\.""", source)
    for game in registry.GAMES.values():
        assert registry.is_start(game.start_event)
        assert game.start_event in game.engine.Event.registry


def test_every_game_has_its_summary_and_its_page():
    from companion import summaries
    from companion.web import games

    assert set(summaries.BUILDERS) == set(registry.GAMES.values())
    assert set(games.PAGES) == set(registry.GAMES.values())


@pytest.mark.parametrize(
    "game, set_up",
    [
        (registry.KOIKOI, {"players": ["Aki", "Ben"], "rounds": 6}),
        (registry.HANAMIKOJI, {"players": ["Aki", "Ben"], "first": "Ben"}),
    ],
    ids=lambda value: value.name if isinstance(value, registry.Game) else "",
)
def test_a_match_of_each_game_is_listed_as_its_start_event_says(store, game, set_up):
    set_up = dict(set_up)
    players = set_up.pop("players")
    match_id = store._create(game, players, "Friday", **set_up)
    info = store.get_match(match_id)
    started = game.engine.apply(None, game.start(players, **set_up))
    listing = game.listing(started)
    assert info.game == store.game(match_id) == game.name
    assert (info.players, info.rules, info.rounds, info.oya, info.options) == (
        listing["players"],
        listing["rules"],
        listing["rounds"],
        listing["oya"],
        listing["options"],
    )
    assert [e.event.type for e in store.events(match_id)] == [game.start_event]
    # A start event is recorded once, first: appending one is refused, alone or with others.
    again = game.start(players, **set_up)
    with pytest.raises(companion.CompanionError, match="only be started once"):
        store.append(match_id, again)
    with pytest.raises(companion.CompanionError, match="only be started once"):
        store.append_many(match_id, [again, again])
    assert store.get_match(match_id).last_seq == 1


def test_an_exported_match_comes_back_listed_by_its_game(store):
    match_id = store.create_hanamikoji_match(["Aki", "Ben"], first="B")
    again = store.get_match(store.import_match(store.export_match(match_id)))
    first = store.get_match(match_id)
    assert (
        (again.game, again.rules, again.rounds, again.oya)
        == (
            first.game,
            first.rules,
            first.rounds,
            first.oya,
        )
        == ("hanamikoji", "hanamikoji", 3, "Ben")
    )
