"""The ``companion`` command: a thin click layer over the library.

Every command turns bad input into exit code 2 and one sentence on stderr (``fail``), never a
traceback. Each area keeps its commands in its own section below; the work is done in the
library modules, not here.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
from pathlib import Path

import click

from companion import CompanionError, __version__

# Set to see a bug's traceback rather than the one sentence the command line prints.
TRACEBACK_VARIABLE = "COMPANION_TRACEBACK"
_BIDI_CONTROLS = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))


def terminal_safe(text: str, keep: str = "\n") -> str:
    """``text`` with control characters (ESC, BEL, NUL... and bidi overrides) written as
    ``\\x1b``-style escapes, so that a name typed on the tablet cannot drive the terminal."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): that byte
            out.append(f"\\x{code - 0xDC00:02x}")
            continue
        if ch in keep or not (code < 0x20 or 0x7F <= code < 0xA0 or code in _BIDI_CONTROLS):
            out.append(ch)
        else:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


def fail(message: str) -> None:
    """Print one sentence to stderr and exit with code 2 (bad input)."""
    text = terminal_safe(str(message), keep="")
    # a name quoted with repr() shows a byte that was not UTF-8 as '\udcff': say the byte
    text = _ESCAPED_BYTE.sub(lambda found: f"\\x{found.group(1)}", text)
    click.echo(f"Error: {text}", err=True)
    sys.exit(2)


_ESCAPED_BYTE = re.compile(r"\\udc([89a-f][0-9a-f])")


def friendly_errors(func):
    """Turn CompanionError (and other bad-input errors) into ``fail``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except CompanionError as exc:
            fail(str(exc))

    return wrapper


def echo_json(obj) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


# ``companion --help`` lists the player's commands first, then the vision ones, then any other
# registered command, then the lab's. Names not registered (yet) are left out.
HELP_SECTIONS = (
    (
        "Playing",
        (
            "serve",
            "demo",
            "run",
            "summary",
            "matches",
            "replay",
            "score",
            "rules",
            "hanamikoji",
            "deck",
        ),
    ),
    ("Keeping matches", ("stats", "export", "import", "backup", "rename", "archive", "delete")),
    (
        "Cards and camera",
        ("detect", "eval", "bench", "bench-pipeline", "render", "simulate", "bench-live"),
    ),
    ("Tablet", ("bench-page",)),
)
# Other distributions add commands as sqlite-utils plugins do: an entry point in the group
# ``companion.commands`` naming a click command (the lab registers train, fit-acceptance and
# ablate-augmentation so). They are loaded only when run. The product keeps only the hint for
# the lab's commands, so that ``companion train`` without the lab says how to install it.
PLUGIN_GROUP = "companion.commands"
LAB_COMMANDS = {
    "train": "Train the recognizer on synthetic scenes, export ONNX.",
    "fit-acceptance": "Fit the learned acceptance rule to a model's nets.",
    "ablate-augmentation": "What render realism and augmentation are worth.",
}


def plugin_entry_points() -> dict:
    """The commands other installed distributions register, by name (not loaded)."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=PLUGIN_GROUP)}


def lab_missing(name: str) -> click.Command:
    """A command that says in one sentence how to install the lab."""

    @click.command(
        name,
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def missing():
        fail(
            f"`companion {name}` is part of the lab, which is not installed: "
            "from a clone of the repository, run pip install -e lab."
        )

    missing.help = LAB_COMMANDS.get(name, "")
    return missing


def plugin_command(name: str) -> click.Command | None:
    """The registered command ``name`` (loaded now), the lab's hint when the lab is missing or
    broken off, or None for a name nobody registers."""
    entry = plugin_entry_points().get(name)
    if entry is not None:
        try:
            command = entry.load()
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("companion_lab"):
                raise
        else:
            command.name = name
            return command
    return lab_missing(name) if name in LAB_COMMANDS else None


class CompanionGroup(click.Group):
    """The ``companion`` group: commands listed by section, the lab's loaded only when run."""

    def list_commands(self, ctx):
        names = super().list_commands(ctx)
        ordered = [n for _, section in HELP_SECTIONS for n in section if n in names]
        ordered += [n for n in names if n not in ordered]
        plugins = [*plugin_entry_points(), *LAB_COMMANDS]
        return ordered + [n for n in dict.fromkeys(plugins) if n not in names]

    def get_command(self, ctx, name):
        command = super().get_command(ctx, name)
        if command is None:
            return plugin_command(name)
        return command

    def invoke(self, ctx):
        """Run the command; a bug (any exception that is not bad input) is one sentence and
        exit code 1 instead of a traceback, unless $COMPANION_TRACEBACK is set (the tests set
        it, so that a bug still fails them with its traceback)."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - the last resort, for bugs only
            if os.environ.get(TRACEBACK_VARIABLE) or isinstance(exc, BrokenPipeError):
                raise
            click.echo(
                f"Error: the companion failed unexpectedly ({type(exc).__name__}); this is a "
                f"bug, please report it with the command you ran ({TRACEBACK_VARIABLE}=1 "
                "shows the details).",
                err=True,
            )
            sys.exit(1)

    def format_commands(self, ctx, formatter):
        names = super().list_commands(ctx)
        width = max(45, formatter.width - 26)  # the short help, after a name of up to 20

        def short(name):
            return self.commands[name].get_short_help_str(width)

        shown = set()
        for title, section in HELP_SECTIONS:
            rows = [(n, short(n)) for n in section if n in names]
            shown.update(n for n, _ in rows)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [(n, short(n)) for n in names if n not in shown]
        if rest:
            with formatter.section("More"):
                formatter.write_dl(rest)
        plugins = {n: LAB_COMMANDS.get(n, "") for n in plugin_entry_points()} | LAB_COMMANDS
        with formatter.section("Lab (pip install -e lab)"):
            formatter.write_dl([(n, h) for n, h in plugins.items() if n not in names])


@click.group(cls=CompanionGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="companion")
def main():
    """Hanafuda Companion: follow a physical Hanafuda game from camera to score."""


# ---------------------------------------------------------------------------------------------
# Scoring engine: score, rules
# ---------------------------------------------------------------------------------------------

RULES_OPTION_HELP = "Preset name (see `companion rules list`) or path to a rule file (.toml)."


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that refuses nan, which compares false with any bound and so
    passes every range, and the infinities (inf passes an open-ended range)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


# Every random stream (numpy's generators, the simulator's) takes a seed from 0 to 2**32 - 1.
SEED = click.IntRange(0, 2**32 - 1)


def pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.2f} %"


def load_rules(name_or_file: str, option_pairs=()):
    """The rule set with ``ID=on|off`` options applied; RuleError on bad input."""
    from companion.game.rules import RuleError, RuleSet

    rules = RuleSet.load(name_or_file)
    switches = {}
    for pair in option_pairs:
        key, sep, value = pair.partition("=")
        if not sep or value.strip().lower() not in ("on", "off"):
            raise RuleError(f"--option takes ID=on or ID=off, not {pair!r}.")
        switches[key.strip()] = value.strip().lower() == "on"
    return rules.with_options(switches) if switches else rules


rule_option_flag = click.option(
    "--option",
    "option_pairs",
    multiple=True,
    metavar="ID=on|off",
    help="Switch a rule-set option (repeatable).",
)


@main.command("score")
@click.option("--rules", "rules_name", default="livret", show_default=True, help=RULES_OPTION_HELP)
@click.option("--cards", required=True, help="Captured cards: codes or names, comma-separated.")
@click.option("--koi", default=0, type=int, help="Koi calls made this round by the scorer.")
@click.option("--opponent-koi", default=0, type=int, help="Koi calls made by the other player.")
@click.option("--field-brights", default=0, type=int, help="Brights in the dealt field.")
@click.option(
    "--month", default=None, type=int, help="The round's month, 1-12 (yaku of the month)."
)
@rule_option_flag
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@friendly_errors
def score_command(
    rules_name, cards, koi, opponent_koi, field_brights, month, option_pairs, as_json
):
    """Score captured cards: yaku, base points, multipliers and total."""
    from companion.game.scoring import MAX_FIELD_BRIGHTS, MAX_KOI_CALLS, score_hand

    for flag, value, most in (
        ("--koi", koi, MAX_KOI_CALLS),
        ("--opponent-koi", opponent_koi, MAX_KOI_CALLS),
        ("--field-brights", field_brights, MAX_FIELD_BRIGHTS),
    ):
        if not 0 <= value <= most:
            fail(f"{flag} must be 0 to {most}, not {value}.")
    if month is not None and not 1 <= month <= 12:
        fail(f"--month must be 1 to 12, not {month}.")
    rules = load_rules(rules_name, option_pairs)
    captured = rules.deck.parse_list(cards)
    hand = score_hand(
        rules,
        captured,
        koi_own=koi,
        koi_opponent=opponent_koi,
        field_brights=field_brights,
        month=month,
    )
    if as_json:
        echo_json(
            {
                "rules": rules.name,
                "options": rules.active_options,
                "cards": [c.code for c in sorted(captured)],
                **hand.to_dict(),
            }
        )
        return
    click.echo(f"{rules.title} [{rules.name}]")
    click.echo(
        f"Cards ({len(captured)}): " + ", ".join(f"{c.code} {c.name}" for c in sorted(captured))
    )
    if rules.mode == "card_values":
        for category, points in hand.values.items():
            click.echo(f"  {category:<28} {points:>4}")
    elif not hand.yaku:
        click.echo("  no yaku")
    for y in hand.yaku:
        click.echo(f"  {y.name:<28} {y.points:>4}   " + " ".join(c.code for c in y.cards))
    click.echo(f"  {'base':<28} {hand.base:>4}")
    for m in hand.multipliers:
        click.echo(f"  x{m.factor:<27} {'':>4}   {m.reason}")
    click.echo(f"  {'total':<28} {hand.total:>4}")


@main.group("rules")
def rules_group():
    """List and show rule sets (presets or rule files)."""


@rules_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@friendly_errors
def rules_list_command(as_json):
    """The preset rule sets, the default first."""
    from companion.game.rules import RuleSet

    rows = []
    for name in RuleSet.presets():
        r = RuleSet.load(name)
        rows.append(
            {
                "name": name,
                "title": r.title,
                "seed": r.game.seed,
                "players": list(r.players),
                "mode": r.mode,
            }
        )
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        seed = f"seed {row['seed']}" if row["seed"] else "no seed"
        click.echo(f"{row['name']:<15} {seed:<9} {row['title']}")


@rules_group.command("show")
@click.argument("name_or_file")
@rule_option_flag
@click.option("--json", "as_json", is_flag=True, help="Print the effective rule set as JSON.")
@friendly_errors
def rules_show_command(name_or_file, option_pairs, as_json):
    """A readable summary: yaku and points, multipliers, round and match rules, options."""
    rules = load_rules(name_or_file, option_pairs)
    if as_json:
        echo_json(rules.to_dict())
    else:
        click.echo(rules.describe())


# The recognizer's model, for every command that runs it (vision, live).
model_option = click.option(
    "--model",
    "model_path",
    type=click.Path(),
    help="Model metadata JSON or its folder (default: the committed model, companion/models).",
)

# The vision commands (detect, eval, bench, render) live in their own module.
import companion.cli.vision  # noqa: E402,F401

# ---------------------------------------------------------------------------------------------
# Match store and tablet page: serve, demo, summary, matches, bench-live
# ---------------------------------------------------------------------------------------------

DB_OPTION_HELP = "SQLite database (default: $COMPANION_DB, else the per-user data folder)."


def open_store_for_reading(db):
    """The store at ``db`` (or the default one); a named file that does not exist is an
    error rather than a new empty database."""
    from companion.store import MatchStore, StoreError

    try:
        missing = db is not None and str(db) != ":memory:" and not Path(db).expanduser().exists()
    except OSError as exc:  # a folder this user cannot read
        raise StoreError(f"Cannot open the database {db}: {exc.strerror}.") from None
    if missing:
        raise StoreError(f"There is no database at {db}.")
    return MatchStore.open(db)


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError as exc:
        raise CompanionError(f"Cannot open the database {path}: {exc.strerror}.") from None


@main.command("matches")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_OPTION_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
@friendly_errors
def matches_command(db, as_json):
    """List the matches kept in the database, the most recent first."""
    from companion.store import default_db_path

    if db is None and not _exists(default_db_path()):
        infos = []
    else:
        with open_store_for_reading(db) as store:
            infos = store.matches()
    if as_json:
        echo_json([info.to_dict() for info in infos])
        return
    if not infos:
        click.echo("No matches yet: start one with `companion serve` or try `companion demo`.")
        return
    click.echo(f"{'ID':>4}  {'Match':<32} {'Rules':<14} {'Rounds':>6} {'Events':>6}  Status")
    for info in infos:
        status = "finished" if info.finished else "in progress"
        label = terminal_safe(info.label, keep="")[:32]
        click.echo(
            f"{info.id:>4}  {label:<32} {info.rules[:14]:<14} {info.rounds:>6}"
            f" {info.last_seq:>6}  {status}"
        )


@main.command("summary")
@click.argument("match", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "html", "pdf", "json"]),
    default="text",
    show_default=True,
    help="text for a terminal, html for a printable A4 page, pdf, or json.",
)
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_OPTION_HELP)
@click.option("--out", "out", type=click.Path(dir_okay=False), help="Write to FILE, not stdout.")
@friendly_errors
def summary_command(match, fmt, db, out):
    """Print the summary of MATCH (an id; the most recent match by default)."""
    from companion.summaries.koikoi import render, summary_from_store

    with open_store_for_reading(db) as store:
        data = render(summary_from_store(store, match), fmt)
    if fmt == "text":  # the other formats escape names themselves (HTML, JSON, PDF strings)
        data = terminal_safe(data.decode("utf-8"), keep="\n\t").encode("utf-8")
    if out:
        try:
            with open(out, "wb") as handle:
                handle.write(data)
        except OSError as exc:
            fail(f"Cannot write {out}: {exc.strerror}.")
        click.echo(f"Wrote {out} ({len(data)} bytes).", err=True)
    elif fmt == "pdf" and sys.stdout.isatty():
        fail("A PDF is not for a terminal: give --out FILE or redirect the output.")
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


@main.command("demo")
@click.option("--pace", type=float, default=1.5, show_default=True, help="Seconds between events.")
@click.option("--port", type=click.IntRange(0, 65535), default=5000, show_default=True)
@click.option("--db", "db", type=click.Path(dir_okay=False), help="Keep the demo in this database.")
@click.option(
    "--camera",
    is_flag=True,
    help="Show the camera keeping the score: a simulated table read by the real pipeline, the "
    "live view beside the tally (films the card images of ../shared/decks).",
)
@friendly_errors
def demo_command(pace, port, db, camera):
    """Serve the tablet page on a built-in scripted match (no camera, no data needed), or with
    --camera a simulated table that the camera pipeline scores by itself."""
    from companion.demo import run_demo

    run_demo(pace=pace, port=port, db=db, camera=camera, echo=lambda line: click.echo(line))


@main.command("bench-live")
@click.option("--clients", type=int, default=20, show_default=True, help="Concurrent followers.")
@click.option("--events", type=int, default=50, show_default=True, help="Events appended.")
@click.option(
    "--interval", type=float, default=0.5, show_default=True, help="Seconds between appends."
)
@click.option(
    "--notify-only", is_flag=True, help="Stop the clock at the live message, not the board fetch."
)
@click.option(
    "--external-writer",
    is_flag=True,
    help="Append without waking the followers, as another process (the camera loop) would.",
)
@click.option(
    "--same-process",
    is_flag=True,
    help="Run the followers as threads of the server's process, not in a process of their own.",
)
@click.option(
    "--fetch-board",
    is_flag=True,
    help="Each follower asks for the board after each update (the way before the board came"
    " in the update itself).",
)
@click.option(
    "--long-match",
    is_flag=True,
    help="Time the events after a whole 12-round match played by hand (about 600 events).",
)
@click.option(
    "--probe-pages",
    is_flag=True,
    help="Also time the match page, asked for every 0.25 s while the followers follow.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@friendly_errors
def bench_live_command(
    clients,
    events,
    interval,
    notify_only,
    external_writer,
    same_process,
    fetch_board,
    long_match,
    probe_pages,
    as_json,
):
    """Latency from an append to each of N live-tally followers seeing it (127.0.0.1 only)."""
    from companion.bench.live_tally import run_live_bench

    result = run_live_bench(
        clients,
        events,
        interval=interval,
        fetch_board=not notify_only,
        external_writer=external_writer,
        same_process=same_process,
        board_in_event=not fetch_board,
        long_match=long_match,
        probe_pages=probe_pages,
    )
    if as_json:
        echo_json(result.to_dict())
    else:
        click.echo(result.text())


@main.command("serve")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_OPTION_HELP)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; 0.0.0.0 lets LAN tablets in (they need the join code).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=5000, show_default=True)
@click.option("--read-only", is_flag=True, help="Show the matches but accept no change.")
@friendly_errors
def serve_command(db, host, port, read_only):
    """Serve the tablet page (scorekeeping with or without a camera)."""
    from companion.web import auth, create_app, hosts, serving

    lan = not hosts.is_loopback(host)
    join_code = auth.new_join_code() if lan and not read_only else None
    public_url = f"http://{hosts.url_host(hosts.lan_address(host))}:{port}" if lan else None
    app = create_app(db, join_code=join_code, read_only=read_only, public_url=public_url)

    def on_ready(server):
        shown_host = hosts.lan_address(host) if lan else host
        url = f"http://{hosts.url_host(shown_host)}:{server.server_port}/"
        click.echo(f"Hanafuda Companion: open {url}  (Ctrl+C to stop)")
        if join_code:
            join_url = f"{url}join?code={join_code}"
            click.echo(f"Join code: {join_code}  (needed before a tablet can change anything)")
            click.echo(auth.qr_text(join_url))
            click.echo(f"Scan to join: {join_url}")
        elif read_only:
            click.echo("Read-only: nobody can change anything on this server.")

    serving.serve(app, host, port, ready=on_ready)


# Each area with commands of its own keeps them in a module of this package, registered on
# ``main`` when imported here.
import companion.cli.decks  # noqa: E402,F401
import companion.cli.hanamikoji  # noqa: E402,F401
import companion.cli.live  # noqa: E402,F401
import companion.cli.simulate  # noqa: E402,F401
from companion.cli import tablet  # noqa: E402,F401
