"""``companion deck``: the player's own decks, so that the recognizer names their cards."""

from __future__ import annotations

import sys

import click

from companion.cli.base import SEED, echo_json, friendly_errors, terminal_safe

decks_dir_option = click.option(
    "--decks-dir",
    type=click.Path(file_okay=False),
    help="Where added decks are kept (default: 'decks' beside the default match database).",
)


@click.group("deck")
def deck_group():
    """Add the deck you own, so that detect and the live pipeline name its cards."""


@deck_group.command("add")
@click.argument("name")
@click.argument("image_dir", required=False, type=click.Path(file_okay=False))
@click.option(
    "--photos",
    "photo_dir",
    type=click.Path(file_okay=False),
    help="A folder of twelve photos 01.jpg .. 12.jpg, one a month: that month's four cards "
    "face up on a table, left to right in slot order (bright, animal, ribbon, chaff).",
)
@click.option(
    "--names",
    "names_file",
    type=click.Path(dir_okay=False),
    help="The deck's own card names and roles: a deck file (TOML, as "
    "companion/game/decks/ferme-florale.toml), kept with the deck.",
)
@click.option(
    "--back",
    "back_photo",
    type=click.Path(dir_okay=False),
    help="A photo of one card of the deck lying face down: only that back is then called a "
    "face-down card (default: back.jpg in the --photos folder, or a back.png scan in DIR).",
)
@click.option(
    "--definition",
    default="standard",
    show_default=True,
    help="Deck definition naming and re-roling the cards (companion/game/decks/NAME.toml or a "
    "path), e.g. ferme-florale.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Replace the deck of that name if there is one (it is kept until the new one is "
    "written whole).",
)
@decks_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print what was stored as JSON.")
@friendly_errors
def deck_add(
    name, image_dir, photo_dir, names_file, back_photo, definition, replace, decks_dir, as_json
):
    """Add deck NAME from IMAGE_DIR (one scan per card, named like 01-1.png, as in
    ../shared/decks) or from twelve photos (--photos DIR). Takes seconds on a CPU; no
    training."""
    from companion.recognizer.decks import (
        DeckError,
        add_deck,
        check_deck_name,
        default_decks_dir,
        list_decks,
    )
    from companion.recognizer.photos import PhotoError, teach_from_photos

    if (image_dir is None) == (photo_dir is None):
        raise DeckError("Give either a folder of card scans (DIR) or --photos DIR, not both.")
    check_deck_name(name)
    if not replace and name in list_decks(decks_dir):
        raise DeckError(
            f"There is already a deck named {name!r}: give --replace to replace it, or choose "
            "another name."
        )
    if photo_dir is not None:
        try:
            deck = teach_from_photos(
                name, photo_dir, decks_dir, names_file, definition, back_photo=back_photo
            )
        except PhotoError as exc:
            for problem in exc.problems:  # one sentence a photo to take again
                click.echo(f"Error: {terminal_safe(problem, keep='')}", err=True)
            click.echo("Nothing was stored.", err=True)
            sys.exit(2)
    else:
        deck = add_deck(
            name,
            image_dir,
            decks_dir,
            definition=definition,
            names_file=names_file,
            back_photo=back_photo,
        )
    where = decks_dir or default_decks_dir()
    info = {
        "name": deck.name,
        "definition": deck.definition,
        "cards": len(deck.codes),
        "references": len(deck.class_ids),
        "seconds": round(deck.seconds, 2),
        "decks_dir": str(where),
        "source": "photos" if photo_dir is not None else "scans",
        "back": deck.back_embeddings is not None,
    }
    if as_json:
        echo_json(info)
        return
    named = "its own names" if deck.definition == "names.toml" else deck.definition
    click.echo(
        f"Added deck {deck.name!r} ({len(deck.codes)} cards, {len(deck.class_ids)} reference "
        f"crops, named by {named}) in {deck.seconds:.1f} s, kept in {where}."
    )
    if len(deck.codes) < 48:
        click.echo("The other cards keep the recognizer's own names.")
    if deck.back_embeddings is not None:
        click.echo("Face down means this deck's back: nothing else is called a back.")
    click.echo(f"Use it with: companion detect --deck {deck.name} IMAGE")


@deck_group.command("list")
@decks_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the decks as JSON.")
@friendly_errors
def deck_list(decks_dir, as_json):
    """The decks added so far."""
    from companion.recognizer.decks import UserDeck, list_decks

    decks = [UserDeck.load(name, decks_dir) for name in list_decks(decks_dir)]
    if as_json:
        echo_json(
            [
                {
                    "name": d.name,
                    "cards": len(d.codes),
                    "definition": d.definition,
                    "title": d.names_deck().title,
                    "back": d.back_embeddings is not None,
                }
                for d in decks
            ]
        )
        return
    if not decks:
        click.echo("No deck added yet: companion deck add NAME --photos DIR.")
    for deck in decks:
        named = "its own names" if deck.definition == "names.toml" else deck.definition
        back = ", its own back" if deck.back_embeddings is not None else ""
        click.echo(f"{deck.name}: {len(deck.codes)} cards, named by {named}{back}")


@deck_group.command("remove")
@click.argument("name")
@decks_dir_option
@friendly_errors
def deck_remove(name, decks_dir):
    """Delete deck NAME (its references and names)."""
    from companion.recognizer.decks import remove_deck

    folder = remove_deck(name, decks_dir)
    click.echo(f"Removed deck {name!r} ({folder}).")


@deck_group.command("render-photos")
@click.argument("deck")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--seed", default=0, show_default=True, type=SEED)
@friendly_errors
def deck_render_photos(deck, out_dir, seed):
    """Render twelve teaching photos (01.jpg .. 12.jpg) of DECK (a folder of MM-K images or a
    deck in ../shared/decks) into OUT_DIR, for trying 'deck add --photos' (simulator)."""
    from companion.simulator.teaching import write_month_photos

    click.echo(f"Wrote twelve photos in {write_month_photos(out_dir, deck, seed=seed)}.")


@deck_group.command("redesign")
@click.argument("kind", type=click.Choice(["procedural", "recoloured"]))
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--source", default="hwatu-korean", show_default=True, help="Deck to repaint.")
@click.option("--seed", default=0, show_default=True, type=SEED)
@friendly_errors
def deck_redesign(kind, out_dir, source, seed):
    """Write a deck of a design no net was trained on into OUT_DIR (MM-K.png), for measuring:
    procedural (drawn from scratch: flat red or gold grounds, dark frames) or recoloured
    (SOURCE's scans repainted). Simulator; never commit what it writes."""
    from companion.simulator.redesign import procedural_deck, recoloured_deck

    if kind == "procedural":
        where = procedural_deck(out_dir, seed)
    else:
        where = recoloured_deck(source, out_dir, seed)
    click.echo(f"Wrote a {kind} deck in {where}.")


COMMANDS = (deck_group,)
