"""Shared by every test: a bug in a command is a traceback that fails the test, not the
command line's last-resort sentence (``companion.cli.base.CompanionGroup.invoke``); the match store,
the app's test client and a Koi-Koi match most tests start from; an app served for real (the
browser tests). Helpers the web tests call are in ``web_support.py``."""

import os

import pytest

os.environ["COMPANION_TRACEBACK"] = "1"


@pytest.fixture
def store():
    """A match store in memory, closed after the test."""
    from companion.store import MatchStore

    st = MatchStore.open(":memory:")
    yield st
    st.close()


@pytest.fixture
def app(store):
    """The tablet app over ``store``, for tests (a test module may build its own ``app``)."""
    from companion.web import create_app

    return create_app(store, testing=True)


@pytest.fixture
def client(app):
    """``app``'s Flask test client (a test module may serve it with a camera instead by
    defining its own ``client``)."""
    return app.test_client()


@pytest.fixture
def match_id(store):
    """A new Koi-Koi match in ``store``: Aki and Ben, livret rules, 6 rounds, Aki is Oya."""
    return store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")


@pytest.fixture
def serve_app():
    """Serves an app for real on a free loopback port: ``serve_app(app)`` starts it and gives
    its ``ServedApp`` (``base_url``, ``port``). After the test each server is stopped, then
    its app's store closed (the server is the store's last user)."""
    from web_support import ServedApp

    running = []

    def start(app, **serve_options):
        served = ServedApp(app, **serve_options)
        running.append((served.__enter__(), app))
        return served

    yield start
    for served, app in reversed(running):
        served.__exit__(None, None, None)
        app.extensions["companion_store"].close()


@pytest.fixture
def browser():
    """A headless Chromium (``browser_support``; the test skips without one)."""
    from browser_support import close_browser, open_browser

    driver = open_browser()
    yield driver
    close_browser(driver)


@pytest.fixture
def live(tmp_path, serve_app):
    """The tablet app served on 127.0.0.1 over a database file; (base_url, store)."""
    from companion.store import MatchStore
    from companion.web import create_app

    store = MatchStore.open(tmp_path / "browser.db")
    return serve_app(create_app(store)).base_url, store
