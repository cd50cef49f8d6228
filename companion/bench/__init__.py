"""The measuring wing: how well and how fast the companion does, kept apart from what a player
runs at the table. Nothing in ``recognizer``, ``live``, ``simulator`` or ``web`` imports it;
it imports them (and the simulator's scenes and rounds) to measure them.

- ``evaluation``: ``companion eval``, the recognizer's accuracy on rendered scenes
  (``evaluate``, ``rendered_scenes``, ``match_detections``); ``misses`` draws what it missed;
- ``recognizer_speed``: ``companion bench``, the recognizer timed next to a yardstick net;
- ``replay``: ``companion replay`` and ``companion bench-pipeline``, a filmed table through the
  real pipeline, scored against its truth; ``restart``: the same with restarts;
- ``page``: ``companion bench-page``; ``live_tally``: ``companion bench-live``;
- ``kitchen_photos``: teaching photos from a renderer of their own, and the share of them a
  deck's teaching accepts at the first try (``companion-lab kitchen-photos``).
"""
