"""``companion deck``: the player's own decks, so that the recognizer names their cards."""

from __future__ import annotations

import click

from companion.cli import echo_json, friendly_errors, main

decks_dir_option = click.option(
    "--decks-dir",
    type=click.Path(file_okay=False),
    help="Where added decks are kept (default: 'decks' beside the default match database).",
)


@main.group("deck")
def deck_group():
    """Add the deck you own, so that detect and the live pipeline name its cards."""


@deck_group.command("add")
@click.argument("name")
@click.argument("image_dir", type=click.Path(file_okay=False))
@click.option(
    "--definition",
    default="standard",
    show_default=True,
    help="Deck definition naming and re-roling the cards (companion/game/decks/NAME.toml or a path), "
    "e.g. ferme-florale.",
)
@decks_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print what was stored as JSON.")
@friendly_errors
def deck_add(name, image_dir, definition, decks_dir, as_json):
    """Add deck NAME from IMAGE_DIR: one image per card, named like 01-1.png (month-card, as
    in ../shared/decks). Takes seconds on a CPU; no training."""
    from companion.recognizer.decks import add_deck, default_decks_dir

    deck = add_deck(name, image_dir, decks_dir, definition=definition)
    where = decks_dir or default_decks_dir()
    info = {
        "name": deck.name,
        "definition": deck.definition,
        "cards": len(deck.codes),
        "references": len(deck.class_ids),
        "seconds": round(deck.seconds, 2),
        "decks_dir": str(where),
    }
    if as_json:
        echo_json(info)
        return
    click.echo(
        f"Added deck {deck.name!r} ({len(deck.codes)} cards, {len(deck.class_ids)} reference "
        f"crops, named by {deck.definition}) in {deck.seconds:.1f} s, kept in {where}."
    )
    if len(deck.codes) < 48:
        click.echo("The other cards keep the recognizer's own names.")
    click.echo(f"Use it with: companion detect --deck {deck.name} IMAGE")


@deck_group.command("list")
@decks_dir_option
@friendly_errors
def deck_list(decks_dir):
    """The decks added so far."""
    from companion.recognizer.decks import UserDeck, list_decks

    names = list_decks(decks_dir)
    if not names:
        click.echo("No deck added yet: companion deck add NAME DIR.")
    for name in names:
        deck = UserDeck.load(name, decks_dir)
        click.echo(f"{name}: {len(deck.codes)} cards, named by {deck.definition}")
