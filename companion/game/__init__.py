"""The game, pure: cards and decks, rule sets, scoring, the Koi-Koi engine, Hanamikoji and the
events both share. Nothing here imports numpy, OpenCV, Flask or SQLite
(``tests/test_packaging.py`` checks it); the rule sets and deck files ship beside the code."""
