"""Printable match summaries, one module per game (``koikoi``, ``hanamikoji``) and what they
share (``printable``: the HTML environment, the style sheet, the PDF writer)."""
