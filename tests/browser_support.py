"""What the browser tests share (selenium + Debian's chromium-driver, headless): importing
this module skips the importing test module when selenium, chromium or chromedriver is
missing; ``open_browser``/``close_browser`` (the ``browser`` fixture of conftest.py), ``Page``
(wait for the board, click, pick cards), ``shot`` (a screenshot under artifacts/screenshots/,
ignored by git)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

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
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def open_browser(extra_flags=()):
    """A headless Chromium (1280x1500) with a profile of its own; its console log is kept.
    ``extra_flags``: more command-line switches (a fake camera, for instance)."""
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
        *extra_flags,
    ]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    driver.companion_profile = profile
    return driver


def close_browser(driver) -> None:
    driver.quit()
    shutil.rmtree(driver.companion_profile, ignore_errors=True)


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
