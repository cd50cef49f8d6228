"""Hanafuda Companion: camera-to-score companion for physical Hanafuda games."""

import os

# numpy's BLAS splits even a product of a frame's few crops by a deck's references over every
# core and waits for the slowest thread: beside the nets' own threads on a busy machine that
# made a taught deck's look a fifth to a third slower. The product's matrices are small: one
# thread. (It takes effect where numpy is loaded after this; a user's own setting is kept.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"


class CompanionError(ValueError):
    """Bad input from a user: the message is one sentence meant to be shown as it is.

    The game's errors are raised with a ``companion.messages.Message``: ``str(error)``
    is its English sentence (the CLI prints it), and a page says ``error.sentence`` in its own
    language."""

    @property
    def sentence(self):
        """The sentence as it was raised: a Message, or plain text."""
        return self.args[0] if self.args else ""
