"""Changing the deck a running camera reads with, from the tablet (issue 77): the live page's
choice among the taught decks and the standard names, the teach page's "Read the camera with
this deck"; the recognizer reads the next frame with the chosen deck, the live view's labels
follow, a new match records that deck, and a match in progress keeps its own names. A deck
added from four scans with the Ferme Florale names (a partial deck, quick to add); frames
rendered at test time from ../shared/decks (never committed)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from companion.live.sources import Frame, FrameSource
from companion.recognizer import DEFAULT_MODEL
from companion.simulator import synth

FERME = Path(__file__).parents[1] / "companion" / "game" / "decks" / "ferme-florale.toml"
SOURCE_DECK = "traditional-ngs"
JANUARY = ("01-1", "01-2", "01-3", "01-4")


def _source_deck() -> Path | None:
    try:
        return Path(synth.resolve_deck_dir(SOURCE_DECK))
    except synth.SynthError:
        return None


pytestmark = [
    pytest.mark.skipif(not DEFAULT_MODEL.is_file(), reason="no committed model"),
    pytest.mark.skipif(_source_deck() is None, reason="no ../shared/decks"),
]


class Photos(FrameSource):
    """January's four cards on a table, a new picture every 2 s (the detector looks at each)."""

    fps = 0.5
    finite = True

    def __init__(self, images):
        self.images = list(images)
        self.index = 0
        self.state = "live"

    def read(self):
        if self.index >= len(self.images):
            self.state = "ended"
            return None
        frame = Frame(self.images[self.index], self.index, 2.0 * self.index)
        self.index += 1
        return frame

    def describe(self) -> str:
        return "test photos"


@pytest.fixture(scope="module")
def decks_dir(tmp_path_factory) -> Path:
    from companion.recognizer.decks import add_deck

    root = tmp_path_factory.mktemp("switch")
    scans = root / "scans"
    scans.mkdir()
    for code in JANUARY:
        shutil.copy(_source_deck() / f"{code}.png", scans / f"{code}.png")
    add_deck("ferme", scans, root / "decks", views=4, names_file=FERME)
    return root / "decks"


@pytest.fixture(scope="module")
def recognizer():
    from companion.cli.live import live_detector

    return live_detector(None)


@pytest.fixture(scope="module")
def january():
    from companion.simulator.teaching import render_month_photo

    return [render_month_photo(700 + i, SOURCE_DECK, 1, 800, 600).image for i in range(3)]


@pytest.fixture
def session(store, recognizer, january, tmp_path):
    from companion.live.session import LiveSession

    recognizer.namer = None  # the standard names, as 'run' without --deck
    return LiveSession(
        Photos(january), recognizer, store, zones_path=tmp_path / "zones.toml", realtime=False
    )


@pytest.fixture
def app(store, session, decks_dir):
    from companion.web import create_app

    app = create_app(store, testing=True, live=session)
    app.config["DECKS_DIR"] = str(decks_dir)
    return app


@pytest.fixture
def client(app):
    return app.test_client()


def csrf(client) -> str:
    page = client.get("/live").get_data(as_text=True)
    return re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)


def labels(client) -> set[str]:
    return {c["name"] for c in client.get("/live/cards?lang=fr").get_json()["cards"]}


def test_the_detector_reads_the_next_frame_with_the_deck_chosen_meanwhile(
    session, recognizer, decks_dir, monkeypatch
):
    from companion.recognizer.decks import DeckNamer, UserDeck

    named_by = []  # which deck named each frame's cards
    real_call = DeckNamer.__call__

    def recording(self, image, det):
        named_by.append(self.deck.name)
        return real_call(self, image, det)

    monkeypatch.setattr(DeckNamer, "__call__", recording)
    assert session.step() and len(session.pipeline.detections) >= 3
    assert named_by == [] and session.deck_name is None

    session.use_deck(UserDeck.load("ferme", decks_dir))
    assert session.deck_name == "ferme" and recognizer.namer.names.name == "ferme-florale"
    assert session.step() and len(session.pipeline.detections) >= 3
    assert named_by == ["ferme"]

    session.use_deck(None)  # back to the standard names
    assert session.step()
    assert named_by == ["ferme"] and recognizer.namer is None


def test_the_tablet_switches_the_camera_to_a_taught_deck_and_the_labels_follow(
    store, session, client
):
    assert session.step()
    assert "Grelinette" not in labels(client)
    page = client.get("/live?lang=en").get_data(as_text=True)
    assert '<option value="ferme">ferme</option>' in page
    assert "Read the camera with this deck" in page

    answer = client.post("/live/deck", data={"csrf_token": csrf(client), "deck": "ferme"})
    assert answer.status_code == 303 and answer.headers["Location"] == "/live"
    assert session.deck_name == "ferme"
    assert session.step()
    assert {"Grelinette", "Lierre lanterne orange"} <= labels(client)
    assert '<option value="ferme" selected>ferme</option>' in client.get("/live").get_data(
        as_text=True
    )

    # A match started now records the deck the camera reads with.
    token = csrf(client)
    made = client.post(
        "/matches",
        data={"csrf_token": token, "rules": "livret", "player_1": "Aki", "player_2": "Ben"},
    )
    assert made.status_code == 303, made.get_data(as_text=True)
    state = store.state(store.matches()[0].id)
    assert state.deck_names is not None and state.deck_names.card("01-1").name == "Broadfork"

    # Back to the standard names: the camera's labels change, the match keeps its deck.
    answer = client.post("/live/deck", data={"csrf_token": token, "deck": ""})
    assert answer.status_code == 303 and session.deck_name is None
    assert session.step()
    assert "Grelinette" not in labels(client)
    assert store.state(store.matches()[0].id).deck_names.name == "ferme-florale"


def test_a_match_in_progress_keeps_its_names_and_the_page_says_so(store, session, client):
    match_id = store.create_match(["Aki", "Ben"], "livret")  # the standard names, recorded
    store.append(match_id, {"type": "round_started"})
    store.append(
        match_id,
        {"type": "hand_declared", "player": "Aki", "kind": "teshi", "cards": list(JANUARY)},
    )
    session.step()  # the session follows the match in progress
    token = csrf(client)
    assert 'id="match-deck-note"' not in client.get("/live").get_data(as_text=True)
    client.post("/live/deck", data={"csrf_token": token, "deck": "ferme"})
    board = client.get(f"/matches/{match_id}?lang=en").get_data(as_text=True)
    assert "Broadfork" not in board and "Pine" in board
    page = client.get("/live?lang=en").get_data(as_text=True)
    note = re.search(r'id="match-deck-note"[^>]*>(.*?)</p>', page, re.S)
    assert note is not None, page
    assert f"Match {match_id} keeps the names of the deck it was started with" in note.group(1)
    assert "Ferme Florale" in note.group(1)
    french = client.get("/live?lang=fr").get_data(as_text=True)
    assert 'id="match-deck-note"' in french and "keeps the names" not in french


def test_refusals_change_nothing(store, session, client, decks_dir):
    from companion.web import create_app

    token = csrf(client)
    answer = client.post("/live/deck?lang=en", data={"csrf_token": token, "deck": "nope"})
    assert answer.status_code == 404
    assert "There is no taught deck named nope." in answer.get_data(as_text=True)
    assert session.deck_name is None
    # without the form's token
    assert client.post("/live/deck", data={"deck": "ferme"}).status_code in (400, 403)
    assert session.deck_name is None
    # a read-only tablet, and one that has not entered the join code
    for options in ({"read_only": True}, {"join_code": "1234567890"}):
        app = create_app(store, testing=True, live=session, **options)
        app.config["DECKS_DIR"] = str(decks_dir)
        other = app.test_client()
        page = other.get("/live?lang=en").get_data(as_text=True)
        assert "Read the camera with this deck" not in page
        answer = other.post("/live/deck", data={"csrf_token": csrf(other), "deck": "ferme"})
        assert answer.status_code == 403
        assert session.deck_name is None


def test_the_teach_page_offers_the_camera_the_deck_just_taught(client):
    page = client.get("/decks/teach?taught=ferme&lang=en").get_data(as_text=True)
    form = re.search(r'<form[^>]*id="use-taught-deck".*?</form>', page, re.S)
    assert form is not None, page
    assert 'action="/live/deck"' in form.group(0) and 'value="ferme"' in form.group(0)
    # a deck that is not there (removed since) gets no such button
    page = client.get("/decks/teach?taught=gone").get_data(as_text=True)
    assert 'id="use-taught-deck"' not in page


@pytest.mark.parametrize(
    "damage", [{"deck.json": "{not json"}, {"deck.json": "{}", "references.npz": "x"}]
)
def test_an_unreadable_deck_is_one_sentence_without_the_servers_folder(
    store, session, tmp_path, damage
):
    from companion.web import create_app

    broken = tmp_path / "decks" / "broken"
    broken.mkdir(parents=True)
    for name, text in damage.items():
        (broken / name).write_text(text)
    app = create_app(store, testing=True, live=session)
    app.config["DECKS_DIR"] = str(tmp_path / "decks")
    client = app.test_client()
    for lang, said in (("en", "cannot be read"), ("fr", "illisible")):
        answer = client.post(
            f"/live/deck?lang={lang}", data={"csrf_token": csrf(client), "deck": "broken"}
        )
        text = answer.get_data(as_text=True)
        assert answer.status_code == 409 and said in text
        assert str(tmp_path) not in text and "JSON" not in text and "pickle" not in text
    assert session.deck_name is None
