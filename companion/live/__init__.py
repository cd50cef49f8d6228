"""The live pipeline: camera frames -> detections -> stable table state -> engine events.

``sources`` (where frames come from), ``zones`` (where the field, the draw pile and each
player's captures lie), ``tracker`` (which card lies where, steadily), ``capture_decider``
(where a capture is decided), ``pipeline`` (the loop tying them to a match in the store). See
``docs/LIVE.md`` for the contracts between them and the web page.
"""
