"""The ``companion`` command: a thin click layer over the library.

Every command turns bad input into exit code 2 and one sentence on stderr (``fail``), never a
traceback. Each area keeps its commands in its own section below; the work is done in the
library modules, not here.
"""

from __future__ import annotations

import functools
import json
import sys

import click

from companion import CompanionError, __version__


def fail(message: str) -> None:
    """Print one sentence to stderr and exit with code 2 (bad input)."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


def friendly_errors(func):
    """Turn CompanionError (and other bad-input errors) into ``fail``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except CompanionError as exc:
            fail(str(exc))

    return wrapper


def echo_json(obj) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="companion")
def main():
    """Hanafuda Companion: follow a physical Hanafuda game from camera to score."""


# ---------------------------------------------------------------------------------------------
# Scoring engine: score, rules
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Card recognizer: detect, eval, bench, render, train
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Match store and tablet page: serve, demo, summary, matches, bench-live
# ---------------------------------------------------------------------------------------------


if __name__ == "__main__":  # pragma: no cover
    main()
