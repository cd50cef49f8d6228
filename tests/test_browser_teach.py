"""The "Teach a deck" page in headless Chromium: twelve photos picked at once each go to their
month and come back with their four cards outlined and named, a month taken again with three
cards gets its sentence, and the deck is taught and listed; a refused month is outlined by
dragging the corners of its cards. Photos are rendered at test time
from ../shared/decks into a temporary folder (never committed)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from browser_support import Page, shot  # noqa: E402 - skips this module as it does
from deck_support import SOURCE_DECK, have_deck

from companion.recognizer import DEFAULT_MODEL
from companion.recognizer.decks import UserDeck, list_decks
from companion.simulator.teaching import render_month_photo, write_month_photos
from companion.store import MatchStore
from companion.web import create_app

pytestmark = pytest.mark.browser

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

SIZE = {"width": 1000, "height": 750}  # small photos: quick to render, send and check


if not have_deck() or not DEFAULT_MODEL.is_file():
    pytest.skip("no ../shared/decks or no committed model", allow_module_level=True)


@pytest.fixture
def teach_server(tmp_path, serve_app):
    """The app served on 127.0.0.1 keeping decks under tmp_path; yields (base_url, decks)."""
    store = MatchStore.open(tmp_path / "browser.db")
    app = create_app(store)
    decks = tmp_path / "decks"
    app.config["DECKS_DIR"] = str(decks)
    return serve_app(app).base_url, decks


def good_months(driver) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, ".month-slot[data-state=good]"))


def test_twelve_photos_picked_at_once_teach_a_deck(teach_server, browser, tmp_path):
    base, decks = teach_server
    photos = write_month_photos(tmp_path / "photos", SOURCE_DECK, seed=5, **SIZE)
    three = tmp_path / "three.jpg"
    cv2.imwrite(str(three), render_month_photo(9, SOURCE_DECK, 3, cards=3, **SIZE).image)
    page = Page(browser)

    browser.get(f"{base}/")
    page.click("#teach-link")
    page.wait.until(lambda d: d.find_elements(By.ID, "teach-panel"))
    assert browser.find_element(By.ID, "teach-button").get_attribute("disabled") is not None

    # The twelve photos picked at once: each goes to its month and comes back checked.
    picker = browser.find_element(By.ID, "teach-many")
    picker.send_keys("\n".join(str(photos / f"{m:02d}.jpg") for m in range(1, 13)))
    WebDriverWait(browser, 60).until(lambda d: good_months(d) == 12)
    for month in range(1, 13):
        slot = f"#month-{month}"
        assert len(browser.find_elements(By.CSS_SELECTOR, f"{slot} polygon.card-outline")) == 4
        names = browser.find_elements(By.CSS_SELECTOR, f"{slot} .card-names li")
        assert [n.get_attribute("data-code") for n in names] == [
            f"{month:02d}-{k}" for k in range(1, 5)
        ]
    assert "Crane" in page.text("#month-1 .card-names")
    page.wait.until(lambda d: page.text("#teach-count") == "12 of 12 photos show their four cards")

    # March taken again with three cards: the page says what to fix, in that month's place,
    # and the deck cannot be taught until it is taken once more.
    march = "#month-3 input[type=file]"
    browser.find_element(By.CSS_SELECTOR, march).send_keys(str(three))
    page.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#month-3[data-state=bad]"))
    said = page.text("#month-3 .teach-problem")
    assert "shows 3 cards (" in said and "not four" in said and "four cards face up" in said
    assert browser.find_element(By.ID, "teach-button").get_attribute("disabled") is not None
    browser.find_element(By.CSS_SELECTOR, march).send_keys(str(photos / "03.jpg"))
    page.wait.until(lambda d: good_months(d) == 12)
    shot(browser, "40-teach-a-deck")

    browser.find_element(By.ID, "deck-name").send_keys("my-deck")
    page.click("#teach-button")
    WebDriverWait(browser, 150).until(lambda d: d.find_elements(By.ID, "teach-done"))
    assert browser.find_elements(By.CSS_SELECTOR, '#taught-decks li[data-deck="my-deck"]')
    assert list_decks(decks) == ["my-deck"]
    assert len(UserDeck.load("my-deck", decks).codes) == 48
    problems = [
        e["message"]
        for e in browser.get_log("browser")
        if ("Content Security Policy" in e["message"] or e["level"] == "SEVERE")
        and "favicon" not in e["message"]
    ]
    assert problems == []


def test_a_refused_month_is_outlined_by_dragging_corners(teach_server, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    base, _ = teach_server
    three = tmp_path / "three.jpg"
    scene = render_month_photo(9, SOURCE_DECK, 3, cards=3, **SIZE)
    cv2.imwrite(str(three), scene.image)
    page = Page(browser)
    browser.get(f"{base}/decks/teach")
    page.wait.until(lambda d: d.find_elements(By.ID, "teach-panel"))
    browser.find_element(By.CSS_SELECTOR, "#month-3 input[type=file]").send_keys(str(three))
    page.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#month-3[data-state=bad]"))
    # the outlines found are shown to be fixed: drag the fourth card's corners beside the third
    stage = browser.find_element(By.CSS_SELECTOR, "#month-3 .outline-stage")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", stage)
    box = stage.rect
    third = scene.labels[2].quad / [SIZE["width"], SIZE["height"]]
    for index, (x, y) in enumerate(third + [0.17, 0.0]):
        handle = browser.find_element(
            By.CSS_SELECTOR, f'#month-3 .outline-handle[data-card="3"][data-index="{index}"]'
        )
        r = handle.rect
        hx, hy = r["x"] + r["width"] / 2, r["y"] + r["height"] / 2
        tx, ty = box["x"] + x * box["width"], box["y"] + y * box["height"]
        drag = ActionChains(browser).click_and_hold(handle).move_by_offset(tx - hx, ty - hy)
        drag.release().perform()
    field = browser.find_element(By.CSS_SELECTOR, "#month-3 .outline-quads").get_attribute("value")
    fourth = [tuple(map(float, p.split(","))) for p in field.split(";")[3].split()]
    wanted = third + [0.17, 0.0]
    assert np.abs(np.array(fourth) - wanted).max() < 0.01, (fourth, wanted)
    page.click("#month-3 .outline-form button[type=submit]")
    page.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#month-3[data-state=good]"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#month-3 polygon.card-outline")) == 4
    assert browser.find_elements(By.CSS_SELECTOR, "#month-3 .drawn-note")
    shot(browser, "41-teach-outlined-by-hand")
    problems = [
        e["message"] for e in browser.get_log("browser")
        if e["level"] == "SEVERE" and "favicon" not in e["message"]
    ]  # fmt: skip
    assert problems == []


def tap_centres(browser, month: int, points) -> None:
    """Tap each point (shares 0..1 of the photo) on a month's outline stage, in tap mode."""
    from selenium.webdriver.common.action_chains import ActionChains

    stage = browser.find_element(By.CSS_SELECTOR, f"#month-{month} .outline-stage")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", stage)
    box = stage.rect
    for x, y in points:
        dx, dy = (x - 0.5) * box["width"], (y - 0.5) * box["height"]
        ActionChains(browser).move_to_element_with_offset(stage, dx, dy).click().perform()


def test_a_month_is_outlined_by_tapping_each_cards_middle(teach_server, browser, tmp_path):
    base, _ = teach_server
    four, three = tmp_path / "four.jpg", tmp_path / "three.jpg"
    # a photo the finder reads (tapping does not yet rescue the ones it refuses: the model card)
    scene = render_month_photo(2, SOURCE_DECK, 5, **SIZE)
    cv2.imwrite(str(four), scene.image)
    partial = render_month_photo(9, SOURCE_DECK, 3, cards=3, **SIZE)
    cv2.imwrite(str(three), partial.image)
    page = Page(browser)
    browser.get(f"{base}/decks/teach")
    page.wait.until(lambda d: d.find_elements(By.ID, "teach-panel"))

    # the four cards' middles tapped, a little off centre: the cards are found around them
    browser.find_element(By.CSS_SELECTOR, "#month-5 input[type=file]").send_keys(str(four))
    WebDriverWait(browser, 60).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#month-5:not([data-state=empty])")
    )
    browser.execute_script("document.querySelector('#month-5 .outline-fix').open = true")
    page.click('#month-5 .outline-mode[data-mode="centres"]')
    assert not browser.find_element(By.CSS_SELECTOR, "#month-5 .outline-handle").is_displayed()
    truth = np.array([label.quad for label in scene.labels]) / [SIZE["width"], SIZE["height"]]
    middles = truth.mean(1) + [[0.01, -0.02], [-0.015, 0.01], [0.0, 0.025], [0.012, 0.0]]
    submit = browser.find_element(By.CSS_SELECTOR, "#month-5 .centres-form button[type=submit]")
    assert submit.get_attribute("disabled") is not None  # no point tapped yet
    tap_centres(browser, 5, middles)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#month-5 .tap-mark")) == 4
    field = browser.find_element(By.CSS_SELECTOR, "#month-5 .outline-centres").get_attribute("value")
    sent = np.array([tuple(map(float, p.split(","))) for p in field.split(";")])
    assert np.abs(sent - middles).max() < 0.01, (sent, middles)
    page.click("#month-5 .centres-form button[type=submit]")
    WebDriverWait(browser, 60).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#month-5 .tapped-note")
    )
    assert browser.find_elements(By.CSS_SELECTOR, "#month-5[data-state=good]")
    names = browser.find_elements(By.CSS_SELECTOR, "#month-5 .card-names li")
    assert [n.get_attribute("data-code") for n in names] == [f"05-{k}" for k in range(1, 5)]
    shot(browser, "42-teach-outlined-by-taps")

    # three cards and a tap on the bare table: no dead end, four outlines to drag and a sentence
    browser.find_element(By.CSS_SELECTOR, "#month-3 input[type=file]").send_keys(str(three))
    WebDriverWait(browser, 60).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#month-3[data-state=bad]")
    )
    page.click('#month-3 .outline-mode[data-mode="centres"]')
    known = np.array([label.quad for label in partial.labels]) / [SIZE["width"], SIZE["height"]]
    points = [*known.mean(1), known[2].mean(0) + [0.17, 0.0]]
    tap_centres(browser, 3, points)
    page.click("#month-3 .centres-form button[type=submit]")
    WebDriverWait(browser, 60).until(
        lambda d: "points tapped" in page.text("#month-3 .teach-problem")
    )
    assert browser.find_elements(By.CSS_SELECTOR, "#month-3[data-state=bad]")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#month-3 .outline-handle")) == 16
    problems = [
        e["message"] for e in browser.get_log("browser")
        if e["level"] == "SEVERE" and "favicon" not in e["message"]
    ]  # fmt: skip
    assert problems == []
