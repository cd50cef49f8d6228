"""Score a player's captured cards under a rule set: yaku, multipliers, total.

Pure functions over ``RuleSet`` and ``Card`` lists; the order of captures never matters.
With ``cards_count_once`` the score is that of the best assignment of cards to yaku (each card
in one yaku only; bonus yaku such as the Triade are exempt). The search groups cards that play
exactly the same part in every yaku, so it explores counts per group, not card subsets.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from functools import cache

from companion import CompanionError
from companion.game.cards import Card, Category
from companion.game.messages import Message
from companion.game.rules import KOI_BONUS_ID, RuleSet, YakuSpec, item_matches


class ScoringError(CompanionError):
    """Cards that cannot be scored (e.g. the same card twice)."""


@dataclass(frozen=True)
class YakuScore:
    id: str
    name: str
    points: int
    cards: tuple[Card, ...] = ()

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "points": self.points,
            "cards": [c.code for c in self.cards],
        }


@dataclass(frozen=True)
class YakuReport:
    yaku: list[YakuScore]
    base: int

    def to_dict(self) -> dict:
        return {"yaku": [y.to_dict() for y in self.yaku], "base": self.base}


@dataclass(frozen=True)
class Multiplier:
    factor: int
    reason: Message  # its English is the reason the JSON gives

    def to_dict(self) -> dict:
        return {"factor": self.factor, "reason": self.reason}


@dataclass(frozen=True)
class HandScore:
    yaku: list[YakuScore]
    base: int
    multiplier: int
    multipliers: list[Multiplier]
    total: int
    values: dict = field(default_factory=dict)  # card_values mode: category -> points

    def to_dict(self) -> dict:
        d = {
            "yaku": [y.to_dict() for y in self.yaku],
            "base": self.base,
            "multiplier": self.multiplier,
            "multipliers": [m.to_dict() for m in self.multipliers],
            "total": self.total,
        }
        if self.values:
            d["values"] = dict(self.values)
        return d


# --------------------------------------------------------------------------------------------


def card_value(rules: RuleSet, card: Card) -> int:
    """The card's value in card_values mode (Hana-Awase: 20/10/5/1)."""
    return rules.scoring.card_values[card.category.value]


def _check_cards(rules: RuleSet, cards) -> list[Card]:
    out, seen = [], set()
    for c in cards:
        card = rules.deck.parse(c)  # accepts Card, code or name; uses the rule set's deck
        if card.code in seen:
            raise ScoringError(Message("refusal.card_twice", card=card.code))
        seen.add(card.code)
        out.append(card)
    return sorted(out)


def _check_month(month) -> None:
    if month is not None and (
        isinstance(month, bool) or not isinstance(month, int) or not 1 <= month <= 12
    ):
        raise ScoringError(Message("refusal.month", value=repr(month)))


def _yaku_in_play(rules: RuleSet, cards: list[Card], koi_own: int, month) -> list[YakuSpec]:
    """The rule set's yaku as they stand for this hand: voided ones dropped (the rain man
    cancels the viewings), values after the scorer's Koi calls, the round's month resolved
    (a yaku of the round's month does not exist when the month is unknown)."""
    specs = []
    for y in rules.yaku:
        if (y.voided_by or y.voided_by_select) and y.voided(cards):
            continue
        changes = {}
        if y.points_with_koi and koi_own:
            changes["points"] = y.points_for_koi(koi_own)
        if y.uses_round_month:
            select = y.select.for_month(month) if y.select else None
            extra = y.extra.for_month(month) if y.extra else None
            if (y.select and select is None) or (y.extra and extra is None):
                continue
            changes.update(select=select, extra=extra)
        specs.append(dataclasses.replace(y, **changes) if changes else y)
    return specs


def score_yaku(rules: RuleSet, cards, *, koi_own: int = 0, month: int | None = None) -> YakuReport:
    """The yaku a set of captured cards makes (after families, replacements, count-once).

    ``koi_own`` (the scorer's Koi calls) and ``month`` (the round's month) matter only to
    yaku whose rule says so (``points_with_koi``, ``round_month``)."""
    cards = _check_cards(rules, cards)
    _check_month(month)
    if rules.mode == "card_values":
        return YakuReport([], sum(card_value(rules, c) for c in cards))
    specs = _yaku_in_play(rules, cards, koi_own, month)
    normal = [y for y in specs if not y.exempt_from_count_once]
    bonus = [y for y in specs if y.exempt_from_count_once]
    dual = rules.dual_categories
    if rules.scoring.cards_count_once:
        chosen = _best_assignment(normal, cards, dual)
    else:
        chosen = _cumulative(normal, cards, dual)
    for y in bonus:
        made = _score_alone(y, cards, dual)
        if made:
            chosen.append(made)
    chosen = _only_with_another_yaku(
        specs, normal, cards, dual, chosen, rules.scoring.cards_count_once
    )
    order = {y.id: n for n, y in enumerate(rules.yaku)}
    chosen.sort(key=lambda s: order[s.id])
    return YakuReport(chosen, sum(s.points for s in chosen))


def _only_with_another_yaku(specs, normal, cards, dual, chosen, count_once) -> list[YakuScore]:
    """Drop yaku marked ``needs_another_yaku`` when no other yaku is made.

    With cards_count_once, when the best assignment holds only such yaku, the best assignment
    without them is taken, and they are added back where the cards it leaves make them."""
    limited = {y.id for y in specs if y.needs_another_yaku}
    if not limited or not chosen or any(s.id not in limited for s in chosen):
        return chosen
    if not count_once:  # every yaku the cards make was scored: none but the limited ones
        return []
    base = _best_assignment([y for y in normal if y.id not in limited], cards, dual)
    if not base:
        return []
    left = [c for c in cards if c not in {c for s in base for c in s.cards}]
    for y in normal:
        if y.id in limited and (made := _score_alone(y, left, dual)):
            base.append(made)
            left = [c for c in left if c not in made.cards]
    return base


# The counts a hand is scored with: a round has at most 24 turns between two players (one Koi
# call each at most), and a deck has 5 brights.
MAX_KOI_CALLS = 24
MAX_FIELD_BRIGHTS = 5


def score_hand(
    rules: RuleSet,
    cards,
    *,
    koi_own: int = 0,
    koi_opponent: int = 0,
    field_brights: int = 0,
    month: int | None = None,
) -> HandScore:
    """Yaku, multipliers (combined by product) and total for the player who scores.

    With ``koi = "bonus"`` the scorer's Koi calls add a ``koi_koi`` line to the yaku (its
    points count in ``base``) until the ``koi_bonus`` list runs out, then multiply."""
    for label, n in (
        ("koi_own", koi_own),
        ("koi_opponent", koi_opponent),
        ("field_brights", field_brights),
    ):
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ScoringError(Message("refusal.count_at_least_0", label=label, value=repr(n)))
    if field_brights > MAX_FIELD_BRIGHTS:
        raise ScoringError(
            Message("refusal.field_brights_most", n=field_brights, most=MAX_FIELD_BRIGHTS)
        )
    report = score_yaku(rules, cards, koi_own=koi_own, month=month)
    if rules.mode == "card_values":
        checked = _check_cards(rules, cards)
        values: dict[str, int] = {}
        for category in Category:  # fixed order: bright, animal, ribbon, chaff
            points = sum(card_value(rules, c) for c in checked if c.category is category)
            if points:
                values[category.value] = points
        return HandScore([], report.base, 1, [], report.base, values)

    m = rules.multipliers
    factors: list[Multiplier] = []
    yaku = list(report.yaku)
    base = report.base
    if report.base:
        if m.seven_points == "at_least" and report.base >= 7:
            factors.append(
                Multiplier(m.seven_factor, Message("multiplier.seven_or_more", n=report.base))
            )
        elif m.seven_points == "more_than" and report.base > 7:
            factors.append(
                Multiplier(m.seven_factor, Message("multiplier.more_than_seven", n=report.base))
            )
        if m.koi == "own" and koi_own:
            factors.append(Multiplier(1 + koi_own, Message("multiplier.koi_own", n=koi_own)))
        elif m.koi == "all" and koi_own + koi_opponent:
            factors.append(
                Multiplier(
                    1 + koi_own + koi_opponent,
                    Message("multiplier.koi_all", n=koi_own + koi_opponent),
                )
            )
        elif m.koi == "opponent_double" and koi_opponent:
            factors.append(Multiplier(m.koi_factor, Message("multiplier.opponent_koi")))
        elif m.koi == "bonus" and koi_own:
            steps = m.koi_bonus
            if koi_own <= len(steps):
                if steps[koi_own - 1]:
                    yaku.append(YakuScore(KOI_BONUS_ID, _koi_name(koi_own), steps[koi_own - 1]))
                    base += steps[koi_own - 1]
            else:
                factors.append(
                    Multiplier(
                        koi_own - len(steps) + 1,
                        Message("multiplier.koi_beyond_bonus", n=koi_own),
                    )
                )
        if m.field_brights and field_brights:
            factors.append(
                Multiplier(1 + field_brights, Message("multiplier.field_brights", n=field_brights))
            )
    multiplier = 1
    for f in factors:
        multiplier *= f.factor
    return HandScore(yaku, base, multiplier, factors, base * multiplier)


def _koi_name(calls: int) -> Message:
    return Message("yaku.koi_bonus" if calls > 1 else "yaku.koi_bonus_one", n=calls)


# --------------------------------------------------------------------------------------------
# One yaku on its own


def _matches_select(y: YakuSpec, card: Card, dual) -> bool:
    return y.select is not None and y.select.matches(card, dual)


def _score_alone(y: YakuSpec, cards: list[Card], dual) -> YakuScore | None:
    """The yaku scored with all the given cards available (cumulative rules)."""
    core = _core_cards(y, cards, dual)
    if core is None:
        return None
    extra_sel = y.extra_selector
    extras = [c for c in cards if c not in core and extra_sel and extra_sel.matches(c, dual)]
    if y.kind == "count" and y.extra is None:
        extras = [c for c in cards if c not in core and _matches_select(y, c, dual)]
        if not y.per_extra:
            extras = []
    points = y.points + y.per_extra * len(extras)
    return YakuScore(y.id, y.name, points, tuple(sorted([*core, *extras])))


def _core_cards(y: YakuSpec, cards: list[Card], dual) -> list[Card] | None:
    """Required cards (each item by a distinct card) plus enough cards matching select."""
    used: list[Card] = []
    for item in y.require:
        pick = next(
            (
                c
                for c in cards
                if c not in used
                and item_matches(item, c)
                and (y.kind != "count" or _matches_select(y, c, dual))
            ),
            None,
        )
        if pick is None:
            return None
        used.append(pick)
    need = y.core_size - len(used)
    if need > 0:
        pool = [c for c in cards if c not in used and _matches_select(y, c, dual)]
        if len(pool) < need:
            return None
        used.extend(pool[:need])
    return used


def _cumulative(specs: list[YakuSpec], cards: list[Card], dual) -> list[YakuScore]:
    made = {y.id: s for y in specs if (s := _score_alone(y, cards, dual))}
    for y in specs:
        if y.id in made:
            for r in y.replaces:
                made.pop(r, None)
    best_in_family: dict[str, YakuScore] = {}
    for y in specs:
        s = made.get(y.id)
        if s and y.family:
            if y.family not in best_in_family or s.points > best_in_family[y.family].points:
                best_in_family[y.family] = s
    return [
        s
        for y in specs
        if (s := made.get(y.id)) and (not y.family or best_in_family[y.family] is s)
    ]


# --------------------------------------------------------------------------------------------
# Best assignment (cards_count_once)


def _best_assignment(specs: list[YakuSpec], cards: list[Card], dual) -> list[YakuScore]:
    """The yaku of the best assignment of cards (each card in one yaku at most).

    Yaku that share no card and no family are solved apart (chaff, ribbons, animals/brights).
    Ties go to fewer yaku (Akatan-Aotan over Akatan + Aotan), then to yaku listed first.
    """
    n = len(specs)
    order = {y.id: k for k, y in enumerate(specs)}
    features = []  # per card: the yaku it can take part in
    for c in cards:
        features.append({k for k, y in enumerate(specs) if _can_use(y, c, dual)})
    conflicts = _conflict_tokens(specs)

    # Union-find over yaku: linked by a shared card or a shared conflict token.
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a, b):
        parent[find(a)] = find(b)

    for f in features:
        f = sorted(f)
        for k in f[1:]:
            union(f[0], k)
    for a in range(n):
        for b in range(a + 1, n):
            if conflicts[a] & conflicts[b]:
                union(a, b)
    components: dict[int, list[int]] = {}
    for k in range(n):
        components.setdefault(find(k), []).append(k)

    out: list[YakuScore] = []
    for members in components.values():
        comp_cards = [c for c, f in zip(cards, features, strict=True) if f & set(members)]
        out.extend(_solve_component([specs[k] for k in members], comp_cards, dual, order))
    return out


def _can_use(y: YakuSpec, card: Card, dual) -> bool:
    ex = y.extra_selector
    return (
        any(item_matches(i, card) for i in y.require)
        or _matches_select(y, card, dual)
        or bool(ex and ex.matches(card, dual))
    )


def _conflict_tokens(specs: list[YakuSpec]) -> list[frozenset]:
    """Two yaku sharing a token cannot both score: one family, or a replacer and what it replaces."""
    tokens = []
    for y in specs:
        t = set()
        if y.family:
            t.add(("family", y.family))
        for r in y.replaces:
            t.add(("replaces", y.id, r))
        for other in specs:
            if y.id in other.replaces:
                t.add(("replaces", other.id, y.id))
        tokens.append(frozenset(t))
    return tokens


# How many ways of using the cards the best-assignment search may weigh for one hand. The
# presets need a few thousand at most; a rule file that needs more (a yaku naming all 48
# cards beside a count yaku of any 5, say) would take minutes and gigabytes: it is refused.
SEARCH_BUDGET = 200_000


class ScoringTooCostly(CompanionError):
    """The rule set's yaku leave too many ways to share the cards out to search them all."""


def _too_costly() -> ScoringTooCostly:
    return ScoringTooCostly(
        "The yaku of this rule file leave too many ways to share the cards out "
        f"(over {SEARCH_BUDGET:,} with cards counting once); make its count yaku less general."
    )


def search_cost(rules: RuleSet) -> int:
    """How many ways the search weighs for the worst hand it is tried on (the whole deck),
    or raises ScoringTooCostly past the budget."""
    _SEARCH_WORK[0] = 0
    score_yaku(rules, list(rules.deck))
    return _SEARCH_WORK[0]


_SEARCH_WORK = [0]  # ways weighed since the last search_cost (one counter: a rough bound)


def _solve_component(specs, cards, dual, order) -> list[YakuScore]:
    work = [0]

    def spend(n: int = 1) -> None:
        work[0] += n
        _SEARCH_WORK[0] += n
        if work[0] > SEARCH_BUDGET:
            raise _too_costly()

    # Search order: set yaku first, growing count yaku last, so that the last yaku can simply
    # take every card left (no choice to explore).
    specs = sorted(specs, key=lambda y: (y.kind == "count" and y.per_extra > 0, order[y.id]))
    n_y = len(specs)

    def signature(card: Card) -> tuple:
        sig = []
        for y in specs:
            sig.extend(item_matches(item, card) for item in y.require)
            sig.append(_matches_select(y, card, dual))
            ex = y.extra_selector
            sig.append(bool(ex and ex.matches(card, dual)))
        return tuple(sig)

    groups: dict[tuple, list[Card]] = {}
    for c in cards:
        groups.setdefault(signature(c), []).append(c)
    classes = list(groups.values())
    reps = [g[0] for g in classes]
    n = len(classes)
    tokens = _conflict_tokens(specs)
    usable = [{ci for ci in range(n) if _can_use(y, reps[ci], dual)} for y in specs]
    # Classes some later yaku could use: only for those is taking fewer extras worth exploring.
    later = [set().union(*usable[i + 1 :]) if i + 1 < n_y else set() for i in range(n_y)]
    weight = [2 ** (len(order) - order[y.id]) for y in specs]  # tie-break: rule-file order

    def options(i: int, counts: tuple) -> list[tuple[tuple, int]]:
        """Ways yaku i can use the available cards: (used count per class, points)."""
        y = specs[i]
        results: dict[tuple, int] = {}

        def take_required(k, used):
            if k == len(y.require):
                yield used
                return
            item = y.require[k]
            for ci in range(n):
                if (
                    used[ci] < counts[ci]
                    and item_matches(item, reps[ci])
                    and (y.kind != "count" or _matches_select(y, reps[ci], dual))
                ):
                    nxt = list(used)
                    nxt[ci] += 1
                    yield from take_required(k + 1, tuple(nxt))

        def distribute(need, used, eligible):
            spend()
            if need == 0:
                yield used
                return
            if not eligible:
                return
            ci, rest = eligible[0], eligible[1:]
            room = counts[ci] - used[ci]
            for k in range(min(room, need), -1, -1):
                nxt = list(used)
                nxt[ci] += k
                yield from distribute(need - k, tuple(nxt), rest)

        select_classes = [ci for ci in range(n) if _matches_select(y, reps[ci], dual)]
        extra_sel = y.extra_selector
        extra_classes = [ci for ci in range(n) if extra_sel and extra_sel.matches(reps[ci], dual)]
        for req in set(take_required(0, (0,) * n)):
            need = y.core_size - len(y.require)
            for core in set(distribute(need, req, select_classes)):
                ranges = []
                for ci in extra_classes:
                    room = counts[ci] - core[ci]
                    # Nobody after this yaku wants the class: taking all of it is best.
                    ranges.append(range(room, room + 1) if ci not in later[i] else range(room + 1))
                for ks in itertools.product(*ranges):
                    spend()
                    used = list(core)
                    for ci, k in zip(extra_classes, ks, strict=True):
                        used[ci] += k
                    used = tuple(used)
                    pts = y.points + y.per_extra * (sum(used) - sum(core))
                    if results.get(used, -1) < pts:
                        results[used] = pts
        ranked = sorted(results.items(), key=lambda kv: -kv[1])
        if not later[i] & usable[i]:
            ranked = ranked[:1]  # no later yaku competes for these cards
        return ranked

    @cache
    def best(i: int, counts: tuple, blocked: frozenset):
        """(key, picks): key = (points, -number of yaku, file-order weight)."""
        if i == n_y:
            return (0, 0, 0), ()
        top = None
        if not tokens[i] & blocked:
            for used, y_pts in options(i, counts):
                rest = tuple(c - u for c, u in zip(counts, used, strict=True))
                (r_pts, r_neg, r_w), r_picks = best(i + 1, rest, blocked | tokens[i])
                cand = ((r_pts + y_pts, r_neg - 1, r_w + weight[i]), ((i, used, y_pts), *r_picks))
                if top is None or cand[0] > top[0]:
                    top = cand
        skip = best(i + 1, counts, blocked)
        if top is None or skip[0] > top[0]:
            top = skip
        return top

    _, picks = best(0, tuple(len(g) for g in classes), frozenset())
    pools = [list(g) for g in classes]
    out = []
    for i, used, pts in picks:
        taken = []
        for ci, k in enumerate(used):
            taken.extend(pools[ci][:k])
            del pools[ci][:k]
        out.append(YakuScore(specs[i].id, specs[i].name, pts, tuple(sorted(taken))))
    return out
