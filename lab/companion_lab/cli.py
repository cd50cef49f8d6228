"""The lab's commands: train the recognizer, fit its acceptance rule, measure what the
augmentation is worth. ``companion-lab COMMAND`` runs them, and so does ``companion COMMAND``
once the lab is installed (registered as entry points of the group ``companion.commands``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import click

from companion import __version__
from companion.cli.base import FiniteFloatRange, echo_json, fail, friendly_errors, pct
from companion.cli.vision import (
    count_option,
    deck_names,
    model_option,
    nets_option,
    resolve_deck,
    seed_option,
    tiny_option,
)

NEEDS_TORCH = "This command trains nets and needs torch: pip install -e lab."


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="companion-lab")
def main():
    """Hanafuda Companion's lab: training and fitting the card recognizer."""


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
    "crops need it (Settings.acceptance.accept_trees); 0: the weights alone.",
)
@click.option(
    "--above",
    default=None,
    type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
    help="How likely a crop must be a card to count as one (Settings.acceptance.accept_above). "
    "Default: 0.7 with trees, 0.75 without (chosen on validation scenes).",
)
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(1, 16),
    help="Processes rendering scenes.",
)
@nets_option
@friendly_errors
def fit_acceptance_command(model_path, decks, seed, n, trees, above, workers, nets):
    """Fit the learned acceptance rule to this model's nets on rendered scenes and write it
    into the model's metadata (settings.accept_weights, accept_trees, accept_above)."""
    from companion.recognizer import ACCEPT_FEATURES, Recognizer, metadata_path
    from companion_lab.acceptance import fit_acceptance

    meta_path = metadata_path(model_path)
    recognizer = Recognizer.load(model_path, nets=nets)
    meta = recognizer.metadata
    names = deck_names(decks) or list(meta.get("training", {}).get("decks", []))
    if not names:
        fail("This model's metadata names no training decks: say which with --decks.")
    deck_dirs = [resolve_deck(d) for d in names]
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
    if nets != "auto":
        command += f" --nets {nets}"
    meta = json.loads(meta_path.read_text())  # as on disk: nothing the recognizer filled in
    meta["settings"]["accept_weights"] = [round(w, 4) for w in fit.weights]
    meta["settings"]["accept_trees"] = fit.trees.to_dict() if fit.trees else None
    meta["settings"]["accept_above"] = above
    meta.setdefault("training", {})["acceptance"] = {
        "command": command,
        "decks": names,
        "seed": seed,
        "scenes_per_deck": n,
        "nets": recognizer.nets,
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
    type=FiniteFloatRange(min=0.1),
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
    type=FiniteFloatRange(min=0, min_open=True),
    help="With --resume: multiply both nets' learning rates (training.RESUME_LR) by this.",
)
@click.option(
    "--localizer-width",
    type=FiniteFloatRange(min=1.0),
    help="Width of the localizer's low-resolution layers against the standard net (default: "
    "1, or the resumed model's). With --resume a wider net grows from the model's without "
    "changing what it computes, then trains on (training.grown_state).",
)
@click.option(
    "--classifier-width",
    type=FiniteFloatRange(min=1.0),
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
    type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
    help="With --average-with: that model's share of the average.",
)
@click.option(
    "--yardstick",
    is_flag=True,
    help="Only (re)build the YOLO11n-shaped speed yardstick ONNX in --out.",
)
@friendly_errors
def train_command(**options):
    """Train the recognizer on synthetic scenes and export it to ONNX."""
    try:
        import torch  # noqa: F401
    except ImportError:
        fail(NEEDS_TORCH)
    from companion_lab import training

    o = SimpleNamespace(**options)
    if o.yardstick:
        path = training.export_yardstick(o.out_dir)
        click.echo(f"Wrote {path}.")
        return
    names = deck_names(o.decks) or list(training.TRAIN_DECKS)
    deck_dirs = [resolve_deck(d) for d in names]
    command = "companion " + " ".join(sys.argv[1:])
    if o.average_with and not o.export_from:
        fail("--average-with averages two models' nets on export: add --export-from DIR.")
    if o.export_from:
        training.reexport(
            o.export_from,
            o.out_dir,
            deck_dirs,
            command=command,
            average_with=o.average_with,
            share=o.average_share,
        )
        click.echo(f"Wrote {o.out_dir}/recognizer.json.")
        return
    device = training.resolve_device(o.device)
    extras = o.localizer_only or o.classifier_only or o.back_scenes or o.lens_scenes
    if (extras or o.restyle_scenes or o.lr_scale != 1.0) and not o.resume_dir:
        fail(
            "--localizer-only, --classifier-only, --back-scenes, --lens-scenes, "
            "--restyle-scenes and --lr-scale continue a model: add --resume DIR."
        )
    if o.localizer_only and o.classifier_only:
        fail("--localizer-only and --classifier-only exclude each other: one net or both.")
    widths = {
        net: width
        for net, width in (("localizer", o.localizer_width), ("classifier", o.classifier_width))
        if width is not None
    }
    config = training.TrainConfig(
        decks=tuple(deck_dirs),
        scenes=o.scenes,
        seed=o.seed,
        epochs=o.epochs,
        minutes=o.minutes,
        input_size=o.input_size,
        cache=o.cache,
        jitters=o.jitters,
        back_scenes=o.back_scenes,
        lens_scenes=o.lens_scenes,
        restyle_scenes=o.restyle_scenes,
        workers=o.workers,
        device=device,
        deep_widths=widths,
        tiny=o.tiny,
        command=command,
    )
    if o.resume_dir:
        meta = training.resume(
            o.out_dir,
            o.resume_dir,
            config,
            localizer_only=o.localizer_only,
            classifier_only=o.classifier_only,
            lr_scale=o.lr_scale,
        )
        seconds = meta["training"]["stages"][-1]["seconds"]
    else:
        meta = training.train(o.out_dir, config)
        seconds = meta["training"]["seconds"]
    click.echo(f"Wrote {o.out_dir}/recognizer.json ({seconds} s).")


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
    deck."""
    try:
        import torch  # noqa: F401
    except ImportError:
        fail(NEEDS_TORCH)
    import contextlib

    from companion_lab import training

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


# seeds the kitchen photos were tuned on; the reported share is measured on others (900...)
KITCHEN_TUNING_SEEDS = (1, 2)


@main.command("kitchen-photos")
@click.option(
    "--seeds",
    default="901,902",
    show_default=True,
    help="Comma-separated seeds: each photographs every deck's twelve months once. Seeds 1 and 2 "
    "were tuned on; the figure is measured on others.",
)
@click.option(
    "--decks",
    default=None,
    help="Comma-separated decks (../shared/decks names or folders; procedural, recoloured, pale: "
    "made up at run time). Default: the four shared decks and the three made-up designs.",
)
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 16))
@click.option(
    "--write", "write_dir", type=click.Path(file_okay=False),
    help="Write the photos (deck/seed/MM.jpg and what each shows, info.json) instead of "
    "measuring; never commit them.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print every photo's row as JSON.")
@friendly_errors
def kitchen_photos_command(seeds, decks, workers, write_dir, as_json):
    """How often teaching accepts a month's photo at the first try, on photos drawn by a
    renderer of their own (other tables, lights, gaps, glare, shadows, tilts, 8-16 MP): the
    share accepted with the cards where they lie, per deck, table and trouble."""
    from companion.bench import kitchen_photos as kitchen

    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError:
        fail("--seeds is a comma-separated list of whole numbers, e.g. 901,902.")
    deck_list = [d for d in decks.split(",") if d] if decks else list(
        kitchen.SHARED_DECKS + kitchen.MADE_UP
    )
    if write_dir:
        out = Path(write_dir)
        for seed in seed_list:
            for deck in deck_list:
                folder = out / Path(deck).name / str(seed)
                folder.mkdir(parents=True, exist_ok=True)
                infos = {}
                for month in range(1, 13):
                    photo = kitchen.render_kitchen_photo(seed, deck, month)
                    (folder / f"{month:02d}.jpg").write_bytes(photo.jpeg)
                    infos[f"{month:02d}"] = {**photo.info, "quads": photo.quads.round(1).tolist()}
                (folder / "info.json").write_text(json.dumps(infos, indent=1))
        click.echo(f"Wrote {len(seed_list) * len(deck_list) * 12} photos in {out}.")
        return
    rows = kitchen.first_try(seed_list, deck_list, workers)
    if as_json:
        echo_json(rows)
        return
    right = sum(r["right"] for r in rows)
    wrong = sum(r["accepted"] and not r["right"] for r in rows)
    click.echo(
        f"{right}/{len(rows)} photos accepted at the first try with their cards right "
        f"({pct(right / len(rows))}); {wrong} accepted with a card off; seeds {seeds}"
    )
    for key in ("deck", "table_kind", "trouble", "layout"):
        cells = [
            f"{name} {v['right']}/{v['photos']}" + (f" (+{v['wrong']} off)" if v["wrong"] else "")
            for name, v in kitchen.shares(rows, key).items()
        ]
        click.echo(f"  {key}: " + ", ".join(cells))
    refused: dict = {}
    for r in rows:
        if r["problem"]:
            refused[r["problem"]] = refused.get(r["problem"], 0) + 1
    click.echo("  refused: " + (", ".join(f"{k} {v}" for k, v in sorted(refused.items())) or "none"))


@main.command("train-design-embedder")
@click.option("--out", "out_dir", default="companion/models", show_default=True,
              type=click.Path(file_okay=False),
              help="Where design_embedder.onnx, its weights and its record are written.")
@click.option("--minutes", default=60.0, show_default=True, type=click.FloatRange(0.1, 10000),
              help="How long to train (the nets are written every five minutes too).")
@seed_option("Made-up decks and augmentation seed.")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(1, 64))
@click.option("--resume", "resume_from", type=click.Path(dir_okay=False),
              help="Start from these weights (design_embedder.pt) instead of the classifier's.")
@click.option("--negatives-share", default=0.0, show_default=True, type=click.FloatRange(0, 4),
              help="Crops of no single card (bare table, two cards, half off, loose) an episode, "
              "as a share of its card crops; 0 learns no \"no card\" class.")
@friendly_errors
def train_design_embedder_command(out_dir, minutes, seed, threads, resume_from, negatives_share):
    """Train the embedding that names the cards of a taught deck of any design, by metric
    learning on many made-up decks (each episode: one deck's 48 cards, its reference crops
    and crops of its cards on a table), starting from the classifier's weights."""
    try:
        from companion_lab.design_embedder import EmbedderConfig, train_design_embedder
    except ImportError:
        fail(NEEDS_TORCH)
    config = EmbedderConfig(minutes=minutes, seed=seed, threads=threads,
                            negatives_share=negatives_share)  # fmt: skip
    record = train_design_embedder(out_dir, config, checkpoint=resume_from)
    click.echo(json.dumps(record, indent=2))


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
