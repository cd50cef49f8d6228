"""Hanafuda Companion: camera-to-score companion for physical Hanafuda games."""

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
