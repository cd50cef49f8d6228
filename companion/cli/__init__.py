"""The ``companion`` command: a thin click layer over the library.

Every command turns bad input into exit code 2 and one sentence on stderr (``fail``), never a
traceback. Each area keeps its commands in its own section below; the work is done in the
library modules, not here.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import click

from companion import CompanionError, __version__


def fail(message: str) -> None:
    """Print one sentence to stderr and exit with code 2 (bad input)."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="companion")
def main():
    """Hanafuda Companion: follow a physical Hanafuda game from camera to score."""


# ---------------------------------------------------------------------------------------------
# Scoring engine: score, rules
# ---------------------------------------------------------------------------------------------

RULES_OPTION_HELP = "Preset name (see `companion rules list`) or path to a rule file (.toml)."


def pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.2f} %"


def load_rules(name_or_file: str, option_pairs=()):
    """The rule set with ``ID=on|off`` options applied; RuleError on bad input."""
    from companion.rules import RuleError, RuleSet

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
    from companion.scoring import score_hand

    for flag, value in (
        ("--koi", koi),
        ("--opponent-koi", opponent_koi),
        ("--field-brights", field_brights),
    ):
        if value < 0:
            fail(f"{flag} must be 0 or more, not {value}.")
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
    from companion.rules import RuleSet

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


# ---------------------------------------------------------------------------------------------
# Card recognizer: detect, eval, bench, render, train
# ---------------------------------------------------------------------------------------------

model_option = click.option(
    "--model",
    "model_path",
    type=click.Path(),
    help="Model metadata JSON (default: models/recognizer.json).",
)
tiny_option = click.option(
    "--tiny", is_flag=True, help="Half-width nets (for tests and smoke runs)."
)


def count_option(name: str, default: int, help: str, minimum: int = 1):
    return click.option(
        name, default=default, show_default=True, type=click.IntRange(min=minimum), help=help
    )


def seed_option(help: str):
    return click.option("--seed", default=1, show_default=True, type=int, help=help)


lens_k_option = click.option(
    "--lens-k",
    default=0.0,
    show_default=True,
    type=click.FloatRange(-0.2, 0.5),
    help="See every scene through a camera lens with this radial distortion "
    "(companion/lens.py: > 0 barrel, as in wide-angle webcams; < 0 pincushion).",
)


@main.command()
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Dataset folder to write (required unless --bench).",
)
@click.option("--n", "n", default=100, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int, help="Same seed, same scenes.")
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
    type=click.FloatRange(0.0, 1.0),
    help="Chance that a scene's faces are printed in inks of their own (hues turned, "
    "saturation and contrast changed: synth.deck_style), as train --restyle-scenes renders.",
)
@friendly_errors
def render(
    out_dir, n, seed, decks, backgrounds, width, height, workers, quiet, bench, lens_k, restyle
):
    """Render synthetic table scenes with ground truth: images/NNNNNN.jpg + labels.jsonl."""
    import time

    from companion import synth

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


def _deck_names(decks) -> list[str]:
    """Deck names from a repeatable ``--decks`` option, each value comma-separated."""
    return [d.strip() for item in decks for d in item.split(",") if d.strip()]


def _resolve_deck(deck: str) -> str:
    """A deck folder path, or the name of a deck in ../shared/decks."""
    from companion import synth

    if Path(deck).is_dir():
        return deck
    candidate = synth.find_shared_dir() / "decks" / deck
    if candidate.is_dir():
        return str(candidate)
    raise CompanionError(
        f"No deck folder {deck!r} (neither a folder nor a deck in {candidate.parent})."
    )


precision_option = click.option(
    "--nets",
    "precision",
    default="auto",
    show_default=True,
    # recognizer.PRECISIONS, written out: importing the recognizer loads OpenCV for every command
    type=click.Choice(["auto", "int8", "float", "avx2"]),
    help="Which of the model's nets run: auto takes int8 on CPUs with int8 dot products, "
    "avx2 (a float localizer, a 7-bit classifier) on other x86 CPUs.",
)


@main.command("detect")
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
@precision_option
@friendly_errors
def detect_command(images, as_json, annotate_dir, model_path, threads, precision):
    """Find and name every card in IMAGE files (quads in original image pixels)."""
    import cv2

    from companion.recognizer import Recognizer, RecognizerError, annotate, read_image

    recognizer = Recognizer.load(model_path, threads=threads, precision=precision)
    results, read_any = [], False
    for path in images:
        try:
            image = read_image(path)
        except RecognizerError as exc:
            click.echo(f"Error: {exc}", err=True)
            continue
        read_any = True
        det = recognizer.detect(image)
        results.append({"image": path, "detections": det.to_json()})
        if annotate_dir:
            out = Path(annotate_dir)
            out.mkdir(parents=True, exist_ok=True)
            target = out / (Path(path).stem + ".annotated.png")
            cv2.imwrite(str(target), annotate(image, det))
        if not as_json:
            click.echo(f"{path}: {len(det)} card(s)")
            for d in det.to_json():
                alts = ", ".join(
                    f"{a['card']} {a['confidence']:.2f}" for a in d["alternatives"][:2]
                )
                click.echo(f"  {d['card']:>5} {d['confidence']:.2f}  (next: {alts})")
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


@main.command("eval")
@click.option(
    "--deck",
    required=True,
    help="Deck folder (or name in ../shared/decks) to render test scenes from.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Test set seed.")
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
@precision_option
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
@friendly_errors
def eval_command(
    deck, seed, n, as_json, model_path, workers, record, lens_k, precision, misses_dir, against_path
):
    """Score the recognizer on synthetic scenes of one deck (IoU >= 0.5 matching)."""
    from companion.recognizer import Recognizer, evaluate

    deck_dir = _resolve_deck(deck)
    recognizer = Recognizer.load(model_path, precision=precision)
    other = Recognizer.load(against_path, precision=precision) if against_path else None
    metrics = evaluate(
        recognizer,
        deck_dir,
        seed=seed,
        n=n,
        workers=workers,
        lens_k=lens_k,
        misses_dir=misses_dir,
        against=other,
    )
    if record:
        from companion.recognizer import metadata_path

        meta_path = metadata_path(model_path)
        meta = json.loads(meta_path.read_text())
        command = f"companion eval --deck {deck} --seed {seed} --n {n}"
        if model_path:
            command += f" --model {model_path}"
        if precision != "auto":
            command += f" --nets {precision}"
        if lens_k:
            command += f" --lens-k {lens_k:g}"
        key = f"{metrics['deck']} seed={seed} n={n}"
        if recognizer.precision != "int8":
            key += f" nets={recognizer.precision}"
        if lens_k:
            key += f" lens_k={lens_k:g}"
        meta.setdefault("metrics", {})[key] = {
            k: v
            for k, v in metrics.items()
            # the long breakdowns, what only this run drew, and the other model's figures
            if k not in ("by_condition", "false_positives_by_scene", "scenes_drawn", "against")
        } | {"command": command, "nets": recognizer.precision}
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    if as_json:
        echo_json(metrics)
        return

    click.echo(
        f"deck {metrics['deck']}, seed {seed}, {n} scenes, {metrics['labels']} cards to find "
        f"({recognizer.precision} nets)" + (f", lens distortion k={lens_k:+g}" if lens_k else "")
    )
    click.echo(f"precision                 {pct(metrics['precision'])}")

    def span(key, show):
        text = interval_text(metrics["intervals"], key, show)
        return f"   {text}" if text else ""

    click.echo(f"recall                    {pct(metrics['recall'])}{span('recall', pct)}")
    click.echo(f"exact-card accuracy       {pct(metrics['exact_accuracy'])}")
    click.echo(f"chaff-equivalent accuracy {pct(metrics['chaff_accuracy'])}")
    fp = metrics["false_positives_per_image"]
    click.echo(
        f"false positives / image   {fp:.3f}"
        + span("false_positives_per_image", lambda v: f"{v:.3f}")
    )
    if metrics["confused_pairs"]:
        click.echo(
            "most confused (true -> predicted): "
            + ", ".join(
                f"{p['true']}->{p['predicted']} x{p['count']}" for p in metrics["confused_pairs"]
            )
        )
    if metrics["false_positive_kinds"]:
        click.echo(
            "false positives by kind:   "
            + ", ".join(f"{k} {c}" for k, c in metrics["false_positive_kinds"].items())
        )
    if metrics["missed_card_kinds"]:
        click.echo(
            "missed cards by where lost: "
            + ", ".join(f"{k} {c}" for k, c in metrics["missed_card_kinds"].items())
        )
    if "against" in metrics:
        echo_comparison(against_path, metrics["against"])
    click.echo("by condition:                     cards   recall   exact   chaff-eq")
    for key, t in metrics["by_condition"].items():
        click.echo(
            f"  {key:<30} {t['labels']:>6} {pct(t['recall']):>9} {pct(t['exact_accuracy']):>8} "
            f"{pct(t['chaff_accuracy']):>9}"
        )
    click.echo("false positives by scene:        images  per image")
    for key, t in metrics["false_positives_by_scene"].items():
        click.echo(f"  {key:<30} {t['images']:>6} {t['per_image']:>10.3f}")
    if misses_dir is not None:
        click.echo(
            f"{metrics['scenes_drawn']} scenes with a missed or false card drawn in {misses_dir}"
        )


@main.command("fit-acceptance")
@model_option
@click.option(
    "--decks",
    "decks",
    multiple=True,
    help="Decks to render scenes from, comma-separated or repeated. Default: the model's own "
    "training decks (never its held-out one).",
)
@click.option(
    "--seed",
    default=300,
    show_default=True,
    type=int,
    help="Dataset seed of the first deck's scenes (deck k: seed + k).",
)
@count_option("--n", 750, "Scenes per deck.")
@click.option(
    "--trees",
    default=100,
    show_default=True,
    type=click.IntRange(0, 1000),
    help="Boosted trees (depth 3) fitted on top of the weights to bend the rule where the "
    "crops need it (Settings.accept_trees); 0: the weights alone.",
)
@click.option(
    "--above",
    default=None,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="How likely a crop must be a card to count as one (Settings.accept_above). "
    "Default: 0.7 with trees, 0.75 without (chosen on validation scenes, models/JOURNAL.md).",
)
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(1, 16),
    help="Processes rendering scenes.",
)
@precision_option
@friendly_errors
def fit_acceptance_command(model_path, decks, seed, n, trees, above, workers, precision):
    """Fit the learned acceptance rule to this model's nets on rendered scenes and write it
    into the model's metadata (settings.accept_weights, accept_trees, accept_above)."""
    from companion.recognizer import ACCEPT_FEATURES, Recognizer, fit_acceptance, metadata_path

    meta_path = metadata_path(model_path)
    recognizer = Recognizer.load(model_path, precision=precision)
    meta = recognizer.metadata
    names = _deck_names(decks) or list(meta.get("training", {}).get("decks", []))
    if not names:
        fail("This model's metadata names no training decks: say which with --decks.")
    deck_dirs = [_resolve_deck(d) for d in names]
    with click.progressbar(length=n * len(deck_dirs), label="Scenes", file=sys.stderr) as bar:
        fit = fit_acceptance(
            recognizer,
            deck_dirs,
            seed=seed,
            n=n,
            workers=workers,
            progress=lambda done: bar.update(done - bar.pos),
            trees=trees,
        )
    if above is None:
        above = 0.7 if trees else 0.75
    command = "companion fit-acceptance"
    if model_path:
        command += f" --model {model_path}"
    if decks:
        command += f" --decks {','.join(names)}"
    command += f" --seed {seed} --n {n} --trees {trees} --above {above:g}"
    if precision != "auto":
        command += f" --nets {precision}"
    meta = json.loads(meta_path.read_text())  # as on disk: nothing the recognizer filled in
    meta["settings"]["accept_weights"] = [round(w, 4) for w in fit.weights]
    meta["settings"]["accept_trees"] = fit.trees.to_dict() if fit.trees else None
    meta["settings"]["accept_above"] = above
    meta.setdefault("training", {})["acceptance"] = {
        "command": command,
        "decks": names,
        "seed": seed,
        "scenes_per_deck": n,
        "nets": recognizer.precision,
        "above": above,
        **fit.to_dict(),
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    click.echo(
        f"Fitted on {fit.crops} crops of {fit.scenes} scenes ({fit.cards} outlining a card, "
        f"{fit.crops - fit.cards - fit.ignored} outlining none, {fit.ignored} left out); "
        f"wrote the weights into {meta_path}:"
    )
    for name, weight in zip(ACCEPT_FEATURES, fit.weights, strict=True):
        click.echo(f"  {name:<16} {weight:+.4f}")
    if fit.trees:
        click.echo(
            f"and {len(fit.trees.features)} trees of depth {fit.trees.depth} on top; "
            f"a crop counts as a card from {above:g} likely."
        )


@main.command("bench")
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON: ms_median, ms_p95, yolo11n_ms_median."
)
@model_option
@click.option("--runs", default=50, show_default=True, type=click.IntRange(min=5))
@precision_option
@friendly_errors
def bench_command(as_json, model_path, runs, precision):
    """Time detect-and-classify on a 1280x720 table scene with 2 threads, next to YOLO11n."""
    from companion.recognizer import Recognizer, bench_scene, benchmark

    recognizer = Recognizer.load(model_path, threads=2, precision=precision)
    frame, _ = bench_scene()
    result = benchmark(recognizer, frame, runs=runs, threads=2)
    if as_json:
        echo_json(result)
        return
    click.echo(
        f"full pass ({result['nets']} nets) on a {result['frame']} frame, 2 threads, {runs} runs: "
        f"median {result['ms_median']:.1f} ms, p95 {result['ms_p95']:.1f} ms "
        f"({result['cards_detected']} cards)"
    )
    dot = "with" if result["int8_dot_products"] else "without"
    click.echo(f"CPU: {result['cpu']} ({dot} int8 dot products)")
    if result["yolo11n_ms_median"] is None:
        click.echo(
            "YOLO11n yardstick: models/yolo11n_yardstick.onnx missing (companion train --yardstick)."
        )
    else:
        click.echo(
            f"YOLO11n-shaped net at 640x640: median {result['yolo11n_ms_median']:.1f} ms "
            f"({result['speedup_vs_yolo11n']:.1f}x slower than the full pass)"
        )


@main.command("train")
@click.option(
    "--out",
    "out_dir",
    default="companion/models",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for the ONNX files and recognizer.json.",
)
@click.option(
    "--decks",
    "decks",
    multiple=True,
    help="Training decks, comma-separated or repeated (names in ../shared/decks or folders). Default: traditional-ngs, modern-mantia, hwatu-korean.",
)
@count_option("--scenes", 2500, "Synthetic scenes to render.", minimum=4)
@count_option("--epochs", 12, "Passes over the data (each net).")
@seed_option("Training data and augmentation seed.")
@tiny_option
@click.option(
    "--minutes",
    type=click.FloatRange(min=0.1),
    help="Train until this many minutes have passed (after rendering); --epochs is then ignored.",
)
@click.option(
    "--jitters",
    default=1,
    show_default=True,
    type=click.IntRange(1, 8),
    help="Classifier crops per card and scene (jittered boxes).",
)
@click.option(
    "--cache",
    type=click.Path(file_okay=False),
    help="Folder caching rendered scenes between runs (outside the repository).",
)
@click.option(
    "--input-size",
    callback=lambda ctx, param, value: _parse_size(value),
    metavar="WxH",
    help="Localizer input size, both multiples of 32 (default: 512x288, or the resumed model's).",
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(file_okay=False, exists=True),
    help="Continue training the model in this folder (its checkpoints/) instead of starting "
    "afresh; the classifier also learns from the boxes that model's localizer proposes.",
)
@click.option(
    "--localizer-only",
    is_flag=True,
    help="With --resume: train only the localizer (on both threads) and keep the classifier.",
)
@click.option(
    "--classifier-only",
    is_flag=True,
    help="With --resume: train only the classifier (on both threads) and keep the localizer.",
)
@count_option(
    "--back-scenes",
    0,
    "With --resume: the nets also learn from this many extra scenes rich in face-down cards, "
    "whose centres then weigh more in the localizer's heat loss (training.BACK_HEAT_WEIGHT).",
    minimum=0,
)
@count_option(
    "--lens-scenes",
    0,
    "With --resume: the nets also learn from this many extra scenes, each seen through a "
    "webcam lens of its own (barrel or pincushion, synth.SceneConfig.lens_k_range).",
    minimum=0,
)
@count_option(
    "--restyle-scenes",
    0,
    "With --resume: the nets also learn from this many extra scenes whose faces are printed "
    "in inks of their own (hues turned, saturation and contrast changed), as a deck never "
    "seen may be.",
    minimum=0,
)
@click.option(
    "--lr-scale",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="With --resume: multiply both nets' learning rates (training.RESUME_LR) by this.",
)
@click.option(
    "--localizer-width",
    type=click.FloatRange(min=1.0),
    help="Width of the localizer's low-resolution layers against the standard net (default: "
    "1, or the resumed model's). With --resume a wider net grows from the model's without "
    "changing what it computes, then trains on (training.grown_state).",
)
@click.option(
    "--classifier-width",
    type=click.FloatRange(min=1.0),
    help="The same for the classifier's low-resolution and dense layers.",
)
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="Processes rendering scenes and cutting samples (the data is the same for any number).",
)
@click.option(
    "--device",
    default="auto",
    show_default=True,
    help="Where the nets train: cpu, cuda (a GPU), or auto (the GPU when torch sees one).",
)
@click.option(
    "--export-from",
    "export_from",
    type=click.Path(file_okay=False, exists=True),
    help="Only export this model's checkpoints/ to ONNX and int8 again, in --out, with this "
    "machine's torch and onnxruntime (for nets trained on another machine).",
)
@click.option(
    "--average-with",
    "average_with",
    type=click.Path(file_okay=False, exists=True),
    help="With --export-from: export the average of that model's nets and this model's "
    "(the same shape; usually a stage trained on from it), weight by weight.",
)
@click.option(
    "--average-share",
    default=0.5,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="With --average-with: that model's share of the average.",
)
@click.option(
    "--yardstick",
    is_flag=True,
    help="Only (re)build the YOLO11n-shaped speed yardstick ONNX in --out.",
)
@friendly_errors
def train_command(
    out_dir,
    decks,
    scenes,
    epochs,
    seed,
    tiny,
    minutes,
    jitters,
    cache,
    input_size,
    resume_dir,
    localizer_only,
    classifier_only,
    back_scenes,
    lens_scenes,
    restyle_scenes,
    lr_scale,
    localizer_width,
    classifier_width,
    workers,
    device,
    export_from,
    average_with,
    average_share,
    yardstick,
):
    """Train the recognizer on synthetic scenes and export it to ONNX (needs the 'train' extra)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        fail("Training needs torch: pip install 'hanafuda-companion[train]'.")
    from companion import training

    if yardstick:
        path = training.export_yardstick(out_dir)
        click.echo(f"Wrote {path}.")
        return
    names = _deck_names(decks) or list(training.TRAIN_DECKS)
    deck_dirs = [_resolve_deck(d) for d in names]
    command = "companion " + " ".join(sys.argv[1:])
    if average_with and not export_from:
        fail("--average-with averages two models' nets on export: add --export-from DIR.")
    if export_from:
        training.reexport(
            export_from,
            out_dir,
            deck_dirs,
            command=command,
            average_with=average_with,
            share=average_share,
        )
        click.echo(f"Wrote {out_dir}/recognizer.json.")
        return
    device = training.resolve_device(device)
    extras = localizer_only or classifier_only or back_scenes or lens_scenes or restyle_scenes
    if (extras or lr_scale != 1.0) and not resume_dir:
        fail(
            "--localizer-only, --classifier-only, --back-scenes, --lens-scenes, "
            "--restyle-scenes and --lr-scale continue a model: add --resume DIR."
        )
    if localizer_only and classifier_only:
        fail("--localizer-only and --classifier-only exclude each other: one net or both.")
    widths = {
        net: width
        for net, width in (("localizer", localizer_width), ("classifier", classifier_width))
        if width is not None
    }
    if resume_dir:
        meta = training.resume(
            out_dir,
            resume_dir,
            decks=deck_dirs,
            scenes=scenes,
            seed=seed,
            minutes=minutes or 60,
            input_size=input_size,
            cache=cache,
            jitters=jitters,
            command=command,
            localizer_only=localizer_only,
            classifier_only=classifier_only,
            back_scenes=back_scenes,
            lens_scenes=lens_scenes,
            restyle_scenes=restyle_scenes,
            workers=workers,
            device=device,
            lr_scale=lr_scale,
            deep_widths=widths,
        )
        seconds = meta["training"]["stages"][-1]["seconds"]
    else:
        meta = training.train(
            out_dir,
            decks=deck_dirs,
            scenes=scenes,
            epochs=epochs,
            seed=seed,
            tiny=tiny,
            minutes=minutes,
            jitters=jitters,
            cache=cache,
            command=command,
            input_size=input_size,
            workers=workers,
            device=device,
            deep_widths=widths,
        )
        seconds = meta["training"]["seconds"]
    click.echo(f"Wrote {out_dir}/recognizer.json ({seconds} s).")


@main.command("ablate-augmentation")
@count_option("--epochs", 10, "Passes over the crops (each arm).")
@count_option(
    "--scenes", 800, "Training scenes per arm (the same layouts in every arm).", minimum=4
)
@count_option(
    "--test-scenes", 200, "Scenes of the held-out deck, rendered with and without realism."
)
@seed_option("Training scenes and augmentation seed.")
@tiny_option
@click.option(
    "--reference",
    type=click.Path(file_okay=False, exists=True),
    help="Also score the classifier checkpoint of this model folder (e.g. models).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")
@friendly_errors
def ablate_augmentation_command(epochs, scenes, test_scenes, seed, tiny, reference, as_json):
    """Does the augmentation earn its keep? Train the classifier on clean renders, on realistic
    renders, and on realistic renders with photometric augmentation; score each on a held-out
    deck (needs the 'train' extra)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        fail("The ablation trains nets and needs torch: pip install 'hanafuda-companion[train]'.")
    import contextlib

    from companion import training

    if reference and not (Path(reference) / training.CHECKPOINTS / "classifier.pt").is_file():
        fail(f"{reference} has no {training.CHECKPOINTS}/classifier.pt to score as a reference.")
    # training logs its epochs on stdout; with --json only the JSON document may go there
    with contextlib.redirect_stdout(sys.stderr if as_json else sys.stdout):
        result = training.augmentation_ablation(
            epochs=epochs,
            scenes=scenes,
            test_scenes=test_scenes,
            seed=seed,
            tiny=tiny,
            reference=reference,
            progress=training.log,
        )
    if as_json:
        echo_json(result)
        return
    rows = [(arm, r["test"]) for arm, r in result["arms"].items()]
    if "reference" in result:
        rows.append((f"reference: {result['reference']['model']}", result["reference"]["test"]))
    click.echo(
        f"classifier on {result['test_deck']} crops (held out), {epochs} epochs per arm on "
        f"{scenes} scenes; exact / chaff-equivalent accuracy, 'none' crops rejected"
    )
    click.echo(f"  {'trained on':<28} {'realistic test renders':>28} {'clean test renders':>28}")
    for name, test in rows:
        cells = [
            f"{pct(t['exact_accuracy'])} / {pct(t['chaff_accuracy'])} / {pct(t['none_rejected'])}"
            for t in (test["realistic"], test["clean"])
        ]
        click.echo(f"  {name:<28} {cells[0]:>28} {cells[1]:>28}")


def _parse_size(value):
    """'768x448' -> (768, 448); None stays None."""
    if value is None:
        return None
    try:
        w, h = (int(v) for v in value.lower().split("x"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not WxH, e.g. 768x448.") from None
    if w <= 0 or h <= 0 or w % 32 or h % 32:
        raise click.BadParameter(f"{value!r}: both sides must be positive multiples of 32.")
    return w, h


# ---------------------------------------------------------------------------------------------
# Match store and tablet page: serve, demo, summary, matches, bench-live
# ---------------------------------------------------------------------------------------------

DB_OPTION_HELP = "SQLite database (default: $COMPANION_DB, else the per-user data folder)."


def open_store_for_reading(db):
    """The store at ``db`` (or the default one); a named file that does not exist is an
    error rather than a new empty database."""
    from companion.store import MatchStore, StoreError

    if db is not None and str(db) != ":memory:" and not Path(db).expanduser().exists():
        raise StoreError(f"There is no database at {db}.")
    return MatchStore.open(db)


@main.command("matches")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_OPTION_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
@friendly_errors
def matches_command(db, as_json):
    """List the matches kept in the database, the most recent first."""
    from companion.store import default_db_path

    if db is None and not default_db_path().exists():
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
        click.echo(
            f"{info.id:>4}  {info.label[:32]:<32} {info.rules[:14]:<14} {info.rounds:>6}"
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
    from companion.summary import render, summary_from_store

    with open_store_for_reading(db) as store:
        data = render(summary_from_store(store, match), fmt)
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
@friendly_errors
def demo_command(pace, port, db):
    """Serve the tablet page on a built-in scripted match (no camera, no data needed)."""
    from companion.demo import run_demo

    run_demo(pace=pace, port=port, db=db, echo=lambda line: click.echo(line))


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
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@friendly_errors
def bench_live_command(
    clients, events, interval, notify_only, external_writer, same_process, as_json
):
    """Latency from an append to each of N live-tally followers seeing it (127.0.0.1 only)."""
    from companion.live_bench import run_live_bench

    result = run_live_bench(
        clients,
        events,
        interval=interval,
        fetch_board=not notify_only,
        external_writer=external_writer,
        same_process=same_process,
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
    from companion import web

    lan = not web.is_loopback(host)
    join_code = web.new_join_code() if lan and not read_only else None
    public_url = f"http://{web.url_host(web.lan_address(host))}:{port}" if lan else None
    app = web.create_app(db, join_code=join_code, read_only=read_only, public_url=public_url)

    def on_ready(server):
        shown_host = web.lan_address(host) if lan else host
        url = f"http://{web.url_host(shown_host)}:{server.server_port}/"
        click.echo(f"Hanafuda Companion: open {url}  (Ctrl+C to stop)")
        if join_code:
            join_url = f"{url}join?code={join_code}"
            click.echo(f"Join code: {join_code}  (needed before a tablet can change anything)")
            click.echo(web.qr_text(join_url))
            click.echo(f"Scan to join: {join_url}")
        elif read_only:
            click.echo("Read-only: nobody can change anything on this server.")

    web.serve(app, host, port, ready=on_ready)


# Each area with commands of its own keeps them in a module of this package, registered on
# ``main`` when imported here.
from companion.cli import hanamikoji  # noqa: E402,F401
from companion.cli import live  # noqa: E402,F401
from companion.cli import simulate  # noqa: E402,F401
