"""Teaching photos as a player takes them (issue 85): drawn at test time by a renderer of their
own (``companion.bench.kitchen_photos``) from ../shared/decks (never committed), the four
cards are found where they lie in photos the shape-only finder got wrong (a glare spot beside
a card, light cards on light marble, a 2x2), and a photo the finder is unsure
of is outlined by the player on the Teach page and then teaches as drawn."""

from __future__ import annotations

import json
import re
from io import BytesIO
from pathlib import Path

import cv2
import numpy as np
import pytest
from deck_support import have_deck, needs_decks
from web_support import csrf

from companion.bench.kitchen_photos import RIGHT_CORNER, render_kitchen_photo
from companion.recognizer.photos import read_month_photo
from companion.simulator.teaching import render_month_photo
from companion.web import create_app

# (deck, seed, month): photos the shape-only finder got wrong or refused. Seed 1 is among the
# tuning seeds (the reported share is measured on others).
TRICKY = [
    # a glare spot beside the first card: its outline grew into the glare
    ("traditional-ngs", 1, 3),
    # light cards on light marble: one card outlined askew
    ("traditional-scan", 1, 9),
    # a 2x2 on a dark table: read left to right across both rows, cards out of their slots
    ("hwatu-korean", 1, 6),
]


def needs(deck: str):
    return pytest.mark.skipif(not have_deck(deck), reason=f"no ../shared/decks/{deck}")


@pytest.mark.parametrize("deck, seed, month", [pytest.param(*t, marks=needs(t[0])) for t in TRICKY])
def test_the_four_cards_of_a_hard_photo_are_found_where_they_lie(tmp_path, deck, seed, month):
    photo = render_kitchen_photo(seed, deck, month)
    path = tmp_path / f"{month:02d}.jpg"
    path.write_bytes(photo.jpeg)
    read = read_month_photo(path, month)
    assert not read.problem, str(read.problem)
    long = np.linalg.norm(photo.quads[:, 3] - photo.quads[:, 0], axis=1).mean()
    # every card in its slot (a row left to right, a 2x2 as a page is read), every corner near
    # (a large photo is read shrunk, at the size teaching needs: its outlines in those pixels)
    scale = photo.image.shape[1] / read.image.shape[1]
    off = np.abs(np.asarray(read.quads) * scale - photo.quads).max(axis=(1, 2)) / long
    assert (off <= RIGHT_CORNER).all(), (photo.info, off)
    assert len(read.faces) == 4


@needs_decks
def test_the_kitchen_renderer_draws_what_it_says(tmp_path):
    photo = render_kitchen_photo(3, "traditional-ngs", 5, table="marble", trouble="square")
    h, w = photo.image.shape[:2]
    assert w * h >= 7_900_000 and photo.info["layout"] == "2x2"
    assert photo.info["table"] == "marble" and photo.info["trouble"] == "square"
    # the cards lie inside the photo, of one size, in slot order (a 2x2 read as a page)
    assert (photo.quads >= 0).all() and (photo.quads[..., 0] < w).all()
    centres = photo.quads.mean(1)
    assert centres[0, 1] < centres[2, 1] and centres[0, 0] < centres[1, 0]
    again = render_kitchen_photo(3, "traditional-ngs", 5, table="marble", trouble="square")
    assert again.jpeg == photo.jpeg  # a seed draws the same photo


# -- the Teach page: outlining a month's cards by hand -----------------------------------------


@pytest.fixture
def app(store, tmp_path):
    app = create_app(store, testing=True)
    app.config["DECKS_DIR"] = str(tmp_path / "decks")
    return app


def send(client, token, month, data: bytes):
    return client.post(
        "/decks/teach/photo",
        data={"csrf_token": token, "month": str(month), "photo": (BytesIO(data), "p.jpg")},
        headers={"HX-Request": "true"},
        content_type="multipart/form-data",
    )


def outline(client, token, month, quads: str):
    return client.post(
        "/decks/teach/outline",
        data={"csrf_token": token, "month": str(month), "quads": quads},
        headers={"HX-Request": "true"},
    )


@needs_decks
def test_a_refused_photo_shows_what_was_found_and_teaches_from_the_outlines_drawn(app, client):
    token = csrf(client)
    scene = render_month_photo(77, "traditional-ngs", 3, cards=3, width=1000, height=750)
    ok, data = cv2.imencode(".jpg", scene.image, [cv2.IMWRITE_JPEG_QUALITY, 92])
    text = send(client, token, 3, data.tobytes()).get_data(as_text=True)
    assert 'data-state="bad"' in text
    # what the finder saw is there to be fixed: three outlines where the cards lie, a fourth
    # to drag, sixteen corners, the form holding them
    assert text.count('class="outline-handle"') == 16 and "Outline the four cards" in text
    field = re.search(r'name="quads"[^>]*value="([^"]*)"', text).group(1)
    cards = [[tuple(map(float, p.split(","))) for p in c.split()] for c in field.split(";")]
    assert len(cards) == 4 and all(len(c) == 4 for c in cards)
    truth = np.array([label.quad for label in scene.labels]) / [1000, 750]
    for k in range(3):
        assert np.abs(np.array(cards[k]) - truth[k]).max() < 0.03
    # the player drags the fourth outline onto a fourth spot of the photo: it will do
    fourth = truth[2] + [0.17, 0.0]
    drawn = [truth[0], truth[1], truth[2], fourth]
    quads = "; ".join(" ".join(f"{x:.4f},{y:.4f}" for x, y in q) for q in drawn)
    answer = outline(client, token, 3, quads)
    assert answer.status_code == 200
    text = answer.get_data(as_text=True)
    assert 'data-state="good"' in text and "drawn-note" in text
    assert text.count('class="card-outline"') == 4
    # the outlines are kept (photo pixels) and teaching reads the photo with them
    folder = next((Path(app.config["DECKS_DIR"]).parent / "teaching").iterdir())
    seen = json.loads((folder / "seen" / "03.json").read_text())
    assert np.allclose(np.array(seen["drawn"])[3].mean(0), fourth.mean(0) * [1000, 750], atol=2)
    photo = read_month_photo(next(folder.glob("03.*")), 3, quads=seen["drawn"])
    assert not photo.problem and len(photo.faces) == 4
    # outlines that are not four cards are refused with one sentence, keeping the last ones
    bad = outline(client, token, 3, "0.1,0.1 0.2,0.1 0.2,0.3")
    assert bad.status_code == 400
    tiny = "; ".join(["0.5,0.5 0.501,0.5 0.501,0.501 0.5,0.501"] * 4)
    assert outline(client, token, 3, tiny).status_code == 400
    assert json.loads((folder / "seen" / "03.json").read_text())["drawn"] == seen["drawn"]


def test_outlines_cannot_be_sent_before_the_photo(client):
    token = csrf(client)
    quads = "; ".join(["0.1,0.1 0.2,0.1 0.2,0.3 0.1,0.3"] * 4)
    assert outline(client, token, 4, quads).status_code == 400


def centres(client, token, month, points: str):
    return client.post(
        "/decks/teach/centres",
        data={"csrf_token": token, "month": str(month), "centres": points},
        headers={"HX-Request": "true"},
    )


@needs_decks
def test_a_photo_teaches_from_the_cards_found_around_the_points_tapped(app, client):
    token = csrf(client)
    scene = render_month_photo(31, "traditional-ngs", 6, width=1000, height=750)
    ok, data = cv2.imencode(".jpg", scene.image, [cv2.IMWRITE_JPEG_QUALITY, 92])
    assert send(client, token, 6, data.tobytes()).status_code == 200
    truth = np.array([label.quad for label in scene.labels]) / [1000, 750]
    # the middles tapped a little off, in no particular order: the cards in slot order
    middles = truth.mean(1) + [[0.01, -0.02], [-0.012, 0.015], [0.0, 0.02], [0.01, 0.0]]
    points = "; ".join(f"{x:.4f},{y:.4f}" for x, y in middles[[2, 0, 3, 1]])
    answer = centres(client, token, 6, points)
    assert answer.status_code == 200
    text = answer.get_data(as_text=True)
    assert 'data-state="good"' in text and "tapped-note" in text
    assert text.count('class="card-outline"') == 4
    folder = next((Path(app.config["DECKS_DIR"]).parent / "teaching").iterdir())
    seen = json.loads((folder / "seen" / "06.json").read_text())
    assert len(seen["tapped"]) == 4
    long = np.linalg.norm(truth[:, 3] - truth[:, 0], axis=1).mean() * 750
    outlines = np.array(seen["quads"]) * (1000 / seen["size"][0])
    assert np.abs(outlines - truth * [1000, 750]).max() / long <= RIGHT_CORNER
    # three points, or two on one card: one sentence, what was seen kept
    three = "; ".join(points.split("; ")[:3])
    assert centres(client, token, 6, three).status_code == 400
    twice = "; ".join([points.split("; ")[0]] * 2 + points.split("; ")[2:])
    assert centres(client, token, 6, twice).status_code == 400
    assert json.loads((folder / "seen" / "06.json").read_text()) == seen
    # a point on the bare table: no dead end, four outlines to drag and what to do
    bare = "; ".join([*points.split("; ")[:3], "0.5000,0.0600"])
    text = centres(client, token, 6, bare).get_data(as_text=True)
    assert 'data-state="bad"' in text and "points tapped" in text
    assert text.count('class="outline-handle"') == 16


# photos the finder refuses at first look (tuning seed 901): the points tapped must turn each
# into four right cards
REFUSED = [
    # a 2x2 of light cards on a light checked cloth: "too close", two cards in one outline
    ("pale", 901, 10),
    # a 2x2 on dark wood under a hand's shadow: three cards found
    ("procedural", 901, 2),
]


@pytest.mark.parametrize("deck, seed, month", REFUSED)
def test_tapping_each_card_turns_a_refused_photo_into_four_right_cards(tmp_path, deck, seed, month):
    photo = render_kitchen_photo(seed, deck, month, scratch=tmp_path)
    path = tmp_path / f"{month:02d}.jpg"
    path.write_bytes(photo.jpeg)
    assert read_month_photo(path, month).problem  # refused as it is
    read = read_month_photo(path, month)
    scale = photo.image.shape[1] / read.image.shape[1]
    # a finger's taps: a little off each middle, in no particular order
    width = np.linalg.norm(photo.quads[:, 1] - photo.quads[:, 0], axis=1).mean()
    off = np.array([[0.04, -0.03], [-0.035, 0.025], [0.01, 0.045], [-0.025, -0.04]]) * width
    taps = (photo.quads.mean(1) + off)[[2, 0, 3, 1]] / scale
    tapped = read_month_photo(path, month, centres=taps)
    assert not tapped.problem, str(tapped.problem)
    long = np.linalg.norm(photo.quads[:, 3] - photo.quads[:, 0], axis=1).mean()
    wrong = np.abs(np.asarray(tapped.quads) * scale - photo.quads).max(axis=(1, 2)) / long
    assert (wrong <= RIGHT_CORNER).all(), (photo.info, wrong)
    assert len(tapped.faces) == 4


def test_points_cannot_be_tapped_before_the_photo(client):
    token = csrf(client)
    assert centres(client, token, 4, "0.1,0.1; 0.3,0.1; 0.5,0.1; 0.7,0.1").status_code == 400


# -- what the finder saw, said: a table like the cards, a patterned table; sharpness -----------


@pytest.mark.parametrize(
    "deck, seed, month, said",
    [
        # dark-edged cards on a dark table: three found, the fourth's edges hidden
        pytest.param("traditional-ngs", 901, 1, "photo.table_like_cards",
                     marks=needs("traditional-ngs")),
        # a woven tablecloth: two found, its pattern along the others' edges
        pytest.param("hwatu-korean", 901, 9, "photo.busy_table", marks=needs("hwatu-korean")),
    ],
)  # fmt: skip
def test_a_refused_photo_says_what_hid_the_cards(tmp_path, deck, seed, month, said):
    photo = render_kitchen_photo(seed, deck, month)
    path = tmp_path / f"{month:02d}.jpg"
    path.write_bytes(photo.jpeg)
    read = read_month_photo(path, month)
    assert read.problem.id == said, str(read.problem)


def flat_faces(folder: Path, month: int) -> Path:
    """A month of a flat design: one colour a card, a dark mark, a hill, line art."""
    faces = [np.full((1000, 610, 3), colour, np.uint8)
             for colour in ((40, 40, 190), (30, 170, 230), (235, 240, 245), (40, 40, 190))]  # fmt: skip
    cv2.circle(faces[0], (305, 300), 45, (20, 20, 20), -1)
    cv2.ellipse(faces[1], (305, 1000), (420, 330), 0, 180, 360, (25, 25, 25), -1)
    rng = np.random.default_rng(5)
    for _ in range(20):
        a, b = (tuple(int(v) for v in rng.uniform([60, 60], [550, 940])) for _ in range(2))
        cv2.line(faces[2], a, b, (60, 50, 40), 3, cv2.LINE_AA)
    folder.mkdir(parents=True, exist_ok=True)
    for k, face in enumerate(faces):
        cv2.imwrite(str(folder / f"{month:02d}-{k + 1}.png"), face)
    return folder


@pytest.mark.parametrize(
    "deck", ["procedural", pytest.param("recoloured", marks=needs("hwatu-korean")), "pale", "flat"]
)
def test_a_crisp_photo_of_a_flat_design_is_never_called_blurred(tmp_path, deck):
    from companion.recognizer.photos import _read_image, blurred
    from companion.recognizer.rectangles import rectify

    source = flat_faces(tmp_path / "flat", 8) if deck == "flat" else deck
    photo = render_kitchen_photo(5, source, 8, table="light", trouble="none", scratch=tmp_path)
    path = tmp_path / "08.jpg"
    path.write_bytes(photo.jpeg)
    image = _read_image(path)
    quads = photo.quads * (image.shape[1] / photo.image.shape[1])
    assert not any(blurred(rectify(image, q, 256)) for q in quads)
    assert getattr(read_month_photo(path, 8).problem, "id", "") != "photo.blurred"
    # the same photo well out of focus (9 px at the size teaching reads it, some 6 px on a
    # card's straightened face): every card blurred
    soft = cv2.GaussianBlur(image, (0, 0), 9)
    assert all(blurred(rectify(soft, q, 256)) for q in quads)
