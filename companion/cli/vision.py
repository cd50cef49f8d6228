"""Vision commands: render scenes, detect cards, evaluate and time the recognizer.

They need OpenCV, numpy and onnxruntime only, as the player's install has them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import click

from companion import CompanionError
from companion.cli.base import (
    SEED,
    FiniteFloatRange,
    echo_json,
    fail,
    friendly_errors,
    model_option,
    pct,
)
from companion.cli.decks import decks_dir_option

tiny_option = click.option(
    "--tiny", is_flag=True, help="Half-width nets (for tests and smoke runs)."
)


def count_option(name: str, default: int, help: str, minimum: int = 1):
    return click.option(
        name, default=default, show_default=True, type=click.IntRange(min=minimum), help=help
    )


def seed_option(help: str):
    return click.option("--seed", default=1, show_default=True, type=SEED, help=help)


lens_k_option = click.option(
    "--lens-k",
    default=0.0,
    show_default=True,
    type=FiniteFloatRange(-0.2, 0.5),
    help="See every scene through a camera lens with this radial distortion "
    "(companion/simulator/lens.py: > 0 barrel, as in wide-angle webcams; < 0 pincushion).",
)


@click.command()
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Dataset folder to write (required unless --bench).",
)
@click.option("--n", "n", default=100, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=SEED, help="Same seed, same scenes.")
@click.option(
    "--deck",
    "decks",
    multiple=True,
    help="Deck folder of MM-K.png images, or a deck name in ../shared/decks (repeatable; "
    "default: all of them).",
)
@click.option(
    "--background",
    "backgrounds",
    multiple=True,
    help="Texture folder or file (repeatable; default: ../shared/backgrounds).",
)
@click.option("--width", default=1280, show_default=True, type=click.IntRange(min=64))
@click.option("--height", default=720, show_default=True, type=click.IntRange(min=64))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--bench", is_flag=True, help="Time N scenes in memory, print JSON, write nothing.")
@lens_k_option
@click.option(
    "--restyle",
    default=0.0,
    show_default=True,
    type=FiniteFloatRange(0.0, 1.0),
    help="Chance that a scene's faces are printed in inks of their own (hues turned, "
    "saturation and contrast changed: synth.deck_style), as train --restyle-scenes renders.",
)
@friendly_errors
def render(
    out_dir, n, seed, decks, backgrounds, width, height, workers, quiet, bench, lens_k, restyle
):
    """Render synthetic table scenes with ground truth: images/NNNNNN.jpg + labels.jsonl."""
    import time

    from companion.simulator import synth

    config = synth.SceneConfig(
        width=width,
        height=height,
        decks=tuple(synth.resolve_deck_dir(d) for d in decks),
        backgrounds=tuple(backgrounds),
        lens_k=lens_k,
        p_restyle=restyle,
    )
    if bench:
        echo_json(synth.benchmark(n, config, seed))
        return
    if not out_dir:
        fail("--out DIR is required (or use --bench).")
    start = time.perf_counter()
    path = synth.write_dataset(out_dir, n, seed, config, progress=not quiet, workers=workers)
    rate = n / (time.perf_counter() - start)
    click.echo(f"Wrote {n} scenes to {path} ({rate:.1f} scenes/s at {width}x{height}).")


def deck_names(decks) -> list[str]:
    """Deck names from a repeatable ``--decks`` option, each value comma-separated."""
    return [d.strip() for item in decks for d in item.split(",") if d.strip()]


def resolve_deck(deck: str) -> str:
    """A deck folder path, or the name of a deck in ../shared/decks."""
    from companion.simulator import synth

    candidate = synth.find_shared_dir() / "decks" / deck
    try:
        if Path(deck).is_dir():
            return deck
        if candidate.is_dir():
            return str(candidate)
    except OSError:  # a name longer than the system takes: no such folder either
        pass
    shown = deck if len(deck) <= 60 else f"{deck[:40]}..."
    raise CompanionError(
        f"No deck folder {shown!r} (neither a folder nor a deck in {candidate.parent})."
    )


nets_option = click.option(
    "--nets",
    "nets",
    default="auto",
    show_default=True,
    # recognizer.NETS, written out: importing the recognizer loads OpenCV for every command
    type=click.Choice(["auto", "int8", "float", "avx2"]),
    help="Which of the model's nets run: auto takes int8 on CPUs with int8 dot products, "
    "avx2 (a float localizer, a 7-bit classifier) on other x86 CPUs.",
)


user_deck_option = click.option(
    "--deck",
    "deck",
    help="Name the cards of a deck you added with 'companion deck add' (and its definition's "
    "names in the JSON).",
)


def load_with_deck(model_path, threads, nets, deck, decks_dir):
    """The recognizer, naming the cards of the added deck ``deck`` where one is given."""
    from companion.recognizer import Recognizer
    from companion.recognizer.decks import UserDeck

    user_deck = UserDeck.load(deck, decks_dir) if deck else None  # a clear error first
    return Recognizer.load(model_path, threads=threads, nets=nets).with_deck(user_deck)


@click.command("detect")
@click.argument("images", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON document (a list, one entry per image)."
)
@click.option(
    "--annotate",
    "annotate_dir",
    type=click.Path(file_okay=False),
    help="Write annotated copies of the images here.",
)
@model_option
@click.option(
    "--threads",
    default=2,
    show_default=True,
    type=click.IntRange(1, 64),
    help="onnxruntime threads.",
)
@nets_option
@user_deck_option
@decks_dir_option
@friendly_errors
def detect_command(images, as_json, annotate_dir, model_path, threads, nets, deck, decks_dir):
    """Find and name every card in IMAGE files (quads in original image pixels)."""
    import cv2

    from companion.recognizer import RecognizerError, annotate, read_image

    if annotate_dir:
        try:
            Path(annotate_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(f"Cannot write annotated images to {annotate_dir}: {exc.strerror}.")
    recognizer = load_with_deck(model_path, threads, nets, deck, decks_dir)
    names = None
    if recognizer.namer is not None:  # the deck's own names, or its definition's
        names = recognizer.namer.deck.names_deck()
    results, read_any = [], False
    for path in images:
        try:
            image = read_image(path)
        except RecognizerError as exc:
            click.echo(f"Error: {exc}", err=True)
            continue
        read_any = True
        det = recognizer.detect(image)
        found = det.to_json()
        if names is not None:  # the deck definition's names of its slots
            for item in found:
                if item["card"] != "back":
                    card_names = names.card(item["card"]).names
                    item["name"] = card_names.get("en", item["card"])
                    item["names"] = dict(card_names)  # every language the deck names it in
        results.append({"image": path, "detections": found})
        if annotate_dir:
            target = Path(annotate_dir) / (Path(path).stem + ".annotated.png")
            if not cv2.imwrite(str(target), annotate(image, det)):
                fail(f"Cannot write the annotated image {target}.")
        if not as_json:
            click.echo(f"{path}: {len(det)} card(s)")
            for d in found:
                alts = ", ".join(
                    f"{a['card']} {a['confidence']:.2f}" for a in d["alternatives"][:2]
                )
                name = f"  {d['name']}" if "name" in d else ""
                click.echo(f"  {d['card']:>5} {d['confidence']:.2f}{name}  (next: {alts})")
    if as_json:
        echo_json(results)
    if not read_any:
        sys.exit(2)


def interval_text(spans: dict, key: str, show) -> str:
    """One of ``eval``'s intervals (``spans``: its "intervals"), its bounds written by ``show``,
    in brackets; empty where there is none."""
    if not spans[key]:
        return ""
    low, high = spans[key]
    return f"({100 * spans['level']:g} % interval, scenes resampled: {show(low)} to {show(high)})"


def echo_comparison(against_path: str, other: dict) -> None:
    """``eval --against``: the other model's figures, and this model's minus them."""
    diff, spans = other["difference"], other["intervals"]

    def minus(key, show):
        if diff[key] is None:
            return "n/a"
        return f"{show(diff[key])} {interval_text(spans, key, show)}"

    click.echo(f"against {against_path} (this model minus it):")
    points = minus("recall", lambda v: f"{100 * v:+.2f} points")
    click.echo(f"  recall                  {pct(other['recall'])}; {points}")
    false_rate = minus("false_positives_per_image", lambda v: f"{v:+.3f}")
    click.echo(f"  false positives / image {other['false_positives_per_image']:.3f}; {false_rate}")


@click.command("eval")
@click.option(
    "--deck",
    required=True,
    help="Deck folder (or name in ../shared/decks) to render test scenes from.",
)
@click.option("--seed", default=0, show_default=True, type=SEED, help="Test set seed.")
@click.option(
    "--n", "n", default=500, show_default=True, type=click.IntRange(min=1), help="Number of scenes."
)
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
@model_option
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 16),
    help="Processes rendering scenes.",
)
@click.option("--record", is_flag=True, help="Also store the metrics in the model's metadata JSON.")
@lens_k_option
@nets_option
@click.option(
    "--misses",
    "misses_dir",
    type=click.Path(file_okay=False, writable=True),
    help="Write each scene with a missed or false card into this folder, outlined and tagged.",
)
@click.option(
    "--against",
    "against_path",
    type=click.Path(),
    help="Also run this model (metadata JSON or its folder) on the same scenes, and say how "
    "much better or worse --model is, with how far that difference could move.",
)
@click.option(
    "--with-deck",
    "with_deck",
    help="Name the cards by a deck added with 'companion deck add' (as detect --deck).",
)
@decks_dir_option
@click.option("--width", default=1280, show_default=True, type=click.IntRange(min=64))
@click.option("--height", default=720, show_default=True, type=click.IntRange(min=64))
@click.option(
    "--closeups",
    is_flag=True,
    help="Close-ups of 1-3 cards filling 30-80 %% of the frame's short side, turned and tilted "
    "up to 60 degrees, instead of whole tables.",
)
@click.option("--one-look", is_flag=True, help="Only the first look at each frame.")
@click.option(
    "--rescue/--no-rescue",
    default=True,
    show_default=True,
    help="With --with-deck of a design the classifier does not know: add the cards it outlined "
    "but named unsure.",
)
@click.option(
    "--shapes/--no-shapes",
    default=False,
    show_default=True,
    help="... and those found by their shape alone (a card-shaped rectangle on the table).",
)
@click.option(
    "--verify/--no-verify",
    default=True,
    show_default=True,
    help="With --with-deck: confirm the deck's cards by their own points (names, cards the "
    "nets missed, outlines that are not a card).",
)
@friendly_errors
def eval_command(
    deck,
    seed,
    n,
    as_json,
    model_path,
    workers,
    record,
    lens_k,
    nets,
    misses_dir,
    against_path,
    with_deck,
    decks_dir,
    width,
    height,
    closeups,
    one_look,
    rescue,
    shapes,
    verify,
):
    """Score the recognizer on synthetic scenes of one deck (IoU >= 0.5 matching)."""
    from companion.bench.evaluation import evaluate
    from companion.recognizer import Recognizer

    deck_dir = resolve_deck(deck)
    recognizer = load_with_deck(model_path, 2, nets, with_deck, decks_dir)
    recognizer.any_distance = not one_look
    recognizer.rescue, recognizer.shape_proposals = rescue, shapes
    recognizer.verify = verify
    other = Recognizer.load(against_path, nets=nets) if against_path else None
    report = evaluate(
        recognizer,
        deck_dir,
        seed=seed,
        n=n,
        workers=workers,
        lens_k=lens_k,
        misses_dir=misses_dir,
        against=other,
        width=width,
        height=height,
        closeup=closeups,
    )
    if record:
        from companion.recognizer import metadata_path

        meta_path = metadata_path(model_path)
        meta = json.loads(meta_path.read_text())
        command = f"companion eval --deck {deck} --seed {seed} --n {n}"
        if model_path:
            command += f" --model {model_path}"
        if nets != "auto":
            command += f" --nets {nets}"
        if lens_k:
            command += f" --lens-k {lens_k:g}"
        key = f"{report.deck} seed={seed} n={n}"
        if recognizer.nets != "int8":
            key += f" nets={recognizer.nets}"
        if lens_k:
            key += f" lens_k={lens_k:g}"
        meta.setdefault("metrics", {})[key] = {
            k: v
            for k, v in report.to_dict().items()
            # the long breakdowns, what only this run drew, and the other model's figures
            if k not in ("by_condition", "false_positives_by_scene", "scenes_drawn", "against")
        } | {"command": command, "nets": recognizer.nets}
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    if as_json:
        echo_json(report.to_dict())
        return

    click.echo(
        f"deck {report.deck}, seed {seed}, {n} {report.frame} scenes, "
        f"{report.labels} cards to find "
        f"({recognizer.nets} nets)"
        + (f", lens distortion k={lens_k:+g}" if lens_k else "")
        + (f", named by deck {with_deck}" if with_deck else "")
    )
    click.echo(f"precision                 {pct(report.precision)}")

    def span(key, show):
        text = interval_text(report.intervals, key, show)
        return f"   {text}" if text else ""

    click.echo(f"recall                    {pct(report.recall)}{span('recall', pct)}")
    click.echo(f"exact-card accuracy       {pct(report.exact_accuracy)}")
    click.echo(f"chaff-equivalent accuracy {pct(report.chaff_accuracy)}")
    fp = report.false_positives_per_image
    click.echo(
        f"false positives / image   {fp:.3f}"
        + span("false_positives_per_image", lambda v: f"{v:.3f}")
    )
    click.echo(
        f"face-up cards called back {report.faces_called_back}; face-down cards named back "
        f"{report.backs_named} of {report.backs_to_find}"
    )
    if report.confused_pairs:
        click.echo(
            "most confused (true -> predicted): "
            + ", ".join(
                f"{p['true']}->{p['predicted']} x{p['count']}" for p in report.confused_pairs
            )
        )
    if report.false_positive_kinds:
        click.echo(
            "false positives by kind:   "
            + ", ".join(f"{k} {c}" for k, c in report.false_positive_kinds.items())
        )
    if report.missed_card_kinds:
        click.echo(
            "missed cards by where lost: "
            + ", ".join(f"{k} {c}" for k, c in report.missed_card_kinds.items())
        )
    if report.against is not None:
        echo_comparison(against_path, report.against)
    click.echo("by condition:                     cards   recall   exact   chaff-eq")
    for key, t in report.by_condition.items():
        click.echo(
            f"  {key:<30} {t.labels:>6} {pct(t.recall):>9} {pct(t.exact_accuracy):>8} "
            f"{pct(t.chaff_accuracy):>9}"
        )
    click.echo("false positives by scene:        images  per image")
    for key, t in report.false_positives_by_scene.items():
        click.echo(f"  {key:<30} {t.images:>6} {t.per_image:>10.3f}")
    if misses_dir is not None:
        click.echo(
            f"{report.scenes_drawn} scenes with a missed or false card drawn in {misses_dir}"
        )


@click.command("bench")
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON: ms_median, ms_p95, yolo11n_ms_median."
)
@model_option
@click.option(
    "--runs",
    default=80,
    show_default=True,
    type=click.IntRange(min=5),
    help="Timed frames, cycling through the set (fewer than --scenes: its first ones only).",
)
@click.option(
    "--scenes",
    default=40,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many scenes of the fixed set to time.",
)
@click.option(
    "--seed",
    default=68,
    show_default=True,
    type=SEED,
    help="The set's seed (the model card's: 68).",
)
@click.option(
    "--deck",
    default="traditional-scan",
    show_default=True,
    help="Deck folder (or name in ../shared/decks) the scenes show: the held-out deck.",
)
@click.option("--width", default=1280, show_default=True, type=click.IntRange(min=64))
@click.option("--height", default=720, show_default=True, type=click.IntRange(min=64))
@nets_option
@click.option(
    "--one-look",
    is_flag=True,
    help="Only the first look at each frame (no coarser or finer ones): what they cost.",
)
@click.option("--with-deck", "with_deck", help="Name the cards by a deck added with 'deck add'.")
@decks_dir_option
@friendly_errors
def bench_command(
    as_json,
    model_path,
    runs,
    scenes,
    seed,
    deck,
    width,
    height,
    nets,
    one_look,
    with_deck,
    decks_dir,
):
    """Time detect-and-classify on a fixed set of rendered table scenes with 2 threads, next to
    a YOLO11n-shaped net on the same frames."""
    from companion.bench.recognizer_speed import bench_frames, benchmark

    recognizer = load_with_deck(model_path, 2, nets, with_deck, decks_dir)
    recognizer.any_distance = not one_look
    frames = bench_frames(min(runs, scenes), seed, resolve_deck(deck), width, height)
    result = dataclasses.replace(
        benchmark(recognizer, frames, runs=runs, threads=2),
        scene={
            "scenes": len(frames),
            "seed": seed,
            "deck": Path(resolve_deck(deck)).name,
            "looks": "one" if one_look else "as needed",
            "named_by_deck": with_deck,
        },
    )
    if as_json:
        echo_json(result.to_dict())
        return
    click.echo(
        f"full pass ({result.nets} nets) on {len(frames)} {result.frame} scenes of "
        f"{result.scene['deck']} (seed {seed}), 2 threads, {runs} runs: median "
        f"{result.ms_median:.1f} ms, p95 {result.ms_p95:.1f} ms "
        f"({result.cards_per_frame:.1f} cards a frame)"
    )
    dot = "with" if result.int8_dot_products else "without"
    click.echo(f"CPU: {result.cpu} ({dot} int8 dot products)")
    if result.yolo11n_ms_median is None:
        click.echo(
            "YOLO11n yardstick: models/yolo11n_yardstick.onnx missing (companion train --yardstick)."
        )
    else:
        click.echo(
            f"YOLO11n-shaped net at 640x640 on the same frames: median "
            f"{result.yolo11n_ms_median:.1f} ms ({result.speedup_vs_yolo11n:.1f}x slower "
            "than the full pass)"
        )


COMMANDS = (render, detect_command, eval_command, bench_command)
