"""``python -m companion.cli``: the same as the ``companion`` command."""

from companion.cli import main

main()
