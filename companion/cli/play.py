"""The player's commands that need neither camera nor recognizer: ``score`` and ``rules`` (the
scoring engine), ``matches`` and ``summary`` (the match store), ``serve`` and ``demo`` (the
tablet page), ``bench-live`` (how soon the tablets see an event)."""

from __future__ import annotations

import sys

import click

from companion.cli.base import (
    DB_OPTION_HELP,
    RULES_OPTION_HELP,
    database_exists,
    echo_json,
    fail,
    friendly_errors,
    open_store_for_reading,
    page_address,
    say_lan_https,
    terminal_safe,
    use_lan_https,
)


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


@click.command("score")
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


@click.group("rules")
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


@click.command("matches")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_OPTION_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
@friendly_errors
def matches_command(db, as_json):
    """List the matches kept in the database, the most recent first."""
    from companion.store import default_db_path

    if db is None and not database_exists(default_db_path()):
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


@click.command("summary")
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
    from companion.summaries import summary_from_store
    from companion.summaries.koikoi import render

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


@click.command("demo")
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


@click.command("bench-live")
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


@click.command("serve")
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
    public_url = f"https://{hosts.url_host(hosts.lan_address(host))}:{port}" if lan else None
    app = create_app(db, join_code=join_code, read_only=read_only, public_url=public_url)

    def on_ready(server):
        url = page_address(host, server.server_port)
        click.echo(f"Hanafuda Companion: open {url}  (Ctrl+C to stop)")
        if join_code:
            click.echo(f"Join code: {join_code}  (needed before a tablet can change anything)")
            join_url = f"{url}join?code={join_code}"
            click.echo(auth.qr_text(join_url))
            click.echo(f"Scan to join: {join_url}")
        elif read_only:
            click.echo("Read-only: nobody can change anything on this server.")
        if lan:
            say_lan_https(app, host, server.server_port)

    if lan:
        use_lan_https(app, host)
    serving.serve(app, host, port, ready=on_ready)


COMMANDS = (score_command, rules_group, matches_command, summary_command, demo_command, bench_live_command, serve_command)
