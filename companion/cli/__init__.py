"""The ``companion`` command: a thin click layer over the library.

Every command turns bad input into exit code 2 and one sentence on stderr (``fail``), never a
traceback. Each area keeps its commands in a module of this package, listed once below in
``COMMAND_MODULES`` (its ``COMMANDS`` are added to ``main``); what they share is in ``base``.
The work is done in the library modules, not here.
"""

from __future__ import annotations

from companion.cli import decks, hanamikoji, live, play, simulate, tablet, vision
from companion.cli.base import main

COMMAND_MODULES = (play, vision, decks, hanamikoji, live, simulate, tablet)

for _module in COMMAND_MODULES:
    for _command in _module.COMMANDS:
        main.add_command(_command)

__all__ = ["COMMAND_MODULES", "main"]
