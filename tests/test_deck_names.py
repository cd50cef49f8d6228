"""A taught deck's names everywhere a card is shown (issue 77): a match records the names of
the deck the camera was taught (``run --deck``, or the tablet's new match while it is), and its
summary, its board, the picker and the live view name the cards so, in the page's language,
later too; the engine keeps the ``MM-K`` codes."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from companion import CompanionError
from companion.bench.replay import ReplayReport, RoundReport
from companion.game.cards import Deck
from companion.summaries import summary_from_store
from companion.summaries.koikoi import render_html, render_text

FERME = Path(__file__).parents[1] / "companion" / "game" / "decks" / "ferme-florale.toml"


@pytest.fixture
def ferme() -> Deck:
    return Deck.load(FERME)


def _teshi_match(store, deck) -> int:
    """A match whose first round ends on a declared teshi of January's four cards."""
    match_id = store.create_match(["Aki", "Ben"], "livret", deck=deck)
    store.append(match_id, {"type": "round_started"})
    store.append(
        match_id,
        {"type": "hand_declared", "player": "Aki", "kind": "teshi",
         "cards": ["01-1", "01-2", "01-3", "01-4"]},
    )  # fmt: skip
    return match_id


def test_the_summary_names_the_cards_after_the_deck_the_match_recorded(store, ferme):
    match_id = _teshi_match(store, ferme.names_data())
    summary = summary_from_store(store, match_id)
    french = render_html(summary, lang="fr")
    assert "Grelinette (01-1) Lierre lanterne orange (01-2)" in french
    english = render_html(summary, lang="en")
    assert "Broadfork (01-1) Ivy Orange Lantern (01-2)" in english
    assert "Broadfork (01-1)" in summary.said(summary.rounds[0].reason)
    assert summary.to_dict()["deck"] == {"name": "ferme-florale", "title": ferme.title}
    # the engine scored the same slots, and a match with no taught deck keeps the codes
    assert store.state(match_id).rounds[0].winner == "Aki"
    plain = summary_from_store(store, _teshi_match(store, None))
    assert "Broadfork" not in render_html(plain) and "Broadfork" not in render_text(plain)
    assert "deck" not in plain.to_dict()


def test_the_recorded_names_outlive_the_camera_and_travel_with_an_export(store, ferme, client):
    match_id = _teshi_match(store, ferme.names_data())
    between = client.get(f"/matches/{match_id}?lang=fr").get_data(as_text=True)
    assert "Lierre lanterne orange (01-2)" in between  # the declared hand that ended round 1
    store.append(match_id, {"type": "round_started"})
    store.append(match_id, {"type": "card_captured", "player": "Aki", "card": "01-1"})
    store.append(match_id, {"type": "card_captured", "player": "Ben", "card": "02-1"})
    copy = store.import_match(store.export_match(match_id))
    for shown in (match_id, copy):  # no camera here: the match's own record names the cards
        page = client.get(f"/matches/{shown}/summary?lang=fr").get_data(as_text=True)
        assert "Grelinette (01-1)" in page
        board = client.get(f"/matches/{shown}?lang=fr").get_data(as_text=True)
        assert "Grelinette" in board
        assert "du mois 01 (Grelinette (01-1))" in board  # a lone card of its month
    picker = client.get(f"/matches/{match_id}/picker?player=Aki&lang=fr").get_data(as_text=True)
    assert "Grelinette" in picker and "Lierre lanterne orange" in picker


def test_a_recorded_deck_keeps_names_only(store, ferme):
    data = ferme.names_data()
    for bad, words in (
        ({**data, "base": "/etc/hosts"}, "unknown key 'base'"),
        ({**data, "cards": {"01-1": {"names": {"en": "x"}, "roles": ["bright"]}}}, "more than"),
        ({**data, "cards": {"13-1": {"names": {"en": "x"}}}}, "'13-1' is not a card"),
        ("ferme-florale", "must be a deck file's names"),
    ):
        with pytest.raises(CompanionError, match=words):
            store.create_match(["Aki", "Ben"], "livret", deck=bad)
    assert store.matches() == []


def test_a_new_match_on_the_tablet_records_the_deck_the_camera_was_taught(store, ferme):
    from companion.web import create_app

    camera = SimpleNamespace(detector=SimpleNamespace(namer=SimpleNamespace(names=ferme)))
    client = create_app(store, testing=True, live=camera).test_client()
    page = client.get("/").get_data(as_text=True)
    token = re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)
    response = client.post(
        "/matches",
        data={"csrf_token": token, "rules": "livret", "player_1": "Aki", "player_2": "Ben",
              "rounds": "6", "oya": "1"},
    )  # fmt: skip
    assert response.status_code == 303, response.get_data(as_text=True)
    state = store.state(store.matches()[0].id)
    assert state.deck_names is not None and state.deck_names.card("01-1").name == "Broadfork"


class TaughtFieldDetector:
    """A camera taught the Ferme Florale deck that sees January's four cards in every frame."""

    def __init__(self, width, height, names):
        from companion.detections import Detections, class_id

        codes = ["01-1", "01-2", "01-3", "01-4"]
        quads = []
        for i in range(len(codes)):
            cx, cy, w, h = width * (0.2 + 0.2 * i), height * 0.5, width * 0.05, height * 0.12
            quads.append([[cx - w, cy - h], [cx + w, cy - h], [cx + w, cy + h], [cx - w, cy + h]])
        self.detections = Detections(
            quads=np.array(quads, np.float32),
            class_ids=np.array([class_id(c) for c in codes], np.int64),
            confidence=np.full(len(codes), 0.95, np.float32),
            alt_ids=np.zeros((len(codes), 0), np.int64),
            alt_scores=np.zeros((len(codes), 0), np.float32),
        )
        self.namer = SimpleNamespace(names=names)

    def detect(self, bgr):
        return self.detections


def test_the_live_view_labels_the_cards_by_the_taught_deck(store, ferme, tmp_path):
    from companion.live.session import LiveSession
    from companion.live.sources import open_source
    from companion.web import create_app

    width, height = 320, 180
    folder = tmp_path / "frames"
    folder.mkdir()
    # a cloth with a weave: an even picture is a covered lens, which the pipeline does not read
    weave = np.random.default_rng(0).integers(70, 110, (height // 4, width // 4), np.uint8)
    cloth = np.repeat(np.kron(weave, np.ones((4, 4), np.uint8))[..., None], 3, axis=2)
    for i in range(2):
        cv2.imwrite(str(folder / f"{i:03d}.png"), cloth)
    session = LiveSession(
        open_source(str(folder)),
        TaughtFieldDetector(width, height, ferme),
        store,
        zones_path=tmp_path / "zones.toml",
        realtime=False,
    )
    client = create_app(store, testing=True, live=session).test_client()
    while session.step():
        pass
    french = {c["name"] for c in client.get("/live/cards?lang=fr").get_json()["cards"]}
    assert french == {"Grelinette", "Lierre lanterne orange", "Lierre simple 1", "Lierre simple 2"}
    english = {c["name"] for c in client.get("/live/cards?lang=en").get_json()["cards"]}
    assert "Broadfork" in english and "Pine" not in " ".join(english)


def test_replay_text_names_the_captures_by_the_taught_deck(ferme):
    from companion.cli.live import card_words

    report = ReplayReport(
        rounds=[RoundReport(1, {"A": ["01-1", "01-2"], "B": []}, {"A": 0, "B": 0}, ["01-2"])]
    )
    assert "A: 01-1 01-2" in report.text()
    taught = SimpleNamespace(namer=SimpleNamespace(names=ferme))
    text = report.text(card_words(taught))
    assert "A: Broadfork (01-1), Ivy Orange Lantern (01-2); B: -" in text
    assert "check: Ivy Orange Lantern (01-2)" in text


def test_run_records_the_names_of_the_deck_it_was_taught(store, tmp_path):
    """What ``run --deck NAME`` writes into the match it starts: a deck added with its own
    names file (four scans: a partial deck, quick to add)."""
    import shutil

    from companion.cli.live import card_words, live_detector, taught_deck_names
    from companion.recognizer import DEFAULT_MODEL
    from companion.recognizer.decks import add_deck
    from companion.simulator import synth

    if not DEFAULT_MODEL.is_file():
        pytest.skip("no committed model")
    try:
        source = Path(synth.resolve_deck_dir("traditional-ngs"))
    except synth.SynthError:
        pytest.skip("no ../shared/decks")
    scans = tmp_path / "scans"
    scans.mkdir()
    for code in ("01-1", "01-2", "03-1", "08-1"):
        shutil.copy(source / f"{code}.png", scans / f"{code}.png")
    add_deck("ferme", scans, tmp_path / "decks", views=4, names_file=FERME)
    detector = live_detector(None, "ferme", tmp_path / "decks")
    assert live_detector(None).namer is None and taught_deck_names(live_detector(None)) is None
    match_id = store.create_match(["Aki", "Ben"], "livret", deck=taught_deck_names(detector))
    assert store.state(match_id).deck_names.card("01-1").names["fr"] == "Grelinette"
    assert card_words(detector)("01-2") == "Ivy Orange Lantern (01-2)"
