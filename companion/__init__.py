"""Hanafuda Companion: camera-to-score companion for physical Hanafuda games."""

__version__ = "0.1.0"


class CompanionError(ValueError):
    """Bad input from a user: the message is one sentence meant to be shown as it is."""
