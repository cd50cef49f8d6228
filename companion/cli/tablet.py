"""Commands of the tablet page's own: ``companion bench-page``."""

from __future__ import annotations

import click

from companion.cli import echo_json, friendly_errors, main


@main.command("bench-page")
@click.option("--repeat", type=int, default=30, show_default=True, help="Requests per figure.")
@click.option("--rounds", type=click.IntRange(6, 12), default=12, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@friendly_errors
def bench_page_command(repeat, rounds, as_json):
    """Time the match page, the board fragment and recording an event for a new match and a
    long one (about 600 events): a long match should cost no more to serve."""
    from companion.page_bench import run_page_bench

    result = run_page_bench(repeat=repeat, rounds=rounds)
    if as_json:
        echo_json(result.to_dict())
    else:
        click.echo(result.text())
