"""The camera pages in headless Chromium: the live view follows the camera's state, the
calibration page's corners are dragged with a mouse and a finger and saved as TOML, and a
doubtful capture is confirmed in one tap. A fake LiveSession serves generated frames."""

from __future__ import annotations

import re

import cv2
import numpy as np
import pytest
from test_browser import Page, browser, shot  # noqa: F401 - browser is a fixture; skips as it does
from test_camera_web import FakeLive

from companion.live.zones import Zones, default_zones
from companion.store import MatchStore
from companion.web import create_app

pytestmark = pytest.mark.browser

# Imported only once test_browser has skipped this module where selenium or chromium is missing.

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.actions import interaction  # noqa: E402
from selenium.webdriver.common.actions.action_builder import ActionBuilder  # noqa: E402
from selenium.webdriver.common.actions.pointer_input import PointerInput  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402


def table_jpeg(width=640, height=360, annotated=True, count=0) -> bytes:
    """A green table with two white cards; the annotated one outlines and names them."""
    image = np.full((height, width, 3), (40, 110, 30), np.uint8)
    for x, y in [(200, 140), (330, 150)]:
        cv2.rectangle(image, (x, y), (x + 50, y + 80), (235, 235, 235), -1)
        if annotated:
            cv2.rectangle(image, (x - 3, y - 3), (x + 53, y + 83), (0, 220, 255), 2)
            cv2.putText(image, "03-1", (x, y - 8), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 220, 255))
    cv2.putText(image, str(count), (10, 30), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (255, 255, 255))
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    return data.tobytes()


class TableCamera(FakeLive):
    def latest_jpeg(self, annotated=True):
        if not self.has_frames:
            return None
        with self.lock:
            self.served += 1
            return table_jpeg(annotated=annotated, count=self.frames)

    def snapshot_jpeg(self):
        return table_jpeg(annotated=False) if self.has_frames else None


@pytest.fixture
def camera_server(tmp_path, serve_app):
    """The app served on 127.0.0.1 with a fake camera; yields (base_url, store, camera)."""
    store = MatchStore.open(tmp_path / "browser.db")
    camera = TableCamera(tmp_path / "zones.toml")
    return serve_app(create_app(store, live=camera)).base_url, store, camera


def image_loaded(driver, css: str) -> bool:
    return driver.execute_script(
        "var i = document.querySelector(arguments[0]); return !!i && i.complete && i.naturalWidth > 0;",
        css,
    )


def console_problems(driver, allowed=()) -> list[str]:
    return [
        e["message"]
        for e in driver.get_log("browser")
        if ("Content Security Policy" in e["message"] or e["level"] == "SEVERE")
        and "favicon" not in e["message"]
        and not any(a in e["message"] for a in allowed)
    ]


def test_live_view_follows_the_camera(camera_server, browser):  # noqa: F811
    base, store, camera = camera_server
    camera.match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    page = Page(browser)

    # From the match page, the camera link (its state refreshed by camera.js) opens the view.
    browser.get(f"{base}/matches/{camera.match_id}")
    page.wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#camera-link .cam-pill").text == "LIVE")
    page.click("#camera-link")
    page.wait.until(lambda d: image_loaded(d, "#live-frame"))
    # The picture is refreshed by itself: the fake numbers its frames.
    first = camera.served
    page.wait.until(lambda d: camera.served >= first + 3)
    assert page.text("#camera-state [data-field=fps]") == "15.0"
    shown = int(page.text("#camera-state [data-field=frames]"))
    page.wait.until(lambda d: int(page.text("#camera-state [data-field=frames]")) > shown)
    shot(browser, "20-live-view")

    # The camera is lost: the page says to keep scoring by hand.
    camera.camera = "lost"
    page.wait.until(lambda d: "cam-lost" in d.find_element(By.ID, "camera-state").get_attribute("class"))
    assert "Camera lost — keep scoring by hand, retrying." in page.text("#camera-state")
    shot(browser, "21-live-view-lost")
    camera.camera = "live"

    # The MJPEG stream in the same picture.
    browser.find_element(By.CSS_SELECTOR, 'input[name="live-mode"][value="stream"]').click()
    page.wait.until(lambda d: "stream.mjpg" in d.find_element(By.ID, "live-frame").get_attribute("src"))
    page.wait.until(lambda d: image_loaded(d, "#live-frame"))
    assert console_problems(browser) == []


def test_live_view_without_a_frame_yet(camera_server, browser):  # noqa: F811
    base, store, camera = camera_server
    camera.has_frames = False
    camera.camera = "connecting"
    page = Page(browser)
    browser.get(f"{base}/live")
    page.wait.until(lambda d: d.find_element(By.ID, "frame-missing").is_displayed())
    assert "Connecting to the camera" in page.text("#camera-state")
    camera.has_frames = True
    camera.camera = "live"
    page.wait.until(lambda d: image_loaded(d, "#live-frame"))
    page.wait.until(lambda d: not d.find_element(By.ID, "frame-missing").is_displayed())


def corner(driver, zone: str, index: int):
    return driver.find_element(By.CSS_SELECTOR, f'.handle[data-zone="{zone}"][data-index="{index}"]')


def test_calibration_by_dragging_corners(camera_server, browser):  # noqa: F811
    base, store, camera = camera_server
    page = Page(browser)
    browser.get(f"{base}/calibrate")
    page.wait.until(lambda d: image_loaded(d, "#calib-frame"))
    stage = browser.find_element(By.ID, "calib-stage").rect
    # The drawing sits on the picture: the field's first corner at (0.12, 0.30) of it.
    handle = corner(browser, "field", 0).rect
    assert abs(handle["x"] + handle["width"] / 2 - (stage["x"] + 0.12 * stage["width"])) < 3
    assert abs(handle["y"] + handle["height"] / 2 - (stage["y"] + 0.30 * stage["height"])) < 3

    # A mouse drags the field's first corner right and down...
    ActionChains(browser).drag_and_drop_by_offset(corner(browser, "field", 0), 100, 50).perform()
    # ...and a finger drags the draw pile's third corner left.
    touch = PointerInput(interaction.POINTER_TOUCH, "finger")
    actions = ActionBuilder(browser, mouse=touch)
    actions.pointer_action.move_to(corner(browser, "draw_pile", 2)).pointer_down()
    actions.pointer_action.move_by(-20, 0).move_by(-40, 0).pointer_up()
    actions.perform()
    typed = browser.find_element(By.NAME, "zone_field").get_attribute("value")
    assert typed.split()[1:] == ["0.8500,0.3000", "0.8500,0.7000", "0.1200,0.7000"]
    # ...and the keyboard nudges the captures' corner down by 2 x 0.005.
    corner(browser, "captures_A", 0).send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    typed = browser.find_element(By.NAME, "zone_captures_A").get_attribute("value")
    assert typed.split()[0] == "0.0000,0.7300"
    shot(browser, "22-calibration-dragged")
    page.click("#save-zones")
    page.wait.until(lambda d: d.current_url.endswith("saved=saved"))
    assert "The zones are saved" in page.text("#saved-note")

    saved = Zones.load(camera.zone_file)
    default = default_zones(2)
    (x, y), *rest = saved["field"].polygon
    assert x == pytest.approx(0.12 + 100 / stage["width"], abs=0.004)
    assert y == pytest.approx(0.30 + 50 / stage["height"], abs=0.006)
    assert tuple(rest) == default["field"].polygon[1:]
    pile = saved["draw_pile"].polygon
    assert pile[2][0] == pytest.approx(0.99 - 60 / stage["width"], abs=0.004)
    assert pile[2][1] == pytest.approx(0.64, abs=0.002)
    assert saved["captures_A"].polygon[0] == (0.0, 0.73)
    assert saved["captures_A"].polygon[1:] == default["captures_A"].polygon[1:]
    assert camera.zones == saved
    # The page drew the saved layout back.
    moved = corner(browser, "field", 0).rect
    assert abs(moved["x"] + moved["width"] / 2 - (stage["x"] + x * stage["width"])) < 3

    # Back to the default layout.
    page.click("#reset-zones")
    page.wait.until(lambda d: d.current_url.endswith("saved=reset"))
    assert "back to the default layout" in page.text("#saved-note")
    assert Zones.load(camera.zone_file) == default
    assert console_problems(browser) == []


def test_check_this_card_on_the_match_page(camera_server, browser):  # noqa: F811
    base, store, camera = camera_server
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.append(match_id, {"type": "round_started"})
    store.append(
        match_id,
        {"type": "card_captured", "player": "Aki", "card": "03-1", "source": "camera",
         "confidence": 0.4, "check": True, "alternatives": ["03-3"]},
    )
    ok, crop = cv2.imencode(".jpg", np.full((90, 60, 3), 230, np.uint8))
    camera.crops[("Aki", "03-1")] = crop.tobytes()
    page = Page(browser)
    browser.get(f"{base}/matches/{match_id}")
    page.wait.until(lambda d: image_loaded(d, "#checks img.crop"))
    assert "Check this card" in page.text("#checks")
    shot(browser, "23-check-this-card")
    page.change(lambda: page.click("#checks button.check-ok"))
    assert not browser.find_elements(By.ID, "checks")
    assert store.state(match_id).checks == []
    assert store.events(match_id)[-1].event.type == "capture_checked"
    assert "checked, right as read" in page.text(".log")
    assert console_problems(browser) == []


def tight_table_cards() -> list[dict]:
    """A table as the camera reads it mid-round: an 8-card field, a fanned row of 8 captures
    along each player's edge (each card half covering the one before), 2 face-down cards."""
    from companion.game.cards import ALL_CODES

    def quad(x, y, w=0.05, h=0.14):
        return [[x, y], [x + w, y], [x + w, y + h], [x, y + h]]

    codes = iter(ALL_CODES)
    cards = []
    for y in (0.36, 0.52):
        for col in range(4):
            cards.append({"code": next(codes), "quad": quad(0.32 + 0.09 * col, y), "confidence": 0.95})
    for y in (0.04, 0.82):
        for k in range(8):
            cards.append({"code": next(codes), "quad": quad(0.2 + 0.025 * k, y), "confidence": 0.6 + 0.05 * k})
    for k in range(2):
        cards.append({"code": "back", "quad": quad(0.88 + 0.004 * k, 0.43), "confidence": 0.99})
    return cards


class NamingCamera(TableCamera):
    def cards_in_view(self):
        return {"frame": self.frames, "cards": tight_table_cards()}


def rectangles_apart(rects) -> bool:
    return all(
        a["right"] <= b["left"] or b["right"] <= a["left"] or a["bottom"] <= b["top"] or b["bottom"] <= a["top"]
        for i, a in enumerate(rects)
        for b in rects[i + 1 :]
    )


def test_the_live_view_names_each_card_in_the_pages_language(tmp_path, browser, serve_app):  # noqa: F811
    from companion.game.cards import STANDARD_DECK

    store = MatchStore.open(tmp_path / "browser.db")
    camera = NamingCamera(tmp_path / "zones.toml")
    base = serve_app(create_app(store, live=camera)).base_url
    page = Page(browser)
    browser.get(f"{base}/live?lang=fr")
    page.wait.until(lambda d: image_loaded(d, "#live-frame"))
    cards = tight_table_cards()
    page.wait.until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#frame-labels .tag.card")) == len(cards)
    )
    tags = browser.execute_script(
        "return Array.from(document.querySelectorAll('#frame-labels .tag')).map(function (t) {"
        " var r = t.getBoundingClientRect();"
        " return {text: t.textContent, zone: !!t.dataset.zone, left: r.left, right: r.right,"
        " top: r.top, bottom: r.bottom}; });"
    )
    names = sorted(t["text"] for t in tags if not t["zone"])
    expected = sorted(
        "Face cachée" if c["code"] == "back" else STANDARD_DECK.card(c["code"]).names["fr"]
        for c in cards
    )
    assert names == expected  # every card by its French name: no codes, no confidences
    assert not any(re.search(r"\d\d-\d|0\.\d", t["text"]) for t in tags)
    zones = sorted(t["text"] for t in tags if t["zone"])
    assert zones == ["Pioche", "Prises A", "Prises B", "Tapis"]
    assert rectangles_apart(tags)  # no name covers another
    frame = browser.find_element(By.ID, "live-frame").rect
    for tag in tags:  # all of them over the picture
        assert frame["x"] - 1 <= tag["left"] and tag["right"] <= frame["x"] + frame["width"] + 1
    shot(browser, "23-live-view-named-fr")
    assert console_problems(browser) == []


def test_the_calibration_save_button_shows_without_scrolling_at_1024x768(camera_server, browser):  # noqa: F811
    base, store, camera = camera_server
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1024, "height": 768, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        page = Page(browser)
        browser.get(f"{base}/calibrate?lang=fr")
        page.wait.until(lambda d: image_loaded(d, "#calib-frame"))
        assert browser.execute_script("return [innerWidth, innerHeight, scrollY]") == [1024, 768, 0]
        inside = browser.execute_script(
            "var r = document.getElementById('save-zones').getBoundingClientRect();"
            "return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;"
        )
        shot(browser, "24-calibration-1024x768")
        assert inside
        # Every corner handle is on screen too: the picture fits above the button.
        handles = browser.execute_script(
            "return Array.from(document.querySelectorAll('.handle')).every(function (h) {"
            " var r = h.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; });"
        )
        assert handles
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_the_match_page_says_which_camera_sends_nothing_after_five_seconds(tmp_path, browser, serve_app):  # noqa: F811
    """A real LiveSession on a camera that never opens, its clock in the test's hands: the
    match page's camera link says "connecting", then names the camera and what to check."""
    from companion.detections import Detections
    from companion.live.session import NO_PICTURE_AFTER, LiveSession
    from companion.live.sources import LiveSource

    class Absent:
        def isOpened(self):
            return False

        def release(self):
            pass

    class NoCards:
        def detect(self, image):
            return Detections.empty()

    now = [0.0]
    store = MatchStore.open(tmp_path / "absent.db")
    match_id = store.create_match(["Aki", "Ben"], rules="livret")
    source = LiveSource(0, opener=lambda target: Absent(), clock=lambda: now[0])
    session = LiveSession(source, NoCards(), store, clock=lambda: now[0], log=lambda line: None)
    session.step()
    base = serve_app(create_app(store, live=session)).base_url
    page = Page(browser)
    browser.get(f"{base}/matches/{match_id}")
    alert = (By.CSS_SELECTOR, "#camera-link .cam-alert")
    page.wait.until(lambda d: "Connecting" in d.find_element(*alert).text)
    now[0] += NO_PICTURE_AFTER
    session.step()
    page.wait.until(lambda d: "No picture from camera 0" in d.find_element(*alert).text)
    assert browser.find_element(*alert).is_displayed()
    assert "plugged in" in browser.find_element(*alert).text
    shot(browser, "23-camera-absent")
