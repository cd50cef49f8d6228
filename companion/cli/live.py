"""Live table commands: ``run`` (camera and tablet together), ``replay`` (a recorded table
through the real pipeline, scored against a truth file) and ``bench-pipeline``."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from companion.cli import DB_OPTION_HELP, echo_json, fail, friendly_errors, main, model_option
from companion.cli.decks import decks_dir_option

ZONES_HELP = "Zone layout (TOML, see docs/LIVE.md); default: the two-player layout."


def live_detector(model_path, deck=None, decks_dir=None):
    """The recognizer on 2 threads, naming the cards of the deck added as ``deck`` (with
    'companion deck add') when one is given; an unknown deck is one sentence."""
    from companion.cli.vision import load_with_deck

    return load_with_deck(model_path, 2, "auto", deck, decks_dir)


deck_option = click.option(
    "--deck", help="Name the cards of a deck you added with 'companion deck add NAME DIR'."
)


def _zones(path):
    from companion.live.zones import Zones

    return Zones.load(path) if path else None


@main.command("run")
@click.option("--camera", type=int, help="Webcam index (default 0).")
@click.option("--video", type=click.Path(dir_okay=False), help="A video file, at its own pace.")
@click.option("--images", type=click.Path(file_okay=False), help="A folder of images (10 fps).")
@click.option("--url", help="A network stream OpenCV opens (rtsp://, http://...).")
@click.option("--zones", "zones_path", type=click.Path(dir_okay=False), help=ZONES_HELP)
@click.option(
    "--rules", "rules_name", default="livret", show_default=True,
    help="Rule set of the match started when the database has none under way.",
)  # fmt: skip
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_OPTION_HELP)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=5000, show_default=True)
@model_option
@deck_option
@decks_dir_option
@friendly_errors
def run_command(
    camera, video, images, url, zones_path, rules_name, db, host, port, model_path, deck, decks_dir
):
    """The camera pipeline and the tablet page together: the camera keeps the score."""
    from companion import web
    from companion.live.session import LiveSession
    from companion.live.sources import open_source
    from companion.store import MatchStore

    given = [s for s in (camera, video, images, url) if s is not None]
    if len(given) > 1:
        fail("Give one source: --camera, --video, --images or --url.")
    detector = live_detector(model_path, deck, decks_dir)  # a bad model or deck: say so first
    if video or images:
        spec = video or images
    elif url:
        spec = url
    else:
        spec = f"camera:{camera or 0}"
    source = open_source(spec)
    store = MatchStore.open(db)
    zones = _zones(zones_path)
    if not any(not m.finished for m in store.matches()):
        seats = list(zones.players) if zones else ["A", "B"]
        match_id = store.create_match(players=seats, rules=rules_name)
        click.echo(f"Started match {match_id} ({rules_name}, players {', '.join(seats)}).")
    session = LiveSession(
        source,
        detector,
        store,
        zones=zones,
        zones_path=zones_path or Path(tempfile.gettempdir()) / "companion-zones.toml",
    )
    lan = not web.is_loopback(host)
    join_code = web.new_join_code() if lan else None
    public_url = f"http://{web.url_host(web.lan_address(host))}:{port}" if lan else None
    app = web.create_app(store, live=session, join_code=join_code, public_url=public_url)

    def on_ready(server):
        shown_host = web.lan_address(host) if lan else host
        click.echo(
            f"Hanafuda Companion: open http://{web.url_host(shown_host)}:{server.server_port}/"
        )
        click.echo(f"Camera: {source.describe()}  (Ctrl+C to stop)")
        if join_code:
            click.echo(f"Join code: {join_code}")

    session.start()
    try:
        web.serve(app, host, port, ready=on_ready)
    finally:
        session.stop()


@main.command("replay")
@click.argument("video", type=click.Path(dir_okay=False))
@click.option("--zones", "zones_path", type=click.Path(dir_okay=False), help=ZONES_HELP)
@click.option(
    "--truth", "truth_path", type=click.Path(dir_okay=False),
    help="The simulation's truth.json: Koi/Stop answers, and figures against it.",
)  # fmt: skip
@click.option(
    "--taps", type=click.Choice(["truth", "none"]), default="truth", show_default=True,
    help="truth: Koi/Stop (and what the camera cannot see) tapped from the truth file; "
    "none: no tap, the table alone (the truth only scores).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@model_option
@deck_option
@decks_dir_option
@friendly_errors
def replay_command(video, zones_path, truth_path, taps, as_json, model_path, deck, decks_dir):
    """Run the real pipeline on a video: per round, the captured cards and the points."""
    from companion.live.replay import load_truth, replay_video

    truth = load_truth(truth_path) if truth_path else None
    detector = live_detector(model_path, deck, decks_dir)
    report = replay_video(video, detector, zones=_zones(zones_path), truth=truth, taps=taps)
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(report.text())


@main.command("bench-pipeline")
@click.option(
    "--video", type=click.Path(dir_okay=False),
    help="A 1280x720 simulated table.mp4 (its truth.json beside it); default: one rendered now.",
)  # fmt: skip
@click.option("--frames", type=click.IntRange(10), default=600, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print fps, ms_per_frame_median, ...")
@model_option
@friendly_errors
def bench_pipeline_command(video, frames, as_json, model_path):
    """Frames per second of the whole pipeline (2 threads) and steady-to-event latency."""
    from companion.live.replay import bench_pipeline

    result = bench_pipeline(live_detector(model_path), video=video, frames=frames)
    if as_json:
        echo_json(result)
    else:
        click.echo(
            f"{result['fps']:.1f} frames/s over {result['frames']} frames of {result['video']} "
            f"({result['detected_frames']} detected); median {result['ms_per_frame_median']:.1f} "
            f"ms/frame; steady to event p95 {result['steady_to_event_ms_p95']} ms"
        )
