"""companion simulate: scripted Koi-Koi rounds on video, with a truth the engine agrees with."""

import hashlib
import json
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from companion.cli import main
from companion.game.cards import ALL_CODES
from companion.game.engine import replay
from companion.live.zones import default_zones
from companion.simulator import rounds as simulate
from companion.simulator import synth

DECK = "traditional-scan"
SMALL = simulate.SimConfig(width=320, height=180, max_turns=3)


def _deck_dir():
    try:
        return synth.resolve_deck_dir(DECK)
    except synth.SynthError:
        pytest.skip("../shared/decks is not here")


def _frame_hashes(plan, deck_dir):
    return [hashlib.sha256(f.tobytes()).hexdigest() for f in simulate.render_frames(plan, deck_dir)]


def test_same_seed_same_truth_and_frames():
    deck_dir = _deck_dir()
    first = simulate.plan_match(5, SMALL)
    second = simulate.plan_match(5, SMALL)
    assert simulate.truth_of(first, DECK) == simulate.truth_of(second, DECK)
    hashes = _frame_hashes(first, deck_dir)
    assert hashes == _frame_hashes(second, deck_dir)
    assert len(hashes) == first.frames
    assert len(set(hashes)) > first.frames // 3  # things move: frames differ
    other = simulate.plan_match(6, SMALL)
    assert simulate.truth_of(other, DECK)["events"] != simulate.truth_of(first, DECK)["events"]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_events_replay_to_the_points_and_every_card_once(seed):
    plan = simulate.plan_match(seed, simulate.SimConfig(rounds=2))
    truth = simulate.truth_of(plan, DECK)
    state = replay([e["event"] for e in truth["events"]])
    assert [r["points"] for r in truth["rounds"]] == [r.points for r in state.rounds]
    assert len(truth["rounds"]) == 2
    frames = [e["frame"] for e in truth["events"]]
    assert frames == sorted(frames) and frames[-1] < truth["frames"]
    for r in truth["rounds"]:
        taken = r["captures"]["A"] + r["captures"]["B"]
        assert len(taken) == len(set(taken))
        assert set(taken) <= set(ALL_CODES)
        assert len(r["field"]) == 8 and len(set(r["field"])) == 8
        # Captures come two (or four) of a month.
        for player in ("A", "B"):
            months = Counter(c[:2] for c in r["captures"][player])
            assert all(n % 2 == 0 for n in months.values())
    for e in truth["events"]:
        if e["event"]["type"] == "card_captured":
            assert e["steady_frame"] <= e["frame"]
    answers = [
        e["event"]["type"]
        for e in truth["events"]
        if e["event"]["type"] in ("koi_called", "stop_called")
    ]
    assert answers == [
        "koi_called" if d["answer"] == "koi" else "stop_called" for d in truth["decisions"]
    ]


@pytest.mark.parametrize("seed,rows", [(3, "overlap"), (8, "overlap"), (13, "apart")])
def test_captures_lie_in_rows_in_their_capture_area(seed, rows):
    plan = simulate.plan_match(seed, simulate.SimConfig(rows=rows))
    zones = default_zones(2)
    view = plan.view
    for rnd in plan.rounds:
        assert sum(len(c) for c in rnd.captures.values()) > 0
        for player, cards in rnd.captures.items():
            for code in cards:
                quad = view.to_frame(view.quad(rnd.resting[code]))
                centre = quad.mean(axis=0)
                assert zones.zones_of(centre[None], view.w, view.h) == [f"captures_{player}"]
                assert quad[:, 0].min() >= 0 and quad[:, 0].max() <= view.w
                assert quad[:, 1].min() >= 0 and quad[:, 1].max() <= view.h
                height = synth._card_height(quad)
                assert 70 <= height <= 115  # about 90 px at 720 rows
    # Each capture event comes once its card lies still in its row, where it stays.
    captured = [e for e in plan.events if e["event"]["type"] == "card_captured"]
    assert captured
    for e in captured:
        card, player = e["event"]["card"], e["event"]["player"]
        at_rest = plan.resting_pose(card, e["steady_frame"])
        assert at_rest is not None and plan.resting_pose(card, e["steady_frame"] - 1) is None
        assert plan.resting_pose(card, e["frame"]) == at_rest
        centre = view.to_frame(view.quad(at_rest)).mean(axis=0)
        assert zones.zones_of(centre[None], view.w, view.h) == [f"captures_{player}"]


def _green_pixels(frame: np.ndarray) -> int:
    hsv = cv2.cvtColor(frame, cv2.COLOR_BGR2HSV)
    return int(((np.abs(hsv[..., 0].astype(int) - 60) < 12) & (hsv[..., 1] > 120)).sum())


def test_a_deck_with_a_back_of_its_own_shows_it_face_down(tmp_path):
    deck_dir = Path(_deck_dir())
    for path in deck_dir.iterdir():  # the faces as they are, and a green back of its own
        if path.stem.lower() != "back":
            (tmp_path / path.name).symlink_to(path)
    back = np.zeros((300, 190, 3), np.uint8)
    back[:] = (40, 200, 40)
    cv2.imwrite(str(tmp_path / "back.png"), back)
    plan = simulate.plan_match(5, SMALL)
    own, plain = [], []
    for f, (with_back, without) in enumerate(
        zip(
            simulate.render_frames(plan, str(tmp_path)),
            simulate.render_frames(plan, deck_dir),
            strict=True,
        )
    ):
        if f % 40 == 0:
            own.append(_green_pixels(with_back))
            plain.append(_green_pixels(without))
        if f >= 120:
            break
    # the draw pile lies face down from the deal on: green with the deck's back, not without
    assert min(own[1:]) > 100
    assert max(plain) < 50


def test_cli_writes_video_and_truth(tmp_path):
    _deck_dir()
    out = tmp_path / "sim"
    result = CliRunner().invoke(
        main,
        [
            "simulate",
            "--deck",
            DECK,
            "--seed",
            "2",
            "--out",
            str(out),
            "--width",
            "320",
            "--height",
            "180",
            "--max-turns",
            "2",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    truth = json.loads((out / "truth.json").read_text())
    assert list(truth) == [
        "format",
        "seed",
        "deck",
        "rules",
        "video",
        "fps",
        "width",
        "height",
        "frames",
        "players",
        "zones",
        "events",
        "decisions",
        "rounds",
    ]
    assert truth["zones"] == default_zones(2).to_dict()
    video = cv2.VideoCapture(str(out / truth["video"]))
    assert int(video.get(cv2.CAP_PROP_FRAME_COUNT)) == truth["frames"]
    ok, frame = video.read()
    assert ok and frame.shape == (180, 320, 3) and np.std(frame) > 5
    assert not list(out.glob("*partial*"))


def test_cli_bad_input_exits_2_with_one_sentence(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(
        main,
        ["simulate", "--deck", str(tmp_path / "nope"), "--seed", "1", "--out", str(tmp_path / "o")],
    )
    assert missing.exit_code == 2
    assert missing.output.count("\n") == 1 and "nope" in missing.output
    _deck_dir()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    unwritable = runner.invoke(
        main, ["simulate", "--deck", DECK, "--seed", "1", "--out", str(blocker / "sub")]
    )
    assert unwritable.exit_code == 2
    assert unwritable.output.count("\n") == 1 and "Cannot write" in unwritable.output
