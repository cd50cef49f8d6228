"""The tablet's "Teach a deck" page (issue 77) through Flask's test client: twelve photos sent
one by one, each answered with its four cards outlined and named or the one sentence saying
what to fix (in the page's language), the deck kept as ``deck add --photos`` keeps it, and
nothing kept from a photo or a file that will not do. Photos are rendered at test time from
../shared/decks (never committed)."""

from __future__ import annotations

import html
import re
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from deck_support import SOURCE_DECK, needs_decks, needs_model
from web_support import csrf, message

from companion.recognizer.decks import UserDeck, list_decks
from companion.simulator.teaching import render_month_photo
from companion.web import create_app

FERME = Path(__file__).parents[1] / "companion" / "game" / "decks" / "ferme-florale.toml"
SIZE = {"width": 1000, "height": 750}  # small photos: cards of 200-250 px, quick to render




def jpeg(image) -> bytes:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 92])
    assert ok
    return data.tobytes()


@pytest.fixture(scope="module")
def month_photos() -> dict[int, bytes]:
    """Twelve good photos of the months, as a phone would send them (JPEG)."""
    return {
        m: jpeg(render_month_photo(500 + m, SOURCE_DECK, m, **SIZE).image) for m in range(1, 13)
    }


@pytest.fixture
def app(store, tmp_path):
    app = create_app(store, testing=True)
    app.config["DECKS_DIR"] = str(tmp_path / "decks")
    return app


def send(client, token, month, data: bytes, filename="photo.jpg", lang=None):
    from io import BytesIO

    return client.post(
        "/decks/teach/photo" + (f"?lang={lang}" if lang else ""),
        data={"csrf_token": token, "month": str(month), "photo": (BytesIO(data), filename)},
        headers={"HX-Request": "true"},
        content_type="multipart/form-data",
    )


def pending_files(app) -> list[Path]:
    root = Path(app.config["DECKS_DIR"]).parent / "teaching"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def test_the_page_is_linked_from_the_match_list(client):
    assert 'href="/decks/teach"' in client.get("/").get_data(as_text=True)
    page = client.get("/decks/teach?lang=fr").get_data(as_text=True)
    assert "Apprendre un jeu" in page
    assert page.count('capture="environment"') == 13  # a camera button a month, and the back


@needs_decks
@needs_model
def test_twelve_good_photos_teach_a_deck_kept_as_the_cli_keeps_it(app, client, month_photos):
    token = csrf(client)
    for month, data in month_photos.items():
        answer = send(client, token, month, data)
        assert answer.status_code == 200, message(answer)
        text = answer.get_data(as_text=True)
        assert 'data-state="good"' in text, html.unescape(text)
        assert text.count('class="card-outline"') == 4
        for k in range(1, 5):
            assert f'data-code="{month:02d}-{k}"' in text
    # The photo as the page shows it, outlines drawn over it.
    preview = client.get("/decks/teach/photo/3.jpg")
    assert preview.status_code == 200 and preview.data[:2] == b"\xff\xd8"

    # The deck's own names: the months are named again in the page's language.
    from io import BytesIO

    answer = client.post(
        "/decks/teach/names?lang=fr",
        data={"csrf_token": token, "names": (BytesIO(FERME.read_bytes()), "ferme.toml")},
        headers={"HX-Request": "true"},
        content_type="multipart/form-data",
    )
    assert answer.status_code == 200, message(answer)
    assert "Grelinette" in answer.get_data(as_text=True)
    assert "Ferme Florale Urbaine" in answer.get_data(as_text=True)

    answer = client.post(
        "/decks/teach/save", data={"csrf_token": token, "name": "ferme"},
        headers={"HX-Request": "true"},
    )  # fmt: skip
    assert answer.status_code == 204, message(answer)
    assert answer.headers["HX-Redirect"] == "/decks/teach?taught=ferme"
    decks_dir = app.config["DECKS_DIR"]
    assert list_decks(decks_dir) == ["ferme"]
    deck = UserDeck.load("ferme", decks_dir)
    assert len(deck.codes) == 48
    assert deck.names_deck().card("01-1").names["fr"] == "Grelinette"
    assert pending_files(app) == []  # the photos went once taught
    page = client.get("/decks/teach?taught=ferme").get_data(as_text=True)
    assert 'data-deck="ferme"' in page and 'id="teach-done"' in page

    # The same name again is refused; removing the deck makes room.
    again = client.post("/decks/teach/save?lang=en", data={"csrf_token": token, "name": "ferme"})
    assert again.status_code == 409 and "already a deck named ferme" in message(again)
    assert client.post("/decks/ferme/remove", data={"csrf_token": token}).status_code == 303
    assert list_decks(decks_dir) == []


@needs_decks
def test_a_photo_with_three_cards_gets_its_sentence_and_nothing_is_kept(app, client, month_photos):
    token = csrf(client)
    three = jpeg(render_month_photo(77, SOURCE_DECK, 3, cards=3, **SIZE).image)
    answer = send(client, token, 3, three)
    assert answer.status_code == 200
    text = html.unescape(answer.get_data(as_text=True))
    assert 'data-state="bad"' in text
    # where the three cards lie, what may have hidden the fourth (the table's pattern)
    assert "03.jpg shows 3 cards (left, middle, middle), not four: the table's pattern" in text
    assert "lay March's four cards face up" in text
    # The same sentence in French and Japanese.
    fr = html.unescape(send(client, token, 3, three, lang="fr").get_data(as_text=True))
    assert "03.jpg montre 3 cartes (à gauche, au milieu, au milieu), pas quatre" in fr
    assert "mars" in fr
    ja = html.unescape(send(client, token, 3, three, lang="ja").get_data(as_text=True))
    assert "3月" in ja and "03.jpg" in ja and "shows" not in ja

    # Nothing is taught while a month is missing or needs another take.
    for month in (1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12):
        send(client, token, month, month_photos[month])
    # The back's place (optional) takes one card lying face down: three cards will not do.
    back = send(client, token, "back", three, filename="IMG_0042.jpg", lang="en")
    text = html.unescape(back.get_data(as_text=True))
    assert 'id="month-back"' in text and 'data-state="bad"' in text
    assert "back.jpg (the back) shows 3 cards, not one" in text
    refused = client.post("/decks/teach/save?lang=en", data={"csrf_token": token, "name": "mine"})
    assert refused.status_code == 400
    assert message(refused) == "Take these months' photos again first: March, the back."
    assert list_decks(app.config["DECKS_DIR"]) == []
    assert not (Path(app.config["DECKS_DIR"]) / "mine").exists()
    one = jpeg(render_month_photo(78, SOURCE_DECK, 5, cards=1, **SIZE).image)
    back = send(client, token, "back", one).get_data(as_text=True)
    assert 'data-state="good"' in back and back.count('class="card-outline"') == 1
    gone = client.post(
        "/decks/teach/back/remove", data={"csrf_token": token}, headers={"HX-Request": "true"}
    )
    assert 'data-state="empty"' in gone.get_data(as_text=True)
    assert not [p for p in pending_files(app) if p.name.startswith("back")]


def png_header(width: int, height: int) -> bytes:
    """A PNG whose header declares ``width`` x ``height`` (its pixels never follow)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk
        + struct.pack(">I", zlib.crc32(chunk))
    )  # fmt: skip


def test_a_file_that_is_not_a_photo_is_refused_with_one_sentence(app, client):
    token = csrf(client)
    answer = send(client, token, 2, b"name = 'not a photo'\n", filename="deck.toml")
    assert answer.status_code == 415
    assert message(answer) == "This file is not a photo: send a JPEG or PNG image."
    fr = send(client, token, 2, b"GIF89a....", filename="x.gif", lang="fr")
    assert fr.status_code == 415 and "pas une photo" in message(fr)
    # A header promising more pixels than any phone takes is refused before decoding.
    bomb = send(client, token, 2, png_header(60_000, 60_000), filename="bomb.png", lang="en")
    assert bomb.status_code == 413 and "too many pixels" in message(bomb)
    # A JPEG's header with nothing decodable after it.
    broken = send(client, token, 2, b"\xff\xd8\xff\xc0\x00\x11\x08\x00\x10\x00\x10" + b"\0" * 40)
    assert broken.status_code == 400 and "cannot be read" in message(broken)
    # A photo too small to hold a card: its sentence (the CLI's), not a failure.
    ok, tiny = cv2.imencode(".png", np.zeros((1, 1, 3), np.uint8))
    answer = send(client, token, 2, tiny.tobytes(), filename="tiny.png", lang="en")
    assert answer.status_code == 200 and 'data-state="bad"' in answer.get_data(as_text=True)
    assert "02.png: the cards are too small (1 px long" in html.unescape(
        answer.get_data(as_text=True)
    )
    # No month, another month, no file.
    assert send(client, token, 13, b"\xff\xd8").status_code == 400
    empty = client.post(
        "/decks/teach/photo", data={"csrf_token": token, "month": "2"},
        content_type="multipart/form-data",
    )  # fmt: skip
    assert empty.status_code == 400 and "Choose a photo" in message(empty)
    kept = [p.name for p in pending_files(app) if p.parent.name != "seen"]
    assert kept == ["02.png"]  # the refused files kept nothing
    # Without the page's CSRF token nothing is read.
    from io import BytesIO

    forged = client.post(
        "/decks/teach/photo",
        data={"month": "2", "photo": (BytesIO(b"\xff\xd8"), "x.jpg")},
        content_type="multipart/form-data",
    )
    assert forged.status_code == 400 and "expired" in message(forged)
    # A names file with a mistake: its sentence, and the standard names stay.
    bad_names = client.post(
        "/decks/teach/names",
        data={"csrf_token": token, "names": (BytesIO(b"name = 3\n[cards"), "n.toml")},
        content_type="multipart/form-data",
    )
    assert bad_names.status_code == 400
    assert message(bad_names).startswith("The names file will not do: The deck file n.toml ")
    # ... its sentence said in the page's language, naming the file as it was sent
    wrong_slot = b'name = "mine"\nbase = "standard"\n[cards."13-1"]\nnames = { en = "A" }\n'
    bad_names = client.post(
        "/decks/teach/names?lang=fr",
        data={"csrf_token": token, "names": (BytesIO(wrong_slot), "mes noms.toml")},
        content_type="multipart/form-data",
    )
    assert bad_names.status_code == 400
    assert message(bad_names).startswith("Le fichier des noms ne convient pas : Le fichier de jeu")
    assert "mes_noms" in message(bad_names) and "'13-1' n’est pas une carte" in message(bad_names)
    assert not any(p.name == "names.toml" for p in pending_files(app))
    # A bad deck name and an unknown deck.
    assert (
        client.post("/decks/teach/save", data={"csrf_token": token, "name": "Mon Jeu"}).status_code
        == 400
    )
    assert client.post("/decks/nothing/remove", data={"csrf_token": token}).status_code == 404


def test_a_photo_over_the_route_limit_is_refused_before_it_is_read(client):
    from companion.web.limits import PHOTO_MAX_BYTES

    token = csrf(client)
    answer = send(client, token, 1, b"\xff\xd8" + b"\0" * (PHOTO_MAX_BYTES + 32 * 1024))
    assert answer.status_code == 413
    # The rest of the page keeps its small limit.
    form = client.post("/decks/teach/save", data={"csrf_token": token, "name": "x" * 70_000})
    assert form.status_code == 413


def test_a_read_only_or_unjoined_tablet_sees_the_decks_but_cannot_teach(store, tmp_path):
    for options in ({"read_only": True}, {"join_code": "1234567890"}):
        app = create_app(store, testing=True, **options)
        app.config["DECKS_DIR"] = str(tmp_path / "decks")
        client = app.test_client()
        page = client.get("/decks/teach").get_data(as_text=True)
        assert 'id="taught-decks"' in page and 'id="teach-panel"' not in page
        token = re.search(r'"X-CSRF-Token": "([^"]+)"', page).group(1)
        answer = send(client, token, 1, b"\xff\xd8")
        assert answer.status_code == 403
        assert pending_files(app) == []
