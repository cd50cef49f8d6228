"""Statistics across matches, per player: matches played and won, points, yaku made, Koi-Koi
calls that paid off. Read from the replays of every Hanafuda match in a store (a side in a team
match counts for the team's name); a match whose log cannot be replayed is skipped and counted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from companion import CompanionError
from companion.game import registry


@dataclass
class PlayerStats:
    name: str
    matches: int = 0
    finished: int = 0
    wins: int = 0
    points: int = 0
    rounds_won: int = 0
    yaku: dict[str, int] = field(default_factory=dict)  # yaku name -> times made in a won round
    koi_calls: int = 0  # Koi-Koi calls made
    koi_paid: int = 0  # calls made in rounds the caller went on to win

    @property
    def yaku_made(self) -> int:
        return sum(self.yaku.values())

    def to_dict(self) -> dict:
        return {**asdict(self), "yaku_made": self.yaku_made}


@dataclass(frozen=True)
class Statistics:
    players: list[PlayerStats]
    matches: int
    skipped: int  # matches whose log could not be replayed

    def to_dict(self) -> dict:
        return {
            "matches": self.matches,
            "skipped": self.skipped,
            "players": [p.to_dict() for p in self.players],
        }

    def text(self) -> str:
        if not self.players:
            return "No Hanafuda match yet."
        lines = [
            f"{'Player':<24} {'Matches':>7} {'Wins':>5} {'Points':>7} {'Rounds':>6} "
            f"{'Yaku':>5} {'Koi paid':>9}  Most made"
        ]
        for p in self.players:
            top = max(p.yaku.items(), key=lambda kv: (kv[1], kv[0]), default=None)
            lines.append(
                f"{p.name[:24]:<24} {p.matches:>7} {p.wins:>5} {p.points:>7} {p.rounds_won:>6} "
                f"{p.yaku_made:>5} {f'{p.koi_paid}/{p.koi_calls}':>9}  "
                + (f"{top[0]} ({top[1]})" if top else "")
            )
        if self.skipped:
            lines.append(f"({self.skipped} match(es) could not be read and are left out.)")
        return "\n".join(lines)


def statistics(store) -> Statistics:
    """Every player's figures over every Hanafuda match of ``store``, most points first."""
    table: dict[str, PlayerStats] = {}
    counted = skipped = 0
    for info in store.matches():
        if not registry.game(store.game(info.id)).hanafuda:
            continue
        try:
            state = store.state(info.id)
        except CompanionError:
            skipped += 1
            continue
        counted += 1
        for side in state.players:
            row = table.setdefault(side, PlayerStats(side))
            row.matches += 1
            row.points += state.totals.get(side, 0)
        if state.outcome is not None:
            for side in state.players:
                table[side].finished += 1
            for winner in state.outcome.winners:
                table[winner].wins += 1
        for result in state.rounds:
            for side, calls in (result.koi or {}).items():
                if side in table:
                    table[side].koi_calls += calls
                    if side == result.winner:
                        table[side].koi_paid += calls
            if result.winner in table:
                row = table[result.winner]
                row.rounds_won += 1
                for y in result.yaku:
                    row.yaku[y.name] = row.yaku.get(y.name, 0) + 1
    players = sorted(table.values(), key=lambda p: (-p.wins, -p.points, p.name.casefold()))
    return Statistics(players, counted, skipped)
