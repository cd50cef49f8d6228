"""Synthetic tables for testing and training: scenes with their truth (``synth``), lens
distortion (``lens``), close-ups (``closeup``) and whole rounds filmed as video (``rounds``,
``companion simulate``). Cards are drawn from deck images read at run time."""
