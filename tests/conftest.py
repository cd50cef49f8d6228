"""Shared by every test: a bug in a command is a traceback that fails the test, not the
command line's last-resort sentence (``companion.cli.CompanionGroup.invoke``); the match store
and the app's test client most tests start from."""

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
def client(store):
    """The tablet app over ``store``, as a Flask test client (a test module may serve it with
    a camera instead by defining its own ``client``)."""
    from companion.web import create_app

    return create_app(store, testing=True).test_client()
