"""The engine's sentences (round reasons, multipliers, warnings) in the page's language.

The engine words its results in English for the log, the CLI and the summary; the page reads
those sentences back by their shape and says them again in its own language. A sentence of
another shape (a new rule's) is shown as the engine wrote it."""

from __future__ import annotations

import re

from flask_babel import gettext


def N_(message: str) -> str:  # noqa: N802 - the usual name for "extract me, translate later"
    return message


_NUMBER = r"-?\d+"
HAND_KINDS = {"teshi": N_("Teshi"), "kuttsuki": N_("Kuttsuki"), "dealt_yaku": N_("Dealt yaku")}
# (English shape, msgid): the shape's named groups fill the msgid's placeholders.
SHAPES = [
    (r"(?P<n>\d+) points, 7 or more", N_("%(n)s points, 7 or more")),
    (r"(?P<n>\d+) points, more than 7", N_("%(n)s points, more than 7")),
    (r"(?P<n>\d+) Koi call\(s\) of the scorer", N_("%(n)s Koi call(s) of the scorer")),
    (r"(?P<n>\d+) Koi calls of the scorer", N_("%(n)s Koi call(s) of the scorer")),
    (r"(?P<n>\d+) Koi call\(s\) this round", N_("%(n)s Koi call(s) this round")),
    (r"the opponent called Koi", N_("the opponent called Koi")),
    (r"Entered by hand: a draw", N_("Entered by hand: a draw")),
    (rf"Entered by hand: (?P<points>{_NUMBER}) points", N_("Entered by hand: %(points)s points")),
    (r"(?P<n>\d+) bright\(s\) in the dealt field", N_("%(n)s bright(s) in the dealt field")),
    (
        rf"(?P<side>.+?) stops with (?P<yaku>.+): (?P<points>{_NUMBER}) points",
        N_("%(side)s stops with %(yaku)s: %(points)s points"),
    ),
    (
        rf"(?P<side>.+?) stops after (?P<koi>\d+) Koi with (?P<yaku>.+): "
        rf"(?P<points>{_NUMBER}) points",
        N_("%(side)s stops after %(koi)s Koi with %(yaku)s: %(points)s points"),
    ),
    (
        rf"(?P<side>.+?) declares (?P<kind>\w+) \((?P<what>[^)]*)\): (?P<points>{_NUMBER}) points",
        N_("%(side)s declares %(kind)s (%(what)s): %(points)s points"),
    ),
    (
        rf"Cards ran out: the Oya (?P<oya>.+) scores (?P<points>{_NUMBER}) points",
        N_("Cards ran out: the Oya %(oya)s scores %(points)s points"),
    ),
    (
        rf"Cards ran out and (?P<side>.+?) \(not the Oya\) made the last yaku: (?P<yaku>.+), "
        rf"(?P<points>{_NUMBER}) points",
        N_(
            "Cards ran out and %(side)s (not the Oya) made the last yaku: %(yaku)s, %(points)s points"
        ),
    ),
    (
        r"Cards ran out, a draw: the Oya (?P<oya>.+) made the last yaku",
        N_("Cards ran out, a draw: the Oya %(oya)s made the last yaku"),
    ),
    (r"Cards ran out, a draw: nobody made a yaku", N_("Cards ran out, a draw: nobody made a yaku")),
    (r"Cards ran out, a draw: nothing is scored", N_("Cards ran out, a draw: nothing is scored")),
    (
        r"The dealt field holds 4 cards of one month: deal again \(redeal\)\.",
        N_("The dealt field holds 4 cards of one month: deal again (redeal)."),
    ),
    (
        r"The dealt field holds 4 pairs: deal again \(redeal\)\.",
        N_("The dealt field holds 4 pairs: deal again (redeal)."),
    ),
    (
        r"(?P<player>.+?) holds (?P<n>\d+) card\(s\) of month (?P<month>\d+) \((?P<cards>[^)]*)\): "
        r"captures come in pairs, so one may be misread\.",
        N_(
            "%(player)s holds %(n)s card(s) of month %(month)s (%(cards)s): captures come in "
            "pairs, so one may be misread."
        ),
    ),
]
# The match's outcome, as the engine and the summary word it.
SHAPES += [
    (
        r"(?P<winner>.+?) wins the match: (?P<table>.+)\.",
        N_("%(winner)s wins the match: %(table)s."),
    ),
    (r"Tie between (?P<sides>.+?): (?P<table>.+)\.", N_("Tie between %(sides)s: %(table)s.")),
    (r"The match ends in a tie: (?P<table>.+)\.", N_("The match ends in a tie: %(table)s.")),
    (
        r"Tied after (?P<n>\d+) rounds: one more round decides \((?P<table>.+)\)\.",
        N_("Tied after %(n)s rounds: one more round decides (%(table)s)."),
    ),
    (
        r"In progress: round (?P<n>\d+) is next, (?P<table>.+)\.",
        N_("In progress: round %(n)s is next, %(table)s."),
    ),
    (r"In progress: round (?P<n>\d+), (?P<table>.+)\.", N_("In progress: round %(n)s, %(table)s.")),
]
# Hanamikoji (companion.game.hanamikoji): its log lines and round results.
SHAPES += [
    (
        r"Hanamikoji started: (?P<a>.+) vs (?P<b>.+), (?P<starts>.+) starts round 1",
        N_("Hanamikoji started: %(a)s vs %(b)s, %(starts)s starts round 1"),
    ),
    (
        r"(?P<player>.+): (?P<n>\d+) items? before (?P<geisha>.+)",
        N_("%(player)s: %(n)s item(s) before %(geisha)s"),
    ),
    (r"Round scored \((?P<counts>.+)\)", N_("Round scored (%(counts)s)")),
    (r"Round scored", N_("Round scored")),
    (r"Undo", N_("Undo")),
    (r"(?P<winner>.+) wins with (?P<table>.+)\.", N_("%(winner)s wins with %(table)s.")),
    (
        r"Both meet a condition \((?P<table>.+)\): (?P<winner>.+) has more points "
        r"\((?P<more>\d+) to (?P<less>\d+)\) and wins\.",
        N_(
            "Both meet a condition (%(table)s): %(winner)s has more points "
            "(%(more)s to %(less)s) and wins."
        ),
    ),
    (
        r"No condition met after round (?P<n>\d+): (?P<winner>.+) has more points "
        r"\((?P<more>\d+) to (?P<less>\d+)\) and wins\.",
        N_(
            "No condition met after round %(n)s: %(winner)s has more points "
            "(%(more)s to %(less)s) and wins."
        ),
    ),
    (
        r"No condition met after round (?P<n>\d+) and (?P<points>\d+) points each: a tie\.",
        N_("No condition met after round %(n)s and %(points)s points each: a tie."),
    ),
    (
        r"No condition met after round (?P<n>\d+): round (?P<next>\d+) follows, "
        r"(?P<starts>.+) starts\.",
        N_("No condition met after round %(n)s: round %(next)s follows, %(starts)s starts."),
    ),
]
_COMPILED = [(re.compile(shape), msgid) for shape, msgid in SHAPES]
_TABLE_PARTS = [
    (re.compile(r"(?P<n>-?\d+) rounds won"), N_("%(n)s rounds won")),
    (re.compile(r"(?P<n>-?\d+) points"), N_("%(n)s points")),
    (re.compile(r"(?P<n>\d+) geishas"), N_("%(n)s geishas")),
    (re.compile(r" \((?P<sides>.+) ran out of points\)"), N_(" (%(sides)s ran out of points)")),
]


def _table(text: str) -> str:
    """A standing ("Aki 12 points, Ben 3 points"): its words in the page's language."""
    for shape, msgid in _TABLE_PARTS:
        text = shape.sub(lambda m, msgid=msgid: gettext(msgid, **m.groupdict()), text)
    return text.replace(" and ", gettext(" and "))


def localized_summary(summary):
    """A match summary (companion.summaries.koikoi.MatchSummary) with the engine's sentences in it
    said in the page's language: outcome, round reasons, multipliers, warnings."""
    import dataclasses

    from companion.summaries.koikoi import MatchSummary

    if not isinstance(summary, MatchSummary):
        return summary  # another game's summary: its own words
    rounds = [
        dataclasses.replace(
            r,
            reason=say(r.reason),
            multipliers=[dataclasses.replace(m, reason=say(m.reason)) for m in r.multipliers],
        )
        for r in summary.rounds
    ]
    return dataclasses.replace(
        summary,
        rounds=rounds,
        outcome=say(summary.outcome),
        warnings=[say(w) for w in summary.warnings],
    )


_BASE_SUFFIX = re.compile(r"(?P<rest>.*) \(base (?P<base>\d+) x(?P<mult>\d+)\)")


def say(text) -> str:
    """``text``, an engine sentence, in the page's language (as it is when its shape is new)."""
    text = str(text or "")
    suffix = ""
    found = _BASE_SUFFIX.fullmatch(text)
    if found:
        text = found["rest"]
        suffix = gettext(" (base %(base)s ×%(mult)s)", base=found["base"], mult=found["mult"])
    for shape, msgid in _COMPILED:
        match = shape.fullmatch(text)
        if match:
            fields = match.groupdict()
            if "what" in fields:  # a dealt hand: its kind and description, as the buttons say
                what, _, cards = fields["what"].partition(": ")
                fields["what"] = gettext(what) + (f": {cards}" if cards else "")
                fields["kind"] = gettext(HAND_KINDS.get(fields["kind"], fields["kind"]))
            for key in ("table", "sides"):
                if key in fields:
                    fields[key] = _table(fields[key])
            return gettext(msgid, **fields) + suffix
    if found:
        return f"{text} (base {found['base']} x{found['mult']})"
    return text
