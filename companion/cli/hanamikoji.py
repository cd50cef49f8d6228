"""``companion hanamikoji``: score a Hanamikoji match (seed 002) from each round's end."""

from __future__ import annotations

import click

from companion.cli.base import echo_json, fail, friendly_errors


@click.command("hanamikoji")
@click.option(
    "--round",
    "rounds",
    multiple=True,
    metavar="A1,...,A7:B1,...,B7",
    help="Items in front of each geisha at a round's end (Ayane, Iroha, Tomoyo, Yoko, Chiharu, "
    "Anju, Ruri), player A's then player B's; repeat for rounds 2 and 3.",
)
@click.option("--players", default=None, metavar="NAME,NAME", help="Names of A and B (text only).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print rounds, winner and decided_after_round."
)
@friendly_errors
def hanamikoji_command(rounds, players, as_json):
    """Move the favour tokens round by round and say who wins Hanamikoji, and why."""
    from companion.game import hanamikoji

    if not rounds:
        fail("Give at least one --round A1,...,A7:B1,...,B7 (the items at a round's end).")
    names = ("A", "B")
    if players is not None:
        names = tuple(" ".join(n.split()) for n in players.split(","))
        if len(names) != 2 or not all(names):
            fail(f"--players takes two names separated by a comma, not {players!r}.")
    state = hanamikoji.play(rounds, players=names)
    if as_json:
        echo_json(state.contract_dict())
    else:
        click.echo(state.text)


COMMANDS = (hanamikoji_command,)
