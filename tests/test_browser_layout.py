"""The tablet's pages at 1024x768 (a landscape tablet) in English, French and Japanese,
measured in headless Chromium: the top bar on one line that does not move when the camera
says something, the main actions on screen, "Check this card" beside the totals rather than
over them and folded once nobody answers it, the summary's ledger within its section, a
sentence (not a broken picture's alt text) where the camera has no picture yet. Screenshots
under artifacts/screenshots/layout-*."""

from __future__ import annotations

import pytest
from browser_support import Page, shot  # noqa: E402 - skips this module as it does
from test_browser_camera import TableCamera, image_loaded

from companion.store import MatchStore
from companion.web import create_app

pytestmark = pytest.mark.browser

from selenium.webdriver.common.by import By  # noqa: E402

LANGUAGES = ("en", "fr", "ja")
ASIDE_SECONDS = 2  # how long the test's "Check this card" waits for an answer


@pytest.fixture
def tablet(tmp_path, serve_app, browser):
    """A 1024x768 browser on the app served with a fake camera: (driver, base_url, store,
    camera)."""
    store = MatchStore.open(tmp_path / "layout.db")
    camera = TableCamera(tmp_path / "zones.toml")
    app = create_app(store, live=camera)
    app.config["CHECK_ASIDE_SECONDS"] = ASIDE_SECONDS
    # The camera demo's link in the match pages' bar too (never followed here): the widest bar.
    app.config["DEMO_CAMERA"] = lambda: pytest.fail("the camera demo is not started here")
    base = serve_app(app).base_url
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1024, "height": 768, "deviceScaleFactor": 1, "mobile": False},
    )
    yield browser, base, store, camera
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def played_match(store, players=("Aki", "Ben")) -> int:
    """A match with one round scored (Sankō, a Koi, then Stop with Akatan) and a second one
    open, whose last capture the camera doubts."""
    match_id = store.create_match(players=list(players), rules="livret", rounds=6, oya=players[0])
    store.append(match_id, {"type": "round_started"})
    for card in ("01-1", "03-1", "08-1"):
        store.append(match_id, {"type": "card_captured", "player": players[0], "card": card})
    store.append(match_id, {"type": "koi_called", "player": players[0]})
    for card in ("01-2", "02-2", "03-2"):
        store.append(match_id, {"type": "card_captured", "player": players[0], "card": card})
    store.append(match_id, {"type": "stop_called", "player": players[0]})
    store.append(match_id, {"type": "round_started"})
    store.append(match_id, {"type": "card_captured", "player": players[1], "card": "04-1"})
    store.append(match_id, {"type": "card_captured", "player": players[1], "card": "04-4"})
    store.append(
        match_id,
        {
            "type": "card_captured",
            "player": players[0],
            "card": "12-1",
            "source": "camera",
            "confidence": 0.4,
            "check": True,
            "alternatives": ["12-2"],
        },
    )
    return match_id


def rects(driver, css: str) -> list[dict]:
    """The rectangles of the elements ``css`` selects that take room on the page."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(function (e) {"
        " var r = e.getBoundingClientRect();"
        " return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,"
        " width: r.width, height: r.height}; }).filter(function (r) { return r.width > 0; });",
        css,
    )


def one(driver, css: str) -> dict:
    found = rects(driver, css)
    assert len(found) == 1, (css, found)
    return found[0]


def overlap(a: dict, b: dict) -> bool:
    return not (
        a["right"] <= b["left"]
        or b["right"] <= a["left"]
        or a["bottom"] <= b["top"]
        or b["bottom"] <= a["top"]
    )


def on_screen(r: dict) -> bool:
    return r["top"] >= 0 and r["left"] >= 0 and r["bottom"] <= 768 and r["right"] <= 1024


def one_line_bar(driver) -> dict:
    """The top bar's rectangle, after checking that its items sit on one line and that none
    runs past its right edge."""
    bar = one(driver, ".topbar")
    items = rects(driver, ".topbar > :not(.topnav), .topnav > *")
    # side by side on one line: each beside the others, none over another, all within the bar
    line = {"left": 0, "right": 1}
    assert items and all(overlap({**i, **line}, {**items[0], **line}) for i in items)
    assert not any(overlap(a, b) for k, a in enumerate(items) for b in items[k + 1 :]), items
    assert all(bar["left"] <= i["left"] and i["right"] <= bar["right"] for i in items)
    assert bar["height"] < 64, bar  # one line of buttons; two would be more than 80 px
    assert driver.execute_script(
        "var b = document.querySelector('.topbar'); return b.scrollWidth <= b.clientWidth;"
    )
    return bar


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_match_page_at_1024x768(tablet, lang):
    driver, base, store, camera = tablet
    match_id = played_match(store)
    page = Page(driver)
    driver.get(f"{base}/matches/{match_id}?lang={lang}")
    page.wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#camera-link .cam-pill").text != "…")
    assert driver.execute_script("return [innerWidth, innerHeight, scrollY]") == [1024, 768, 0]
    bar = one_line_bar(driver)
    totals = rects(driver, ".status .stat.total")
    assert len(totals) == 2 and all(on_screen(t) for t in totals)
    # "Check this card" is open, under the totals and over none of them.
    assert driver.find_element(By.ID, "checks").get_attribute("open") is not None
    checks = one(driver, "#checks")
    assert not any(overlap(checks, t) for t in totals)
    assert on_screen(one(driver, "#checks button.check-ok"))
    shot(driver, f"layout-match-{lang}")

    # The camera is lost: its sentence shows, the bar keeps its line and nothing moves.
    status_top = one(driver, ".status")["top"]
    camera.camera = "lost"
    alert = (By.CSS_SELECTOR, "#camera-link .cam-alert")
    page.wait.until(lambda d: d.find_element(*alert).is_displayed() and d.find_element(*alert).text)
    assert one_line_bar(driver)["height"] == bar["height"]
    assert one(driver, ".status")["top"] == status_top
    said = one(driver, "#camera-link .cam-alert")
    assert on_screen(said) and not any(overlap(said, t) for t in rects(driver, ".status .stat"))
    shot(driver, f"layout-match-camera-lost-{lang}")
    camera.camera = "live"
    page.wait.until(lambda d: not d.find_element(*alert).is_displayed())

    # Nobody answers it: it folds to a badge, the cards' buttons in view, and stays folded
    # when the page is loaded again.
    page.wait.until(lambda d: d.find_element(By.ID, "checks").get_attribute("open") is None)
    folded = one(driver, "#checks")
    assert folded["height"] < 50 and not any(overlap(folded, t) for t in totals)
    adds = rects(driver, ".player-actions .add-card")
    assert len(adds) == 2 and all(on_screen(a) for a in adds), adds
    shot(driver, f"layout-match-check-folded-{lang}")
    driver.refresh()
    page.wait.until(lambda d: d.find_elements(By.ID, "checks"))
    assert driver.find_element(By.ID, "checks").get_attribute("open") is None
    # A tap on the badge opens it again, and it stays open.
    page.click("#checks > summary")
    page.wait.until(lambda d: d.find_element(By.ID, "checks").get_attribute("open") is not None)
    driver.refresh()
    page.wait.until(lambda d: d.find_elements(By.ID, "checks"))
    assert driver.find_element(By.ID, "checks").get_attribute("open") is not None


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_calibration_page_at_1024x768(tablet, lang):
    driver, base, store, camera = tablet
    camera.camera = "lost"  # the longest sentence over the picture
    page = Page(driver)
    driver.get(f"{base}/calibrate?lang={lang}")
    page.wait.until(lambda d: image_loaded(d, "#calib-frame"))
    page.wait.until(
        lambda d: "cam-lost" in d.find_element(By.ID, "camera-state").get_attribute("class")
    )
    one_line_bar(driver)
    for button in ("#save-zones", "#reset-zones"):
        assert on_screen(one(driver, button)), button
    shot(driver, f"layout-calibrate-{lang}")
    # The corners as numbers, opened, leave the buttons where they are.
    saved_at = one(driver, "#save-zones")
    page.click("#zones-form summary")
    page.wait.until(lambda d: d.find_element(By.NAME, "zone_field").is_displayed())
    assert one(driver, "#save-zones") == saved_at


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_summary_ledger_keeps_to_its_section(tablet, lang):
    driver, base, store, camera = tablet
    # Three players, a round doubled twice (7 points or more, the other side's Koi).
    players = ["Akiko", "Benjamin", "Chiyoko"]
    match_id = store.create_match(players=players, rules="hana-koikoi", rounds=6, oya="Akiko")
    store.append(match_id, {"type": "round_started"})
    for player, cards, call in (
        ("Benjamin", ("06-2", "09-2", "10-2"), "koi_called"),
        ("Akiko", ("01-1", "03-1", "08-1"), "koi_called"),
        ("Akiko", ("01-2", "02-2", "03-2"), "stop_called"),
    ):
        for card in cards:
            store.append(match_id, {"type": "card_captured", "player": player, "card": card})
        store.append(match_id, {"type": call, "player": player})
    driver.get(f"{base}/matches/{match_id}/summary?lang={lang}")
    section = one(driver, "section:has(> table.ledger)")
    table = one(driver, "table.ledger")
    assert table["right"] <= section["right"] + 0.5 and table["left"] >= section["left"] - 0.5
    assert driver.execute_script("return document.documentElement.scrollWidth <= innerWidth")
    shot(driver, f"layout-summary-{lang}")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_live_view_without_a_picture_says_so(tablet, lang):
    driver, base, store, camera = tablet
    camera.has_frames = False
    camera.camera = "connecting"
    page = Page(driver)
    driver.get(f"{base}/live?lang={lang}")
    page.wait.until(lambda d: d.find_element(By.ID, "frame-missing").is_displayed())
    one_line_bar(driver)
    # The sentence, and no broken picture whose alt text would show under the zones' names.
    assert not driver.find_element(By.ID, "live-frame").is_displayed()
    assert not rects(driver, "#frame-labels .tag")
    sentence = driver.find_element(By.ID, "frame-missing").text
    box = one(driver, ".frame-box")
    assert sentence and overlap(one(driver, "#frame-missing"), box)
    if lang != "en":
        assert "picture" not in sentence
    shot(driver, f"layout-live-no-picture-{lang}")
    camera.has_frames = True
    camera.camera = "live"
    page.wait.until(
        lambda d: (
            image_loaded(d, "#live-frame") and d.find_element(By.ID, "live-frame").is_displayed()
        )
    )
    page.wait.until(lambda d: not d.find_element(By.ID, "frame-missing").is_displayed())
