"""A Hanamikoji round on the tablet in headless Chromium (fixtures of tests/test_browser.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

# Skips this module too when chromium, chromedriver or selenium is missing.
from browser_support import Page, shot  # noqa: E402 - skips this module as it does
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

from companion.game.hanamikoji import GEISHAS, RoundCounts  # noqa: E402


def test_a_hanamikoji_round_on_the_tablet(live, browser):
    base, store = live
    page = Page(browser)
    browser.get(base + "/")
    page.wait.until(lambda d: d.execute_script("return !!window.htmx"))

    # New match: Hanamikoji is one of the choices; its own fields replace the rule options.
    browser.find_element(By.NAME, "player_1").send_keys("Aki")
    Select(browser.find_element(By.NAME, "rules")).select_by_value("hanamikoji")
    page.wait.until(
        lambda d: d.find_elements(By.CSS_SELECTOR, 'input[name="options_for"][value="hanamikoji"]')
    )
    assert browser.find_element(By.NAME, "player_1").get_attribute("value") == "Aki"  # kept
    browser.find_element(By.NAME, "player_2").send_keys("Ben")
    browser.find_element(By.CSS_SELECTOR, 'input[name="first"][value="2"]').click()
    page.click_text("Start the match")
    page.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#board.hk")))
    match_id = int(browser.current_url.rstrip("/").split("/")[-2])
    assert store.get_match(match_id).game == "hanamikoji"
    assert "Ben" in page.text(".hk-side.far .hk-side-head")  # Ben starts round 1
    assert "starts round 1" in page.text(".hk-side.far .hk-side-head")

    # Another tablet records an item: this page shows it by itself (live updates).
    page.wait.until(lambda d: d.execute_script("return document.body.dataset.liveStream") == "open")
    store.append(match_id, {"type": "items_set", "player": "B", "geisha": "ruri", "count": 1})
    page.wait.until(
        lambda d: d.find_elements(
            By.CSS_SELECTOR, '.hk-cell[data-side="B"][data-geisha="ruri"] .hk-count[data-count="1"]'
        )
    )
    store.append(match_id, {"type": "undo"})
    page.wait.until(lambda d: page.seq() == 3)

    def tap(side, geisha, sign):
        css = f'.hk-cell[data-side="{side}"][data-geisha="{geisha}"] button.hk-{sign}'
        page.change(lambda: page.click(css))

    # The items at the round's end, with + (and one − to fix a slip).
    tap("B", "ayane", "plus")
    tap("B", "ayane", "minus")
    counts = RoundCounts.parse("1,1,1,0,2,1,2:0,0,0,3,1,2,2")
    for side in ("A", "B"):
        for g, n in zip(GEISHAS, counts.side(side), strict=True):
            for _ in range(n):
                tap(side, g.id, "plus")
    # Full: no more + for Aki (8 items), none before Yoko (her 3 cards are all out).
    assert not browser.find_element(
        By.CSS_SELECTOR, '.hk-cell[data-side="A"][data-geisha="ruri"] button.hk-plus'
    ).is_enabled()
    assert store.state(match_id).counts == counts
    assert "8/8 items" in page.text(".hk-side.near .hk-side-head")
    shot(browser, "hk-01-round-entered")

    page.change(lambda: page.click("button.hk-score-btn"))
    result = page.text(".hk-result")
    assert "Aki wins after round 1" in result and "Aki wins with 4 geishas." in result
    tokens = browser.find_elements(
        By.CSS_SELECTOR, '.hk-geisha[data-favour="A"] .hk-slot.near .hk-token'
    )
    assert len(tokens) == 4
    shot(browser, "hk-02-result")

    # Undo takes the scoring back; the summary shows the round once scored again.
    page.change(lambda: page.click_text("↶ Undo last"))
    assert store.state(match_id).winner is None and "Score round 1" in page.text()
    page.change(lambda: page.click("button.hk-score-btn"))
    browser.get(f"{base}/matches/{match_id}/summary")
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "After round 1: Aki wins with 4 geishas." in body and "Chiharu" in body
    problems = [
        e["message"]
        for e in browser.get_log("browser")
        if "Content Security Policy" in e["message"]
        or e["level"] == "SEVERE"
        and "favicon" not in e["message"]
    ]
    assert problems == []
