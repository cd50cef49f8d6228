"""Hanafuda Companion's lab: training, fitting and research benchmarks for the card recognizer.

The product (``companion``) never imports this package; the lab builds on the product.
"""
