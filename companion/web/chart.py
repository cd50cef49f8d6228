"""The ledger chart (inline SVG): each player's running total after each round."""

from __future__ import annotations

CHART_COLOURS = ["#ffb347", "#6ec6ff", "#b39ddb"]


def chart(players, rounds, width=640, height=220, pad=36) -> dict:
    """Polylines of each player's running total after each round (round 0 = start)."""
    running = {p: [0] for p in players}
    for result in rounds:
        for p in players:
            running[p].append(running[p][-1] + result.points.get(p, 0))
    values = [v for series in running.values() for v in series]
    lo, hi = min(values + [0]), max(values + [1])
    if hi == lo:
        hi = lo + 1
    steps = max(len(rounds), 1)

    def x(i):
        return pad + (width - 2 * pad) * i / steps

    def y(v):
        return height - pad - (height - 2 * pad) * (v - lo) / (hi - lo)

    series = []
    for i, p in enumerate(players):
        pts = [(round(x(k), 1), round(y(v), 1)) for k, v in enumerate(running[p])]
        series.append(
            {
                "player": p,
                "colour": CHART_COLOURS[i % len(CHART_COLOURS)],
                "points": " ".join(f"{a},{b}" for a, b in pts),
                "dots": pts,
                "last": running[p][-1],
            }
        )
    return {
        "width": width,
        "height": height,
        "pad": pad,
        "series": series,
        "zero_y": round(y(0), 1),
        "lo": lo,
        "hi": hi,
        "ticks": [(k, round(x(k), 1)) for k in range(0, len(rounds) + 1)],
        "y": lambda v: round(y(v), 1),
    }
