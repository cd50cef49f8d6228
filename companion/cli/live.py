"""Live table commands: ``run`` (camera and tablet together), ``replay`` (a recorded table
through the real pipeline, scored against a truth file) and ``bench-pipeline``."""

from __future__ import annotations

from pathlib import Path

import click

from companion import CompanionError
from companion.cli.base import DB_OPTION_HELP, echo_json, fail, friendly_errors, model_option
from companion.cli.decks import decks_dir_option

ZONES_HELP = "Zone layout (TOML, see docs/LIVE.md); default: the two- or three-seat layout."


def live_detector(model_path, deck=None, decks_dir=None):
    """The recognizer on 2 threads, naming the cards of the deck added as ``deck`` (with
    'companion deck add') when one is given; an unknown deck is one sentence."""
    from companion.cli.vision import load_with_deck

    return load_with_deck(model_path, 2, "auto", deck, decks_dir)


deck_option = click.option(
    "--deck", help="Name the cards of a deck you added with 'companion deck add NAME DIR'."
)


def taught_deck_names(detector) -> dict | None:
    """The names of the deck the detector was taught (``--deck``), as a match records them
    (``cards.Deck.names_data``); None without one."""
    namer = getattr(detector, "namer", None)
    return None if namer is None else namer.names.names_data()


def card_words(detector):
    """code -> how the terminal names a card: "its English name (code)" by the deck the
    detector was taught, None (codes alone) without one."""
    namer = getattr(detector, "namer", None)
    if namer is None:
        return None

    def words(code: str) -> str:
        try:
            return f"{namer.names.card(code).name} ({code})"
        except CompanionError:
            return code

    return words


ZONES_FILE_NAME = "zones.toml"


def default_zones_path() -> Path:
    """Where ``run`` keeps the zones calibrated on the tablet when no ``--zones`` is given:
    the user's own data folder (beside the default database), never a fixed name in the
    shared temporary folder, where another user of the machine could plant a layout."""
    from companion.store import data_dir

    return data_dir() / ZONES_FILE_NAME


def _zones(path):
    from companion.live.zones import Zones

    return Zones.load(path) if path else None


def parse_players(text: str | None) -> list[str] | None:
    """``--players NAME,NAME[,NAME]`` as a list of names (None when not given)."""
    if text is None:
        return None
    names = [" ".join(n.split()) for n in str(text).split(",")]
    if not all(names) or len(names) < 2:
        fail("--players takes two or three names separated by commas, such as Aki,Ben.")
    return names


def session_layout(zones_path, seats: int | None):
    """The layout ``run`` watches: the ``--zones`` file; else the one calibrated on the tablet
    last time (kept in the user's data folder: ``default_zones_path``) when it has ``seats``
    seats; else the default layout for that many seats (two when unknown)."""
    from companion.live.zones import Zones, default_zones

    if zones_path:
        return Zones.load(zones_path)
    saved_path = default_zones_path()
    if saved_path.is_file():
        try:
            saved = Zones.load(saved_path)
        except CompanionError:
            saved = None  # a damaged file from an earlier run: start from the default
        if saved is not None and (seats is None or len(saved.players) == seats):
            return saved
    return default_zones(seats or 2)


def new_match_setup(names, rules_name: str, rounds, oya) -> tuple[list, int, str]:
    """``(players, rounds, oya)`` for a new match, each default resolved (the rule set's
    rounds, the first player as Oya) and checked by the engine; CompanionError otherwise."""
    from companion.game import engine

    state = engine.apply(
        None, engine.MatchStarted.new(list(names), rules_name, rounds=rounds, oya=oya)
    )
    return list(state.players), state.rounds_planned, state.next_oya


@click.command("run")
@click.option("--camera", type=int, help="Webcam index (default 0).")
@click.option("--video", type=click.Path(dir_okay=False), help="A video file, at its own pace.")
@click.option("--images", type=click.Path(file_okay=False), help="A folder of images (10 fps).")
@click.option(
    "--url",
    help="A network stream OpenCV opens (rtsp://, http://...): a phone camera app's address "
    "(docs/LIVE.md).",
)
@click.option(
    "--phone", is_flag=True,
    help="A phone's browser is the camera: scan the printed QR code with it, then tap 'Use "
    "this phone as the camera' (serves the LAN in https; --host defaults to 0.0.0.0).",
)  # fmt: skip
@click.option("--zones", "zones_path", type=click.Path(dir_okay=False), help=ZONES_HELP)
@click.option(
    "--rules", "rules_name", default="livret", show_default=True,
    help="Rule set of the match started when the database has none under way.",
)  # fmt: skip
@click.option(
    "--players", "players_text", metavar="NAME,NAME[,NAME]",
    help="The players of a new match, in seat order (A, B, C of the layout); default: the "
    "layout's seat labels. Three names use the three-seat layout when no --zones is given.",
)  # fmt: skip
@click.option(
    "--rounds", type=int, help="Rounds of a new match (default: the rule set's usual length)."
)
@click.option("--oya", help="Who deals first in a new match (default: the first player).")
@click.option("--db", "db", type=click.Path(dir_okay=False), help=DB_OPTION_HELP)
@click.option(
    "--host",
    help="Address to listen on: 127.0.0.1 (this machine only), or 0.0.0.0 with --phone or to let "
    "LAN tablets in (they need the join code).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=5000, show_default=True)
@model_option
@deck_option
@decks_dir_option
@friendly_errors
def run_command(
    camera,
    video,
    images,
    url,
    phone,
    zones_path,
    rules_name,
    players_text,
    rounds,
    oya,
    db,
    host,
    port,
    model_path,
    deck,
    decks_dir,
):
    """The camera pipeline and the tablet page together: the camera keeps the score."""
    from companion.cli.base import page_address, say_lan_https, use_lan_https
    from companion.live.session import LiveSession
    from companion.live.sources import open_source
    from companion.store import MatchStore
    from companion.web import auth, create_app, hosts, serving

    given = [s for s in (camera, video, images, url) if s is not None] + ([phone] if phone else [])
    if len(given) > 1:
        fail("Give one source: --camera, --video, --images, --url or --phone.")
    if host is None:
        host = "0.0.0.0" if phone else "127.0.0.1"
    if phone and hosts.is_loopback(host):
        fail(f"A phone cannot reach {host}: give --host 0.0.0.0 (or this machine's address).")
    names = parse_players(players_text)
    store = MatchStore.open(db)
    under_way = next((m for m in store.matches() if not m.finished), None)
    if under_way is not None:
        seats = len(under_way.players)
    else:
        seats = len(names) if names else None
    zones = session_layout(zones_path, seats)
    if under_way is None:
        if names and len(names) != len(zones.players):
            fail(
                f"The layout {zones.name} has {len(zones.players)} seats "
                f"({', '.join(zones.players)}), not {len(names)}: give {len(zones.players)} "
                f"names to --players, or a zone file with {len(names)} capture areas to --zones."
            )
        # Checked before the slow start: a wrong flag is said at once.
        names, rounds, oya = new_match_setup(
            names or list(zones.players), rules_name, rounds, oya
        )
    detector = live_detector(model_path, deck, decks_dir)  # a bad model or deck: say so first
    if video or images:
        spec = video or images
    elif url:
        spec = url
    else:
        spec = f"camera:{camera or 0}"
    if phone:
        from companion.live.sources import PushedFrameSource

        source = PushedFrameSource()
    elif camera is None and not (video or images or url):
        from companion.live.sources import CameraOrPhone

        # No source named: the webcam, and the camera page offers a phone instead.
        source = CameraOrPhone(open_source(spec))
    else:
        source = open_source(spec)
    taught = taught_deck_names(detector)
    if under_way is None:
        match_id = store.create_match(
            players=names, rules=rules_name, rounds=rounds, oya=oya, deck=taught
        )
        named = f"; cards named by the deck {deck!r}" if taught else ""
        click.echo(
            f"Started match {match_id} ({rules_name}, {rounds} rounds, players "
            f"{', '.join(names)}; {oya} is Oya{named})."
        )
    else:
        click.echo(
            f"Resuming match {under_way.id} ({under_way.label}); --players, --rounds and "
            "--oya apply to a new match."
            if (players_text or rounds or oya)
            else f"Resuming match {under_way.id} ({under_way.label})."
        )
    session = LiveSession(
        source,
        detector,
        store,
        zones=zones,
        zones_path=zones_path or default_zones_path(),
        log=click.echo,
    )
    lan = not hosts.is_loopback(host)
    join_code = auth.new_join_code() if lan else None
    public_url = f"https://{hosts.url_host(hosts.lan_address(host))}:{port}" if lan else None
    app = create_app(store, live=session, join_code=join_code, public_url=public_url)
    app.config["DECKS_DIR"] = decks_dir  # where the tablet's "Teach a deck" page keeps decks
    if lan:
        use_lan_https(app, host)

    def on_ready(server):
        url = page_address(host, server.server_port)
        click.echo(f"Hanafuda Companion: open {url}")
        click.echo(f"Camera: {source.describe()}  (Ctrl+C to stop)")
        if join_code:
            click.echo(f"Join code: {join_code}")
            # The phone that films goes straight to its camera page once joined.
            join_url = f"{url}join?code={join_code}" + ("&next=/phone" if phone else "")
            click.echo(auth.qr_text(join_url))
            if phone:
                click.echo(
                    f"Scan with the phone that films the table: {join_url} ; join, then tap "
                    "'Use this phone as the camera'. Prop it above the table, held sideways."
                )
            else:
                click.echo(f"Scan to join: {join_url}")
        if lan:
            say_lan_https(app, host, server.server_port)

    session.start()
    try:
        serving.serve(app, host, port, ready=on_ready)
    finally:
        session.stop()


def parse_drop(text: str) -> tuple[int, float]:
    """``--drop-at FRAME:SECONDS`` as (frame, seconds); one sentence when it is not that."""
    import math

    frame, colon, seconds = str(text).partition(":")
    try:
        first, length = int(frame), float(seconds)
    except ValueError:
        first, length = -1, math.nan
    if not colon or first < 0 or not math.isfinite(length) or not 0 < length <= 3600:
        fail(
            f"--drop-at takes FRAME:SECONDS (a frame number and 0 to 3600 seconds, such as "
            f"200:19), not {text!r}."
        )
    return first, length


@click.command("replay")
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
@click.option(
    "--restart-at", "restart_at", type=click.IntRange(1), multiple=True, metavar="FRAME",
    help="Throw the pipeline away before this frame and start a new one on the same match, "
    "as a killed 'companion run' started again (repeatable).",
)  # fmt: skip
@click.option(
    "--restart-from", "restart_from", type=click.Choice(["here", "start"]), default="here",
    show_default=True,
    help="After a restart, go on from that frame (the cards lying as they were) or play the "
    "video again from its start.",
)  # fmt: skip
@click.option(
    "--drop-at", "drop_at", multiple=True, metavar="FRAME:SECONDS",
    help="The camera shows nothing from this frame for this many seconds, as a stream that "
    "drops out (repeatable).",
)  # fmt: skip
@model_option
@deck_option
@decks_dir_option
@friendly_errors
def replay_command(
    video,
    zones_path,
    truth_path,
    taps,
    as_json,
    restart_at,
    restart_from,
    drop_at,
    model_path,
    deck,
    decks_dir,
):
    """Run the real pipeline on a video: per round, the captured cards and the points."""
    from companion.bench.replay import load_truth, replay_video

    drops = [parse_drop(text) for text in drop_at]
    if drops and restart_at:
        fail("Give --drop-at or --restart-at, not both.")
    truth = load_truth(truth_path) if truth_path else None
    detector = live_detector(model_path, deck, decks_dir)
    if restart_at:
        from companion.bench.restart import replay_with_restarts

        report = replay_with_restarts(
            video,
            detector,
            truth=truth,
            restarts=restart_at,
            from_start=restart_from == "start",
            zones=_zones(zones_path),
            taps=taps,
        )
    else:
        report = replay_video(
            video, detector, zones=_zones(zones_path), truth=truth, taps=taps, drops=drops
        )
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(report.text(card_words(detector)))


@click.command("bench-pipeline")
@click.option(
    "--video", type=click.Path(dir_okay=False),
    help="A 1280x720 simulated table.mp4 (its truth.json beside it); default: one rendered now.",
)  # fmt: skip
@click.option("--frames", type=click.IntRange(10), default=600, show_default=True)
@click.option(
    "--fps", "video_fps", type=click.IntRange(1, 60), default=10, show_default=True,
    help="Frame rate of the video rendered when --video is not given.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print fps, ms_per_frame_median, ...")
@model_option
@friendly_errors
def bench_pipeline_command(video, frames, video_fps, as_json, model_path):
    """Frames per second of the whole pipeline (2 threads), steady-to-event latency, and how
    far it falls behind a camera at the video's frame rate."""
    from companion.bench.replay import bench_pipeline

    result = bench_pipeline(live_detector(model_path), video=video, frames=frames, fps=video_fps)
    if as_json:
        echo_json(result)
    else:
        click.echo(
            f"{result['fps']:.1f} frames/s over {result['frames']} frames of {result['video']} "
            f"({result['detected_frames']} detected); median {result['ms_per_frame_median']:.1f} "
            f"ms/frame; steady to event p95 {result['steady_to_event_ms_p95']} ms; at most "
            f"{result['behind_s_max']:.2f} s behind a {result['video_fps']:g} fps camera"
        )


COMMANDS = (run_command, replay_command, bench_pipeline_command)
