"""Every command of ``companion --help`` with bad input: exit 2 and one sentence (or 0 where
the input is merely odd), never a traceback.

The battery gives each option of each command bad numbers (words, negative, zero, huge,
5,000 digits, inf/nan, non-ASCII digits), missing files, folders where files are expected and
files where folders are, empty, corrupt and wrongly shaped files (nested or wrong-typed JSON,
rule files of 3,000 yaku or 5,000-digit numbers), /dev/null and places that cannot be written.
Everything runs in-process on tiny sizes; the servers bind and return at once.
"""

from __future__ import annotations

import json
import traceback
import zipfile

import click
import pytest
from click.testing import CliRunner

from companion.cli import main

# -- bad values ----------------------------------------------------------------------------

HUGE = "9" * 5000
BAD_INTS = ("abc", "-5", "0", "1.5", "1e30", HUGE, "inf", "nan", "٤", "")
BAD_FLOATS = ("abc", "-5", "0", "1e400", "inf", "-inf", "nan", HUGE, "٤", "")
# For commands that run for many seconds on any value they accept: the refused ones only.
REFUSED_INTS = tuple(v for v in BAD_INTS if v != "٤")
REFUSED_FLOATS = tuple(v for v in BAD_FLOATS if v not in ("0", "٤"))
BAD_TEXT = ("", " ", "\x00", "a\nb", "x" * 5000, "../../etc", "٤")
BAD_MATCHES = ("abc", "-5", "0", HUGE, "٤", "", "1e3", "99999999999999999999")
IN_FILES = (
    "{missing}", "{dir}", "{empty}", "{junk}", "/dev/null", "{under_file}", "{nested_json}",
    "{events_5}", "{bigint_json}",
)  # fmt: skip
IN_DIRS = ("{missing}", "{file}", "{empty_dir}", "/dev/null", "{under_file}")
OUT_FILES = ("/dev/null", "{dir}", "{under_file}", "{file}/new/x")
OUT_DIRS = ("{file}", "{under_file}", "/dev/null", "{file}/x/y")
DBS = (
    "{dir}", "{junk}", "/dev/null", "{under_file}", "{missing}", "{nested_json}",
    "{corrupt_db}", "{truncated_db}",
)  # fmt: skip
RULES = (
    "{rules_3000}", "{rules_bigint}", "{rules_nested}", "{rules_junk}", "{missing}.toml",
    "{dir_toml}", "{under_file}.toml", "no-such-preset", "../x", HUGE,
)  # fmt: skip
JSON_FILES = (
    "{nested_json}", "{events_5}", "{list_json}", "{bigint_json}", "{inf_json}",
    "{junk}", "{empty}", "{dir}", "/dev/null", "{missing}",
)  # fmt: skip
MODELS = (
    "{missing}", "{empty_dir}", "{junk}", "{nested_json}", "{list_json}", "/dev/null",
    "{junk_model}",
)  # fmt: skip
DECK_NAMES = ("nope", "", "../x", "x" * 300, "\x00", "corrupt", "corrupt-meta")
DECK_DIRS = ("{missing}", "{file}", "{empty_dir}", "{junk_deck}", "/dev/null", HUGE)

# Each command: its arguments with every other input good and cheap, then its options and
# arguments with the bad values to try one at a time ("@0" is the first positional argument).
BATTERY: dict[str, tuple[list[str], dict[str, tuple[str, ...]]]] = {
    "score": (
        ["score", "--cards", "01-1,02-1"],
        {
            "--rules": RULES,
            "--cards": ("", ",", "99-9", "x" * 5000, "01-1," * 500, "\x00", "٠١-١"),
            "--koi": BAD_INTS,
            "--opponent-koi": BAD_INTS,
            "--field-brights": BAD_INTS,
            "--month": BAD_INTS,
            "--option": ("x", "=", "a=on", "cards_count_once=maybe", HUGE + "=on"),
        },
    ),
    "rules show": (
        ["rules", "show", "livret"],
        {"@0": RULES, "--option": ("x", "=", "a=on", "cards_count_once=" + HUGE)},
    ),
    "rules list": (["rules", "list"], {"--json": ("x",)}),
    "hanamikoji": (
        ["hanamikoji", "--round", "1,0,1,1,1,2,2:0,1,1,2,1,2,1"],
        {
            "--round": (
                f"{HUGE},0,1,1,1,2,2:0,1,1,2,1,2,1", "-1,0,1,1,1,2,2:0,1,1,2,1,2,1",
                "٤,0,1,1,1,2,2:0,1,1,2,1,2,1", "inf,0,1,1,1,2,2:0,1,1,2,1,2,1", "", ":",
                "1,2", "1,0,1,1,1,2,2:0,1,1,2,1,2,1:1", "9,9,9,9,9,9,9:9,9,9,9,9,9,9",
            ),
            "--players": (",", "a,b,c", "\x00,b", " , ", "x" * 5000 + ",b", ""),
        },
    ),  # fmt: skip
    "deck add": (
        ["deck", "add", "mine", "{two_cards}", "--decks-dir", "{new_dir}"],
        {
            "@0": ("", "../x", "x" * 300, "\x00", "Upper", "a b"),
            "@1": IN_DIRS + ("{junk_card_dir}",),
            "--definition": ("nope", "{missing}.toml", "{rules_bigint}", "{rules_junk}", "{dir}"),
            "--decks-dir": OUT_DIRS + ("{file_as_deck}",),
        },
    ),
    "deck add#photos": (
        ["deck", "add", "mine", "--photos", "{empty_dir}", "--decks-dir", "{new_dir}"],
        {
            "--photos": IN_DIRS + ("{junk_card_dir}", "{card_dir}"),
            "--names": IN_FILES + ("{rules_bigint}", "{rules_nested}", "{rules_junk}"),
        },
    ),
    "deck list": (["deck", "list"], {"--decks-dir": DECK_DIRS}),
    "deck render-photos": (
        ["deck", "render-photos", "{card_dir}", "{new_dir}"],
        {"@0": DECK_DIRS, "@1": OUT_DIRS, "--seed": BAD_INTS},
    ),
    "deck redesign": (
        ["deck", "redesign", "recoloured", "{new_dir}", "--source", "{card_dir}"],
        {"@0": ("", "nope", "\x00"), "@1": OUT_DIRS, "--source": DECK_DIRS, "--seed": BAD_INTS},
    ),
    "deck remove": (
        ["deck", "remove", "nope", "--decks-dir", "{new_dir}"],
        {
            "@0": ("", ".", "..", "../x", "x" * 300, "\x00", "x\n", "nope"),
            "--decks-dir": DECK_DIRS,
        },
    ),
    "detect": (
        ["detect", "{two_cards}/01-1.png", "--decks-dir", "{decks}"],
        {
            "@0": IN_FILES,
            "--annotate": OUT_DIRS,
            "--model": MODELS,
            "--threads": BAD_INTS,
            "--nets": ("int4", ""),
            "--deck": DECK_NAMES,
            "--decks-dir": DECK_DIRS,
        },
    ),
    "eval": (
        ["eval", "--deck", "{card_dir}", "--n", "1", "--width", "64", "--height", "64"],
        {
            "--deck": DECK_DIRS,
            "--seed": BAD_INTS,
            "--n": BAD_INTS,
            "--workers": REFUSED_INTS,
            "--lens-k": BAD_FLOATS,
            "--model": MODELS,
            "--misses": OUT_DIRS,
            "--against": MODELS,
            "--with-deck": DECK_NAMES,
            "--width": BAD_INTS,
            "--height": BAD_INTS,
        },
    ),
    "bench": (
        ["bench", "--deck", "{card_dir}", "--runs", "5", "--scenes", "1", "--width", "64",
         "--height", "64"],
        {
            "--runs": BAD_INTS, "--scenes": REFUSED_INTS, "--seed": BAD_INTS, "--deck": DECK_DIRS,
            "--width": BAD_INTS, "--model": MODELS, "--with-deck": DECK_NAMES,
        },
    ),  # fmt: skip
    "bench-pipeline": (
        ["bench-pipeline", "--video", "{junk}"],
        {"--video": IN_FILES, "--frames": BAD_INTS, "--fps": BAD_INTS, "--model": MODELS},
    ),
    "render": (
        ["render", "--out", "{new_dir}", "--n", "1", "--width", "64", "--height", "64",
         "--quiet", "--deck", "{card_dir}", "--background", "{texture}"],
        {
            "--out": OUT_DIRS, "--n": BAD_INTS, "--seed": BAD_INTS, "--deck": DECK_DIRS,
            "--background": IN_FILES, "--width": BAD_INTS, "--workers": REFUSED_INTS,
            "--lens-k": BAD_FLOATS, "--restyle": BAD_FLOATS,
        },
    ),  # fmt: skip
    "simulate": (
        ["simulate", "--deck", "{card_dir}", "--out", "{new_dir}", "--width", "160",
         "--height", "90", "--fps", "1", "--max-turns", "1", "--quiet"],
        {
            "--deck": DECK_DIRS, "--seed": BAD_INTS, "--out": OUT_DIRS, "--rounds": BAD_INTS,
            "--rules": RULES, "--width": BAD_INTS, "--fps": BAD_INTS,
            "--max-turns": BAD_INTS, "--distractors": BAD_FLOATS, "--players": BAD_INTS,
        },
    ),  # fmt: skip
    "bench-live": (
        ["bench-live", "--clients", "1", "--events", "1", "--interval", "0"],
        {"--clients": REFUSED_INTS, "--events": REFUSED_INTS, "--interval": REFUSED_FLOATS},
    ),
    "bench-page": (
        ["bench-page", "--repeat", "1", "--rounds", "6"],
        {"--repeat": REFUSED_INTS, "--rounds": BAD_INTS},
    ),
    "serve": (
        ["serve", "--db", "{db}", "--port", "0"],
        {"--db": DBS, "--host": ("", "nowhere.invalid", "999.1.1.1", "::::", "\x00"),
         "--port": BAD_INTS},
    ),  # fmt: skip
    "demo": (
        ["demo", "--port", "0", "--pace", "0", "--db", "{new_db}"],
        {"--pace": BAD_FLOATS, "--port": BAD_INTS, "--db": DBS},
    ),
    "run": (
        ["run", "--video", "{video}", "--port", "0", "--db", "{new_db}", "--decks-dir", "{decks}"],
        {
            "--camera": BAD_INTS, "--video": IN_FILES, "--images": IN_DIRS,
            "--url": ("", "nothing://x", "\x00"), "--zones": IN_FILES + ("{rules_bigint}",),
            "--rules": RULES, "--players": ("", ",", "a,a", "\x00,b", "a,b,c,d,e"),
            "--rounds": BAD_INTS, "--oya": ("", "nobody", "\x00"),
            "--db": DBS, "--host": ("", "999.1.1.1", "\x00"),
            "--port": BAD_INTS, "--model": MODELS, "--deck": DECK_NAMES, "--decks-dir": DECK_DIRS,
        },
    ),  # fmt: skip
    "replay": (
        ["replay", "{video}", "--decks-dir", "{decks}"],
        {
            "@0": IN_FILES, "--zones": IN_FILES + ("{rules_bigint}",), "--truth": JSON_FILES,
            "--restart-at": BAD_INTS, "--restart-from": ("", "middle"),
            "--drop-at": ("", "abc", "5", "5:", ":3", "-1:2", "5:nan", "5:0", "5:1e9", "\x00"),
            "--model": MODELS, "--deck": DECK_NAMES, "--decks-dir": DECK_DIRS,
        },
    ),  # fmt: skip
    "summary": (
        ["summary", "--db", "{db}"],
        {"@0": BAD_MATCHES, "--db": DBS, "--out": OUT_FILES, "--format": ("docx", "")},
    ),
    "matches": (["matches", "--db", "{db}"], {"--db": DBS}),
    "stats": (["stats", "--db", "{db}"], {"--db": DBS}),
    "export": (["export", "1", "--db", "{db}"], {"@0": BAD_MATCHES, "--db": DBS, "--out": OUT_FILES}),
    "import": (["import", "{export}", "--db", "{new_db}"], {"@0": JSON_FILES, "--db": DBS}),
    "backup": (["backup", "{new_file}", "--db", "{db}"], {"@0": OUT_FILES + ("{file}",), "--db": DBS}),
    "rename": (["rename", "1", "Title", "--db", "{db}"], {"@0": BAD_MATCHES, "@1": BAD_TEXT, "--db": DBS}),
    "archive": (["archive", "1", "--db", "{db}"], {"@0": BAD_MATCHES, "--db": DBS}),
    "delete": (["delete", "1", "--db", "{db}"], {"@0": BAD_MATCHES, "--db": DBS}),
}  # fmt: skip

# The lab's commands train and measure for minutes: only the values click itself refuses.
LAB_BATTERY = {
    "train": {"--scenes": ("-5", "0", HUGE), "--epochs": ("0", "abc"), "--minutes": ("0", "nan")},
    "fit-acceptance": {"--n": ("0", HUGE), "--above": ("0", "1", "nan"), "--trees": ("-5",)},
    "ablate-augmentation": {"--epochs": ("0", HUGE), "--scenes": ("-5",)},
}
# Exit 1 is a command saying "no" on purpose: ``delete`` without --yes asks, and a closed
# input answers no.
EXIT_ONE_OK = {"delete"}


def invocations():
    for entry, (base, options) in BATTERY.items():
        name = entry.split("#")[0]  # "deck add#photos": another way of calling deck add
        for key, values in options.items():
            for value in values:
                args = list(base)
                if key.startswith("@"):  # a positional argument of the command
                    position = len(name.split()) + int(key[1:])
                    args[position] = value
                elif key in args:
                    args[args.index(key) + 1] = value
                else:
                    args += [key, value]
                yield name, args
    for name, options in LAB_BATTERY.items():
        for key, values in options.items():
            for value in values:
                yield name, [name, key, value]


CASES = list(invocations())


def shown(args) -> str:
    text = " ".join(a if len(a) < 40 else f"{a[:12]}...({len(a)} chars)" for a in args)
    return text.encode("unicode_escape").decode("ascii")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The battery's files: good ones to lean on, and bad ones."""
    import cv2
    import numpy as np

    from companion.store import MatchStore

    root = tmp_path_factory.mktemp("battery")
    f = {"root": root}

    def path(name, content=None):
        p = root / name
        if isinstance(content, bytes):
            p.write_bytes(content)
        elif content is not None:
            p.write_text(content, encoding="utf-8")
        f[name] = str(p)
        return p

    path("missing")
    (path("dir")).mkdir()
    (path("empty_dir")).mkdir()
    path("empty", "")
    path("file", "a file, not a folder\n")
    path("junk", bytes(range(256)) * 8)
    f["under_file"] = str(root / "file" / "x")
    path("nested_json", "[" * 100_000 + "]" * 100_000)
    path("events_5", json.dumps({"format": "companion-simulation/1", "events": 5}))
    path("list_json", "[1, 2, 3]")
    path("bigint_json", '{"format": "companion-simulation/1", "events": [' + HUGE + "]}")
    path("inf_json", '{"rounds": Infinity, "events": [1e999]}')
    path("dir_toml.toml").mkdir()
    f["dir_toml"] = f["dir_toml.toml"]
    path("rules_junk", bytes(range(256)))
    path("rules_nested", "a = " + "[" * 5000 + "]" * 5000)
    path("rules_bigint", f'[game]\nname = "big"\n[match]\nbank = {HUGE}\n')
    yaku = "".join(
        f'[[yaku]]\nid = "y{k}"\nname = "Y{k}"\nkind = "count"\npoints = 1\nmin = 1\n'
        'select = { category = "chaff" }\nfamily = "f"\n'
        for k in range(3000)
    )
    path("rules_3000", '[game]\nname = "many"\n[scoring]\ncards_count_once = true\n' + yaku)
    for name in ("rules_junk", "rules_nested", "rules_bigint", "rules_3000"):
        target = root / f"{name}.toml"
        (root / name).rename(target)
        f[name] = str(target)

    # 48 flat "cards", a texture and a short video: enough for the vision commands to run.
    from companion.game.cards import ALL_CODES

    rng = np.random.default_rng(0)
    cards = root / "cards"
    cards.mkdir()
    for code in ALL_CODES:
        face = np.full((64, 40, 3), rng.integers(0, 255, 3), np.uint8)
        cv2.imwrite(str(cards / f"{code}.png"), face)
    f["card_dir"] = str(cards)
    two = root / "two_cards"
    two.mkdir()
    for code in ("01-1", "02-1"):
        (two / f"{code}.png").write_bytes((cards / f"{code}.png").read_bytes())
    f["two_cards"] = str(two)
    junk_cards = root / "junk_cards"
    junk_cards.mkdir()
    (junk_cards / "01-1.png").write_bytes(b"not a png")
    f["junk_card_dir"] = str(junk_cards)
    junk_deck = root / "junk_deck"
    junk_deck.mkdir()
    (junk_deck / "01-1.png").write_bytes(b"not a png")
    f["junk_deck"] = str(junk_deck)
    cv2.imwrite(str(root / "texture.png"), np.full((64, 64, 3), 90, np.uint8))
    f["texture"] = str(root / "texture.png")
    video = root / "table.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 5, (64, 48))
    for _ in range(3):
        writer.write(np.full((48, 64, 3), 60, np.uint8))
    writer.release()
    f["video"] = str(video)

    # Added decks: two damaged ones, and a name taken by a file where a deck folder goes.
    decks = root / "decks"
    for name in ("corrupt", "corrupt-meta"):
        (decks / name).mkdir(parents=True)
    (decks / "corrupt" / "deck.json").write_text(json.dumps({"name": "corrupt", "format": 1}))
    (decks / "corrupt" / "references.npz").write_bytes(b"PK\x03\x04 not a zip")
    (decks / "corrupt-meta" / "deck.json").write_text("[1, 2]")
    with zipfile.ZipFile(decks / "corrupt-meta" / "references.npz", "w") as z:
        z.writestr("embeddings.npy", b"junk")
    f["decks"] = str(decks)
    taken = root / "taken"
    taken.mkdir()
    (taken / "mine").write_text("a file where the deck's folder goes")
    f["file_as_deck"] = str(taken)

    db = root / "matches.db"
    with MatchStore.open(db) as store:
        match = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
        export = store.export_match(match)
    f["db"] = str(db)
    # The same database with its pages after the first overwritten, and cut short.
    whole = db.read_bytes()
    page = 4096
    corrupt = root / "corrupt.db"
    corrupt.write_bytes(whole[:page] + bytes(range(256)) * ((len(whole) - page) // 256 + 1))
    f["corrupt_db"] = str(corrupt)
    truncated = root / "truncated.db"
    truncated.write_bytes(whole[: page + 100])
    f["truncated_db"] = str(truncated)
    junk_model = root / "junk_model"
    junk_model.mkdir()
    (junk_model / "junk.onnx").write_bytes(bytes(range(256)))
    meta = {"localizer": "junk.onnx", "classifier": "junk.onnx", "settings": {}}
    (junk_model / "recognizer.json").write_text(json.dumps(meta))
    f["junk_model"] = str(junk_model)
    path("export", json.dumps(export))
    return f


@pytest.fixture
def no_serving(monkeypatch):
    """``serve``, ``demo`` and ``run`` bind their socket, then return at once."""
    from companion.web import serving

    monkeypatch.setattr(serving.Server, "serve_forever", lambda self, poll_interval=0.2: None)


def test_every_command_has_a_battery():
    """A new command must come with bad input to try."""
    names = []

    def walk(group, prefix):
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                walk(command, prefix + [name])
            else:
                names.append(" ".join(prefix + [name]))

    walk(main, [])
    assert sorted(names) == sorted({entry.split("#")[0] for entry in [*BATTERY, *LAB_BATTERY]})


@pytest.mark.parametrize(("name", "args"), CASES, ids=[shown(a) for _, a in CASES])
def test_bad_input_is_one_sentence_never_a_traceback(files, no_serving, tmp_path, name, args):
    values = {**files, "new_dir": str(tmp_path / "out"), "new_db": str(tmp_path / "new.db"),
              "new_file": str(tmp_path / "new.file")}  # fmt: skip
    args = [a.format(**values) if "{" in a else a for a in args]
    result = CliRunner().invoke(main, args, input="")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        lines = "".join(traceback.format_exception(*result.exc_info)).splitlines()[-24:]
        trace = "\n".join(line[:300] for line in lines)
        pytest.fail(f"companion {shown(args)} raised:\n{trace}")
    assert "Traceback" not in result.output + result.stderr, shown(args)
    allowed = {0, 2} | ({1} if name in EXIT_ONE_OK else set())
    assert result.exit_code in allowed, (shown(args), result.exit_code, result.output)
    if result.exit_code == 2:  # a sentence saying what is wrong (one per photo, for photos)
        lines = result.stderr.splitlines()
        assert any(line.startswith("Error: ") for line in lines), (shown(args), result.stderr)


# -- the causes, one by one, where they are fixed -------------------------------------------


def many_yaku(n: int) -> str:
    return '[game]\nname = "many"\n[scoring]\ncards_count_once = true\n' + "".join(
        f'[[yaku]]\nid = "y{k}"\nname = "Y{k}"\nkind = "count"\npoints = 1\nmin = 1\n'
        'select = { category = "chaff" }\nfamily = "f"\n'
        for k in range(n)
    )


def test_a_rule_set_of_thousands_of_yaku_is_refused_before_scoring():
    from companion.game.rules import MAX_YAKU, RuleError, RuleSet
    from companion.game.scoring import score_hand

    rules = RuleSet.from_text(many_yaku(MAX_YAKU))
    assert score_hand(rules, list(rules.deck)).base == 1  # one yaku of the family counts
    with pytest.raises(RuleError, match=f"at most {MAX_YAKU} yaku, not 3,000"):
        RuleSet.from_text(many_yaku(3000))


def test_a_yaku_listing_more_cards_than_the_deck_is_refused():
    from companion.game.rules import RuleError, RuleSet

    cards = ", ".join(['"01-1"'] * 3000)
    text = f'[[yaku]]\nid = "all"\nname = "All"\nkind = "set"\npoints = 1\ncards = [{cards}]\n'
    with pytest.raises(RuleError, match="at most 48"):
        RuleSet.from_text(text)


def test_a_number_of_5000_digits_is_one_sentence_in_every_toml_file(tmp_path):
    from companion.game.cards import CardError, Deck
    from companion.game.rules import RuleError, RuleSet
    from companion.live.zones import ZoneError, Zones

    with pytest.raises(RuleError, match="number too long"):
        RuleSet.from_text(f"[match]\nbank = {HUGE}\n")
    deck = tmp_path / "big.toml"
    deck.write_text(f'name = "big"\nsize = {HUGE}\n')
    with pytest.raises(CardError, match="number too long"):
        Deck.load(str(deck))
    with pytest.raises(ZoneError, match="number too long"):
        Zones.from_toml(f"[zones.field]\npolygon = [[{HUGE}, 0]]\n")


def test_a_rule_file_name_too_long_for_the_system_is_one_sentence():
    from companion.game.rules import RuleError, RuleSet

    with pytest.raises(RuleError) as caught:
        RuleSet.load("x" * 5000 + ".toml")
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize("value", ["²", "٣", HUGE, "-3", "3.0"])
def test_numbers_in_events_are_ascii_digits_of_sensible_length(value):
    from companion.game import hanamikoji
    from companion.game.engine import Event, IllegalEvent

    with pytest.raises(IllegalEvent, match="whole number") as caught:
        Event.from_dict({"type": "round_entered", "winner": "A", "points": value})
    assert len(str(caught.value)) < 120
    with pytest.raises(hanamikoji.HanamikojiError):
        hanamikoji.ItemsSet(player="A", geisha=value, count=1)
    with pytest.raises(hanamikoji.HanamikojiError, match="not a whole number"):
        hanamikoji.ItemsSet(player="A", geisha="ayane", count=value)
    assert hanamikoji.ItemsSet(player="A", geisha="2", count="3").count == 3


def test_a_hanamikoji_count_of_5000_digits_is_one_sentence():
    result = CliRunner().invoke(
        main, ["hanamikoji", "--round", f"{HUGE},0,1,1,1,2,2:0,1,1,2,1,2,1"]
    )
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr.startswith("Error: The count '99") and len(result.stderr) < 200


def test_a_deck_that_cannot_be_written_is_one_sentence(tmp_path, monkeypatch):
    import errno

    import numpy as np

    from companion.recognizer import decks
    from companion.recognizer.decks import DeckError, UserDeck

    deck = UserDeck("mine", "standard", np.ones((2, 192), np.float32), np.array([0, 4]))
    (tmp_path / "mine").write_text("a file where the deck's folder goes")
    with pytest.raises(DeckError, match="Cannot keep the deck 'mine'"):
        deck.save(tmp_path)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(decks.np, "savez_compressed", full)
    with pytest.raises(DeckError, match="No space left on device"):
        deck.save(tmp_path / "elsewhere")


@pytest.mark.parametrize(
    "embeddings, ids",
    [((3, 192), [0, 1]), ((2, 192), [0, 99]), ((0, 192), []), ((2,), [0, 1])],
)
def test_a_damaged_deck_is_refused_when_loaded(tmp_path, embeddings, ids):
    import numpy as np

    from companion.recognizer.decks import DeckError, UserDeck

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "deck.json").write_text(json.dumps({"name": "mine", "format": 1}))
    np.savez_compressed(
        folder / "references.npz", embeddings=np.ones(embeddings), class_ids=np.array(ids)
    )
    with pytest.raises(DeckError, match="unreadable"):
        UserDeck.load("mine", tmp_path)


def test_a_deck_made_by_another_embedder_is_one_sentence():
    import numpy as np

    from companion.recognizer.decks import DeckError, DeckNamer, UserDeck
    from companion.recognizer.settings import Settings

    deck = UserDeck("old", "standard", np.ones((2, 64), np.float32), np.array([0, 4]))
    with pytest.raises(DeckError, match="another recognizer"):
        DeckNamer(deck, Settings())


@pytest.mark.parametrize(
    "change",
    [
        {"events": 5},
        {"events": [{"frame": -1, "event": {}}]},
        {"events": [{"frame": 3, "event": {}, "steady_frame": "x"}]},
        {"decisions": [{"answer": "maybe"}]},
        {"rounds": [{"round": 1, "first_frame": None}]},
        {"rounds": [{"round": 1, "points": [1, 2]}]},
        {"players": "AB"},
        {"zones": [1]},
    ],
)
def test_a_truth_file_of_the_wrong_shape_is_one_sentence(tmp_path, change):
    from companion.bench.replay import TruthError, load_truth

    path = tmp_path / "truth.json"
    path.write_text(json.dumps({"format": "companion-simulation/1", **change}))
    with pytest.raises(TruthError, match="damaged"):
        load_truth(path)


def test_nan_passes_no_float_range():
    from companion.cli.base import FiniteFloatRange

    assert click.FloatRange(0, 1).convert("nan", None, None) != 0  # nan slips through click's
    for value in ("nan", "inf"):
        with pytest.raises(click.BadParameter, match="finite"):
            FiniteFloatRange(min=0).convert(value, None, None)
    assert FiniteFloatRange(0, 1).convert("0.5", None, None) == 0.5


def test_a_bug_is_one_sentence_and_exit_1_unless_tracebacks_are_asked_for(monkeypatch):
    from companion.cli.base import TRACEBACK_VARIABLE
    from companion.game import scoring

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(scoring, "score_hand", broken)
    monkeypatch.delenv(TRACEBACK_VARIABLE, raising=False)
    result = CliRunner().invoke(main, ["score", "--cards", "01-1"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "ZeroDivisionError" in lines[0] and "bug" in lines[0]
    assert "Traceback" not in result.output
    monkeypatch.setenv(TRACEBACK_VARIABLE, "1")
    result = CliRunner().invoke(main, ["score", "--cards", "01-1"])
    assert isinstance(result.exception, ZeroDivisionError)
    bad_input = CliRunner().invoke(main, ["score", "--cards", "99-9"])
    assert bad_input.exit_code == 2  # bad input is still bad input, whatever the variable


ENV_CASES = [
    *(
        ({"COMPANION_DB": db}, args)
        for db in DBS
        for args in (["matches"], ["stats"], ["summary"], ["export", "1"], ["archive", "1"],
                     ["rename", "1", "T"], ["backup", "{new_file}"], ["serve", "--port", "0"])
    ),
    *(
        ({"COMPANION_SHARED": shared}, args)
        for shared in ("{missing}", "{file}", "/dev/null", "{empty_dir}", HUGE)
        for args in (["render", "--n", "1", "--width", "64", "--height", "64", "--out", "{new_dir}"],
                     ["simulate", "--deck", "traditional-ngs", "--out", "{new_dir}"],
                     ["eval", "--deck", "traditional-ngs", "--n", "1"],
                     ["bench", "--runs", "5", "--scenes", "1", "--width", "64", "--height", "64"])
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("env", "args"), ENV_CASES, ids=[f"{shown([*e.values()])} {shown(a)}" for e, a in ENV_CASES]
)
def test_bad_environment_is_one_sentence_never_a_traceback(files, no_serving, tmp_path, env, args):
    values = {**files, "new_dir": str(tmp_path / "out"), "new_file": str(tmp_path / "new.file")}
    env = {k: v.format(**values) for k, v in env.items()}
    args = [a.format(**values) if "{" in a else a for a in args]
    result = CliRunner().invoke(main, args, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        lines = "".join(traceback.format_exception(*result.exc_info)).splitlines()[-24:]
        pytest.fail(f"{env} companion {shown(args)} raised:\n" + "\n".join(lines))
    assert result.exit_code in (0, 2), (env, shown(args), result.output)
    assert "Traceback" not in result.output


@pytest.mark.parametrize("pace", [float("inf"), float("nan"), -1.0, 601.0])
def test_a_demo_pace_that_no_clock_can_wait_is_one_sentence(pace, no_serving, tmp_path):
    from companion import CompanionError
    from companion.demo import run_demo

    with pytest.raises(CompanionError, match="pace"):  # before it serves anything
        run_demo(pace=pace, port=0, db=tmp_path / "demo.db")
