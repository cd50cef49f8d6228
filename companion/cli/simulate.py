"""``companion simulate``: whole Koi-Koi rounds on video, with their truth (docs/LIVE.md)."""

from __future__ import annotations

import click

from companion.cli.base import RULES_OPTION_HELP, SEED, FiniteFloatRange, friendly_errors


@click.command("simulate")
@click.option(
    "--deck",
    required=True,
    help="Deck folder of MM-K.png images, or a deck name in ../shared/decks.",
)
@click.option("--seed", default=1, show_default=True, type=SEED, help="Same seed, same video.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder to write table.mp4 and truth.json into.",
)
@click.option(
    "--rounds",
    default=1,
    show_default=True,
    type=click.IntRange(1, 48),
    help="Rounds to play and film, the table cleared between them (the first rounds of the "
    "shortest match the rule set allows).",
)
@click.option("--rules", "rules_name", default="livret", show_default=True, help=RULES_OPTION_HELP)
@click.option("--width", default=1280, show_default=True, type=click.IntRange(min=160))
@click.option("--height", default=720, show_default=True, type=click.IntRange(min=90))
@click.option("--fps", default=10, show_default=True, type=click.IntRange(1, 60))
@click.option(
    "--max-turns",
    type=click.IntRange(min=1),
    default=None,
    help="End each round after this many turns (cards ran out): a short video.",
)
@click.option(
    "--distractors",
    default=0.15,
    show_default=True,
    type=FiniteFloatRange(0.0, 1.0),
    help="Chance, per turn, that an arm crosses the table without playing.",
)
@click.option(
    "--rows",
    type=click.Choice(["overlap", "apart"]),
    default="overlap",
    show_default=True,
    help="How captures lie: overlap (lines by category, each over the one behind it, the top "
    "60 % of every card showing, as players lay them) or apart (rows side by side, as synth "
    "renders them).",
)
@click.option(
    "--players",
    type=click.IntRange(2, 3),
    default=2,
    show_default=True,
    help="Players at the table: 3 for Hana-Awase (--rules hana-awase), B and C sharing the "
    "top edge as the three-seat layout has them.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@friendly_errors
def simulate_command(
    deck,
    seed,
    out_dir,
    rounds,
    rules_name,
    width,
    height,
    fps,
    max_turns,
    distractors,
    rows,
    players,
    quiet,
):
    """Play whole Koi-Koi rounds with scripted players and film them as a camera over the
    table would: DIR/table.mp4 and DIR/truth.json (the engine events, Koi/Stop answers, points)."""
    import sys
    from contextlib import nullcontext

    from companion.simulator import rounds as simulate
    from companion.simulator import synth

    deck_dir = synth.resolve_deck_dir(deck)
    simulate.check_output_dir(out_dir)
    config = simulate.SimConfig(
        width=width,
        height=height,
        fps=fps,
        rules=rules_name,
        rounds=rounds,
        max_turns=max_turns,
        p_distractor=distractors,
        rows=rows,
        players=players,
    )
    plan = simulate.plan_match(seed, config)
    bar = (
        nullcontext(None)
        if quiet
        else click.progressbar(length=plan.frames, label="simulate", file=sys.stderr)
    )
    with bar as progress:
        stats = simulate.write_simulation(
            plan, deck_dir, out_dir, on_frame=progress.update if progress else None
        )
    points = "; ".join(
        f"round {r.number}: " + ", ".join(f"{p} {n:+d}" for p, n in r.points.items())
        for r in plan.rounds
    )
    click.echo(
        f"Wrote {stats['frames']} frames ({stats['rounds']} round(s), {points}) to {out_dir}: "
        f"{stats['seconds_per_round']} s per round ({stats['cpu_seconds_per_round']} s of CPU), "
        f"{stats['ms_per_frame']} ms per frame."
    )


COMMANDS = (simulate_command,)
