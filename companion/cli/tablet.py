"""Commands of the tablet's own: ``bench-page``; keeping matches: ``export``, ``import``,
``backup``, ``rename``, ``delete``."""

from __future__ import annotations

from pathlib import Path

import click

from companion.cli.base import (
    echo_json,
    fail,
    friendly_errors,
    open_store_for_reading,
    terminal_safe,
)


@click.command("bench-page")
@click.option("--repeat", type=int, default=30, show_default=True, help="Requests per figure.")
@click.option("--rounds", type=click.IntRange(6, 12), default=12, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@friendly_errors
def bench_page_command(repeat, rounds, as_json):
    """Time the match page, the board fragment and recording an event for a new match and a
    long one (about 600 events): a long match should cost no more to serve."""
    from companion.bench.page import run_page_bench

    result = run_page_bench(repeat=repeat, rounds=rounds)
    if as_json:
        echo_json(result.to_dict())
    else:
        click.echo(result.text())


# ---------------------------------------------------------------------------------------------
# Keeping matches: rename, delete, export, import, backup
# ---------------------------------------------------------------------------------------------

DB_HELP = "SQLite database (default: $COMPANION_DB, else the per-user data folder)."


@click.command("export")
@click.argument("match")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_HELP)
@click.option("--out", "out", type=click.Path(dir_okay=False), help="Write to FILE, not stdout.")
@friendly_errors
def export_command(match, db, out):
    """Export MATCH (an id) as JSON: how it is listed and its whole event log."""
    import json

    with open_store_for_reading(db) as store:
        data = store.export_match(store.resolve_match(match).id)
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    if out:
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as exc:
            fail(f"Cannot write {out}: {exc.strerror}.")
        click.echo(f"Wrote {out} ({len(data['events'])} events).", err=True)
    else:
        click.echo(text, nl=False)


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_HELP)
@friendly_errors
def import_command(file, db):
    """Add a match exported with `companion export` (its log is replayed before it is kept)."""
    from companion import CompanionError
    from companion.store import MAX_EXPORT_BYTES, MatchStore, load_export

    try:
        with open(file, "rb") as handle:
            raw = handle.read(MAX_EXPORT_BYTES + 1)  # a larger file is refused unread
    except OSError as exc:
        fail(f"Cannot read {file}: {exc.strerror}.")
    try:
        data = load_export(raw)
    except CompanionError as exc:
        fail(f"{file}: {exc}")
    with MatchStore.open(db) as store:
        match_id = store.import_match(data)
    click.echo(f"Imported {file} as match {match_id}.")


@click.command("backup")
@click.argument("target", type=click.Path(dir_okay=False))
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_HELP)
@friendly_errors
def backup_command(target, db):
    """Copy the whole database to TARGET (a new file), even while `serve` runs."""
    with open_store_for_reading(db) as store:
        path = store.backup(target)
    click.echo(f"Backed up the database to {path}.")


@click.command("rename")
@click.argument("match")
@click.argument("title")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_HELP)
@friendly_errors
def rename_command(match, title, db):
    """Give MATCH a new TITLE ("" for none)."""
    with open_store_for_reading(db) as store:
        info = store.rename_match(match, title)
    click.echo(f"Match {info.id} is now {terminal_safe(info.label, keep='')!r}.")


@click.command("archive")
@click.argument("match")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_HELP)
@click.option("--undo", is_flag=True, help="Bring the match back among the others.")
@friendly_errors
def archive_command(match, db, undo):
    """Put MATCH away: listed apart on the page, kept whole."""
    with open_store_for_reading(db) as store:
        info = store.archive_match(match, not undo)
    click.echo(f"Match {info.id} is {'archived' if info.archived else 'back among the others'}.")


@click.command("delete")
@click.argument("match")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_HELP)
@click.option("--yes", is_flag=True, help="Do not ask (the match and its log are gone).")
@friendly_errors
def delete_command(match, db, yes):
    """Delete MATCH and its whole log (`companion export` it first to keep a copy)."""
    with open_store_for_reading(db) as store:
        info = store.get_match(match)
        label = terminal_safe(info.label, keep="")
        try:
            sure = yes or click.confirm(f"Delete match {info.id} ({label}) and its log?")
        except click.Abort:  # no answer: standard input empty or closed, or Ctrl+C
            click.echo("", err=True)
            fail("No answer was read, so nothing was deleted: answer y, or give --yes.")
        if not sure:
            fail("Nothing was deleted.")
        store.delete_match(info.id)
    click.echo(f"Deleted match {info.id} ({label}).")


@click.command("stats")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@friendly_errors
def stats_command(db, as_json):
    """Each player across all matches: matches, wins, points, yaku made, Koi calls that paid."""
    from companion.stats import statistics

    with open_store_for_reading(db) as store:
        figures = statistics(store)
    if as_json:
        echo_json(figures.to_dict())
    else:
        click.echo(terminal_safe(figures.text()))


COMMANDS = (bench_page_command, export_command, import_command, backup_command, rename_command, archive_command, delete_command, stats_command)
