"""The tablet page in headless Chromium (selenium + Debian's chromium-driver), against a live
server on 127.0.0.1. Screenshots go to artifacts/screenshots/ (ignored by git)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if not (CHROMIUM and CHROMEDRIVER):
    pytest.skip("chromium or chromedriver is missing", allow_module_level=True)

from selenium.common.exceptions import (  # noqa: E402
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from companion.store import MatchStore  # noqa: E402
from companion.web import create_app  # noqa: E402


@pytest.fixture
def live(tmp_path, serve_app):
    """The app served on 127.0.0.1 over a database file; yields (base_url, store)."""
    store = MatchStore.open(tmp_path / "browser.db")
    return serve_app(create_app(store)).base_url, store


@pytest.fixture
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="companion-chromium-")
    for flag in [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,1500",
        f"--user-data-dir={profile}",
    ]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def shot(driver, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


class Page:
    def __init__(self, driver):
        self.d = driver
        self.wait = WebDriverWait(driver, 10)

    def seq(self) -> int:
        try:
            return int(self.d.find_element(By.ID, "board").get_attribute("data-seq"))
        except (StaleElementReferenceException, NoSuchElementException):
            return -1  # the board is being swapped

    def _click(self, locator) -> None:
        # The board can be swapped between finding a button and clicking it: find it again.
        for _ in range(5):
            try:
                self.wait.until(EC.element_to_be_clickable(locator)).click()
                return
            except StaleElementReferenceException:
                continue  # found again: the wait gives the new board's button once it is there
        raise AssertionError(f"{locator} kept going stale")

    def click(self, css: str) -> None:
        self._click((By.CSS_SELECTOR, css))

    def click_text(self, text: str) -> None:
        xpath = f"//button[normalize-space()='{text}'] | //a[normalize-space()='{text}']"
        self._click((By.XPATH, xpath))

    def change(self, action) -> None:
        """Do something that records one event, and wait for the board to show it."""
        before = self.seq()
        action()
        self.wait.until(lambda d: self.seq() > before)

    def pick(self, player: str, *codes: str) -> None:
        """Open the picker, choose the cards (one tap each), record them with one tap."""
        self.click_text(f"+ Card for {player}")
        self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#modal .picker")))
        for code in codes:
            self.click(f'#modal button.tile-btn[data-code="{code}"]')
        self.change(lambda: self.click("#modal button.record"))
        self.wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#modal .picker"))

    def text(self, css: str = "#board") -> str:
        # A live update can swap the board between finding it and reading it: read it again.
        for _ in range(5):
            try:
                return self.d.find_element(By.CSS_SELECTOR, css).text
            except StaleElementReferenceException:
                continue
        raise AssertionError(f"{css} kept going stale")


def test_a_match_on_the_tablet(live, browser):
    base, store = live
    page = Page(browser)

    # New match: two players, 6 rounds, livret preset with an option toggled.
    browser.get(base + "/")
    browser.find_element(By.NAME, "player_1").send_keys("Aki")
    browser.find_element(By.NAME, "player_2").send_keys("Ben")
    browser.find_element(By.CSS_SELECTOR, 'input[name="rounds"][value="6"]').click()
    browser.find_element(By.CSS_SELECTOR, 'label.toggle:has(input[name="opt_triade"])').click()
    shot(browser, "01-new-match")
    page.click_text("Start the match")
    page.wait.until(EC.presence_of_element_located((By.ID, "board")))
    match_id = int(browser.current_url.rstrip("/").rsplit("/", 1)[1])
    assert store.get_match(match_id).options["triade"] is True

    page.change(lambda: page.click_text("Deal round 1"))

    # Captures from the 48-card picker; Ben's card is misread, then corrected in two taps.
    page.pick("Aki", "08-1")
    page.pick("Ben", "03-1")
    page.click('#board a.tile-link .tile[data-code="03-1"]')
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#modal .picker")))
    shot(browser, "02-correct-picker")
    page.change(lambda: page.click('#modal button.tile-btn[data-code="03-3"]'))
    assert [c.code for c in store.state(match_id).captures["Ben"]] == ["03-3"]
    assert "corrected to" in page.text(".log")

    # Moon + sake cup: the Koi-Koi prompt, answered, undone, answered again.
    page.pick("Aki", "09-1")
    prompt = page.text("#prompt")
    assert "Koi-Koi or Stop?" in prompt and "Aki" in prompt
    shot(browser, "03-koi-prompt")
    page.change(lambda: page.click_text("Koi-Koi!"))
    assert store.state(match_id).koi["Aki"] == 1 and not browser.find_elements(By.ID, "prompt")
    page.change(lambda: page.click_text("↶ Undo last"))
    assert browser.find_elements(By.ID, "prompt") and store.state(match_id).koi.get("Aki", 0) == 0
    page.change(lambda: page.click_text("Koi-Koi!"))

    # A second yaku (Aotan), then Stop: the round is won and the ledger shows it.
    for code in ["06-2", "09-2", "10-2"]:
        page.pick("Aki", code)
    page.change(lambda: page.click_text("Stop"))
    board = page.text()
    assert "Round 1 won by Aki" in board and "Deal round 2" in board
    state = store.state(match_id)
    assert state.rounds[0].winner == "Aki" and state.totals["Aki"] > 0
    assert str(state.totals["Aki"]) in page.text(".ledger")
    shot(browser, "04-round-won")

    # The printable summary; its Print button runs (the CSP allows exactly that handler).
    browser.get(f"{base}/matches/{match_id}/summary")
    assert "Aki" in browser.find_element(By.TAG_NAME, "body").text
    shot(browser, "05-summary")
    browser.execute_script("window.print = function () { document.title = 'printed'; };")
    page.click_text("Print")
    page.wait.until(lambda d: d.title == "printed")
    # Nothing on the way was refused by the Content-Security-Policy or failed in a script.
    problems = [
        e["message"]
        for e in browser.get_log("browser")
        if "Content Security Policy" in e["message"]
        or e["level"] == "SEVERE"
        and "favicon" not in e["message"]
    ]
    assert problems == []


def test_live_tally_follows_another_writer(live, browser):
    base, store = live
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.append(match_id, {"type": "round_started"})
    page = Page(browser)
    browser.get(f"{base}/matches/{match_id}")
    page.wait.until(lambda d: d.execute_script("return !!window.htmx"))
    page.wait.until(lambda d: d.execute_script("return document.body.dataset.liveStream") == "open")
    # The camera loop (another writer) records a capture: the page shows it by itself.
    started = time.monotonic()
    store.append(match_id, {"type": "card_captured", "player": "Ben", "card": "11-1"})
    WebDriverWait(browser, 5, poll_frequency=0.02).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, '#board .tile[data-code="11-1"]')
    )
    assert time.monotonic() - started < 1.5  # 0.5 s promised; headroom for a busy CI box
    shot(browser, "06-live-update")


def test_errors_show_one_sentence_and_stale_pages_reload(live, browser):
    base, store = live
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.append(match_id, {"type": "round_started"})
    page = Page(browser)
    browser.get(f"{base}/matches/{match_id}")
    page.wait.until(lambda d: d.execute_script("return !!window.htmx"))
    page.wait.until(lambda d: d.execute_script("return document.body.dataset.liveStream") == "open")
    page.click_text("+ Card for Aki")
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#modal .picker")))
    # Another tablet takes the crane: the open picker is refreshed and shows it taken.
    store.append(match_id, {"type": "card_captured", "player": "Ben", "card": "01-1"})
    page.wait.until(
        lambda d: d.find_elements(By.CSS_SELECTOR, '#modal button.tile-btn.taken[data-code="01-1"]')
    )
    # A page that missed the news (its form still says seq 2) is refused with 409.
    browser.execute_script(
        "document.querySelectorAll('#modal input[name=expected_seq]')"
        ".forEach(function (i) { i.value = '2'; });"
    )
    page.click('#modal button.tile-btn[data-code="02-1"]')
    page.click("#modal button.record")
    flash = page.wait.until(
        EC.visibility_of_element_located((By.CSS_SELECTOR, "#flash .flash-msg"))
    )
    assert "match changed" in flash.text
    shot(browser, "07-stale-409")
    assert [c.code for c in store.state(match_id).captures["Aki"]] == []


def test_a_team_match_on_the_tablet(live, browser):
    base, store = live
    page = Page(browser)
    browser.get(base + "/")
    page.wait.until(lambda d: d.execute_script("return !!window.htmx"))

    # Ferme Florale, then its teams option: the form grows a 4th seat and says who plays with whom.
    browser.find_element(By.NAME, "player_1").send_keys("Aki")
    Select(browser.find_element(By.NAME, "rules")).select_by_value("ferme-florale")
    page.wait.until(
        lambda d: d.find_elements(
            By.CSS_SELECTOR, 'input[name="options_for"][value="ferme-florale"]'
        )
    )
    assert not browser.find_elements(By.NAME, "player_3")
    page.click('label.toggle:has(input[name="opt_teams"])')
    page.wait.until(lambda d: d.find_elements(By.NAME, "player_4"))
    assert "seats 1 & 3 play against seats 2 & 4" in page.text("#options")
    assert browser.find_element(By.NAME, "player_1").get_attribute("value") == "Aki"  # kept
    for i, name in [(2, "Ben"), (3, "Chie"), (4, "Aki")]:
        browser.find_element(By.NAME, f"player_{i}").send_keys(name)
    browser.find_element(By.NAME, "team_2").send_keys("Les Mauves")

    # Two players with one name: the sentence is shown in the page, nothing is created.
    page.click_text("Start the match")
    flash = page.wait.until(
        EC.visibility_of_element_located((By.CSS_SELECTOR, "#flash .flash-msg"))
    )
    assert "same name" in flash.text and store.matches() == []
    page.click("#flash [data-dismiss]")
    field = browser.find_element(By.NAME, "player_4")
    field.clear()
    field.send_keys("Dan")
    browser.find_element(By.CSS_SELECTOR, 'input[name="rounds"][value="6"]').click()
    shot(browser, "08-new-team-match")
    page.click_text("Start the match")
    page.wait.until(EC.presence_of_element_located((By.ID, "board")))
    match_id = int(browser.current_url.rstrip("/").rsplit("/", 1)[1])
    assert store.get_match(match_id).players == ["Aki & Chie", "Les Mauves"]

    # Members record their own captures; the cards land on their team.
    page.change(lambda: page.click_text("Deal round 1"))
    page.pick("Chie", "08-1")
    page.pick("Dan", "03-1")
    page.pick("Ben", "01-1")
    state = store.state(match_id)
    assert [c.code for c in state.captures["Aki & Chie"]] == ["08-1"]
    assert sorted(c.code for c in state.captures["Les Mauves"]) == ["01-1", "03-1"]
    mauves = browser.find_elements(By.CSS_SELECTOR, "#board article.player.team")[1]
    assert "Les Mauves" in mauves.text and "Ben · Dan" in mauves.text
    assert mauves.find_elements(By.CSS_SELECTOR, '.tile[data-code="03-1"]')
    assert "Dan captured" in page.text(".log")
    shot(browser, "09-team-board")


def test_a_turns_pair_is_one_action_in_the_picker(live, browser):
    base, store = live
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Ben")
    page = Page(browser)
    browser.get(f"{base}/matches/{match_id}")
    # The Oya chosen with the match is shown and not asked again before round 1.
    assert "Ben" in page.text(".status") and "None" not in page.text(".status")
    assert not browser.find_elements(By.CSS_SELECTOR, "#board select[name=oya]")
    page.change(lambda: page.click_text("Deal round 1"))
    page.click_text("+ Card for Aki")
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#modal .picker")))
    page.click('#modal button.tile-btn[data-code="03-1"]')
    page.click('#modal button.tile-btn[data-code="03-4"]')
    page.click('#modal button.tile-btn[data-code="03-4"]')  # a second tap lets it go
    page.click('#modal button.tile-btn[data-code="03-3"]')
    assert page.text("#modal button.record") == "Record 2 cards"
    before = store.last_seq(match_id)
    page.change(lambda: page.click("#modal button.record"))
    after = store.events(match_id)[before:]
    assert [(s.event.type, s.event.card) for s in after] == [
        ("card_captured", "03-1"),
        ("card_captured", "03-3"),
    ]
    shot(browser, "pair-in-one-action")


def test_two_sides_turns_the_far_players_half(live, browser):
    base, store = live
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    page = Page(browser)
    browser.get(f"{base}/matches/{match_id}")
    page.wait.until(lambda d: d.execute_script("return !!window.htmx"))
    first = '#board .players .player:first-child'
    transform = "return getComputedStyle(document.querySelector(arguments[0])).transform"
    assert browser.execute_script(transform, first) == "none"
    page.click("[data-two-sides]")
    assert "two-sided" in browser.find_element(By.TAG_NAME, "body").get_attribute("class")
    turned = browser.execute_script(transform, first)
    assert turned.startswith("matrix(-1")  # rotated by 180 degrees
    assert browser.execute_script(transform, '#board .players .player:last-child') == "none"
    browser.get(f"{base}/matches/{match_id}")  # kept for this browser
    page.wait.until(lambda d: "two-sided" in d.find_element(By.TAG_NAME, "body").get_attribute("class"))
    shot(browser, "two-sides")


def test_import_an_exported_match_from_the_page(live, browser, tmp_path):
    import json

    base, store = live
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    store.append(match_id, {"type": "round_started"})
    store.append(match_id, {"type": "card_captured", "player": "Aki", "card": "08-1"})
    exported = store.export_match(match_id)
    upload = tmp_path / "match.json"
    upload.write_text(json.dumps(exported))
    page = Page(browser)
    browser.get(base + "/")
    # The export link of the listed match, behind "Keep…".
    browser.find_element(By.CSS_SELECTOR, ".m-keep summary").click()
    link = browser.find_element(By.LINK_TEXT, "Export (JSON)")
    assert link.get_attribute("href").endswith(f"/matches/{match_id}/export")
    browser.find_element(By.CSS_SELECTOR, "form.import input[type=file]").send_keys(str(upload))
    page.click_text("Import")
    import re

    # Wait for the new match's own page (the list's address must not pass for it).
    opened = re.compile(r"/matches/(\d+)/?$")

    def new_match_page(d):
        found = opened.search(d.current_url)
        return found and int(found.group(1)) != match_id and int(found.group(1))

    new_id = page.wait.until(new_match_page)
    assert store.export_match(new_id) == exported
    assert browser.find_elements(By.CSS_SELECTOR, '#board .tile[data-code="08-1"]')


def test_a_language_switch(live, browser):
    """The switch on every page changes the page's language, and the choice holds for the
    next pages, htmx swaps and the picker's own words included."""
    base, store = live
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    page = Page(browser)
    browser.get(base + "/")
    html = browser.find_element(By.TAG_NAME, "html")
    assert html.get_attribute("lang") == "en" and page.text("main h1").startswith("Matches")

    page.click('.lang-switch a[data-lang="fr"]')
    page.wait.until(lambda d: d.find_element(By.TAG_NAME, "html").get_attribute("lang") == "fr")
    headings = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "main h1")]
    assert "Nouvelle partie" in headings and "New match" not in headings
    shot(browser, "20-index-fr")

    # Another page, reached by a plain link: still French.
    browser.get(f"{base}/matches/{match_id}")
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "fr"
    page.change(lambda: page.click_text("Distribuer la manche 1"))  # an htmx swap, in French
    assert "Tableau des manches" in page.text(".ledger")
    page.click_text("+ Carte pour Aki")
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#modal .picker")))
    page.click('#modal button.tile-btn[data-code="01-1"]')
    assert page.text("#modal .pick-count") == "1 carte choisie"  # the picker script's words
    page.change(lambda: page.click("#modal button.record"))
    assert "Aki a pris Grue et soleil (01-1)" in page.text(".log")

    page.click('.lang-switch a[data-lang="ja"]')
    page.wait.until(lambda d: d.find_element(By.TAG_NAME, "html").get_attribute("lang") == "ja")
    assert "各回の得点表" in page.text(".ledger") and "Tableau des manches" not in page.text()
    assert "Akiが松に鶴 (01-1)を取った" in page.text(".log")
    shot(browser, "21-match-ja")

    page.click('.lang-switch a[data-lang="en"]')
    page.wait.until(lambda d: d.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en")
    assert "Round ledger" in page.text(".ledger")
    assert "Aki captured Crane and Sun (01-1)" in page.text(".log")


# What a canvas says the digits' ink measures, in the element's own computed font.
DIGIT_HEIGHT = """
var el = arguments[0], style = getComputedStyle(el);
var ctx = document.createElement("canvas").getContext("2d");
ctx.font = style.fontWeight + " " + style.fontSize + " " + style.fontFamily;
var m = ctx.measureText(el.textContent.trim());
return m.actualBoundingBoxAscent + m.actualBoundingBoxDescent;
"""


def on_screen(driver, element) -> bool:
    return driver.execute_script(
        "var r = arguments[0].getBoundingClientRect();"
        "return r.width > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight"
        " && r.right <= innerWidth;",
        element,
    )


def test_the_totals_read_from_across_the_table(live, browser):
    """On a 1024x768 landscape tablet the two match totals are at least 72 px high, and the
    Koi/Stop prompt with both its buttons shows below them without scrolling."""
    base, store = live
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=12, oya="Aki")
    store.append(match_id, {"type": "round_started"})
    for card in ("01-1", "03-1", "08-1"):
        store.append(match_id, {"type": "card_captured", "player": "Aki", "card": card})
    store.append(match_id, {"type": "stop_called", "player": "Aki"})
    store.append(match_id, {"type": "round_started"})
    for card in ("01-1", "03-1", "08-1"):
        store.append(match_id, {"type": "card_captured", "player": "Ben", "card": card})
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1024, "height": 768, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        page = Page(browser)
        browser.get(f"{base}/matches/{match_id}")
        page.wait.until(EC.visibility_of_element_located((By.ID, "prompt")))
        assert browser.execute_script("return [innerWidth, innerHeight]") == [1024, 768]
        totals = browser.find_elements(By.CSS_SELECTOR, "#board .stat.total .v")
        assert [t.text for t in totals] == ["6", "-6"]  # zero-sum livret
        for total in totals:
            assert browser.execute_script(DIGIT_HEIGHT, total) >= 72
            assert on_screen(browser, total)
        for css in ("#prompt h2", "#prompt .btn.koi", "#prompt .btn.stop"):
            assert on_screen(browser, browser.find_element(By.CSS_SELECTOR, css)), css
        shot(browser, "30-totals-1024x768")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_after_a_round_the_board_says_only_what_is_true_now(live, browser):
    base, store = live
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=12, oya="Aki")
    page = Page(browser)
    browser.get(f"{base}/matches/{match_id}")
    page.wait.until(EC.presence_of_element_located((By.ID, "board")))
    status = page.text("#board .status")
    assert "0/12" not in status and "ROUNDS\n12" in status  # nothing dealt yet
    page.change(lambda: page.click_text("Deal round 1"))
    assert "1/12" in page.text("#board .status")
    for card in ("01-1", "03-1", "08-1"):
        store.append(match_id, {"type": "card_captured", "player": "Aki", "card": card})
    page.wait.until(lambda d: "6 this round if Aki stops" in page.text())
    page.change(lambda: page.click("#prompt .btn.stop"))
    board = page.text()
    assert "Round 1 won by Aki" in board
    assert "if Aki stops" not in board and "No yaku yet" not in board
    assert "Deal round 2" in board
