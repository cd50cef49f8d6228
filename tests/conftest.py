"""Shared by every test: a bug in a command is a traceback that fails the test, not the
command line's last-resort sentence (``companion.cli.CompanionGroup.invoke``)."""

import os

os.environ["COMPANION_TRACEBACK"] = "1"
