"""The match summary: the round ledger and final outcome, as text, printable HTML or PDF.

``build_summary(state, info)`` turns the engine's replay into a ``MatchSummary`` (plain
values, no engine objects; its sentences are the engine's Messages, text whose English the
CLI and the JSON print and which the page says in its own language); the renderers only
format that. The HTML (``companion/web/templates/
summary.html`` with ``companion/web/static/summary.css`` inlined, so a saved file stands alone) is also
what the tablet's summary page serves. PDF: headless Chromium's print of that HTML when
``/usr/bin/chromium`` (or another chromium) exists, else a small built-in PDF writer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from companion import CompanionError
from companion.game.cards import Deck, card_name_in
from companion.game.messages import Listing, Message
from companion.messages import say
from companion.summaries import printable
from companion.summaries.printable import PLAYER_COLOURS

TEMPLATE_NAME = "summary.html"
FORMATS = ("text", "html", "pdf", "json")
CORRECTION_TYPES = ("capture_corrected", "capture_removed", "undo")


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class YakuLine:
    name: str
    points: int


@dataclass(frozen=True)
class MultiplierLine:
    factor: int
    reason: str

    @property
    def text(self) -> str:
        return f"×{self.factor} {self.reason}".strip()


@dataclass(frozen=True)
class RoundLine:
    """One row of the ledger."""

    number: int
    winner: str | None  # None: a draw
    yaku: list[YakuLine]
    base: int
    multipliers: list[MultiplierLine]
    points: dict[str, int]  # what each player gained (negative: lost) this round
    running: dict[str, int]  # totals after this round
    reason: str = ""

    @property
    def multiplier(self) -> int:
        product = 1
        for m in self.multipliers:
            product *= m.factor
        return product


@dataclass(frozen=True)
class MatchSummary:
    match_id: int | None
    title: str
    players: list[str]
    rules: str
    rounds_planned: int
    created_at: str
    rounds: list[RoundLine]
    totals: dict[str, int]
    finished: bool
    winner: str | None  # None while unfinished, or a tie
    outcome: str  # one sentence: who won, or where the match stands
    corrections: int
    events: int = 0
    warnings: list[str] = field(default_factory=list)
    teams: dict[str, list[str]] | None = None  # team name -> members, when playing in teams
    # the names of the deck the match was played with (``cards.Deck.names_data``) where it is
    # not the standard one (a deck the camera was taught): cards are named after it
    deck: dict | None = None

    def card_namer(self, lang: str = "en"):
        """code -> "its name in ``lang`` (code)" by the match's deck, or None (codes alone)."""
        if self.deck is None:
            return None
        deck = Deck.from_names_data(self.deck)

        def name_card(code: str) -> str:
            try:
                return f"{card_name_in(deck.card(code), lang)} ({code})"
            except CompanionError:
                return code

        return name_card

    def said(self, value, lang: str = "en") -> str:
        """An engine's sentence of this summary in English words (the CLI's and the built-in
        PDF's), its cards named by the match's deck."""
        return say(value, lang=lang, name_card=self.card_namer(lang))

    @property
    def teams_line(self) -> str:
        """'Teams: A & B (Aki, Chie); ...', or '' when nobody plays in teams."""
        if not self.teams:
            return ""
        return "Teams: " + "; ".join(f"{t} ({', '.join(m)})" for t, m in self.teams.items())

    @property
    def rounds_played(self) -> int:
        return len(self.rounds)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["rounds_played"] = self.rounds_played
        if self.deck is None:
            data.pop("deck")
        else:  # which deck, not its 48 cards' names
            data["deck"] = {"name": self.deck.get("name"), "title": self.deck.get("title")}
        return data


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------


def build_summary(state, info=None, events=None) -> MatchSummary:
    """The summary of a replayed match. ``info``: the store's MatchInfo (id, title, dates);
    ``events``: the stored log, to count corrections (else the state's effective log)."""
    players = [str(p) for p in state.players]
    # A bank (koikoi-japan: 30 each) is where the running totals start.
    bank = getattr(getattr(getattr(state, "rules", None), "match", None), "bank", 0) or 0
    running = {p: bank for p in players}
    rounds = []
    for result in getattr(state, "rounds", []) or []:
        points = {p: int((result.points or {}).get(p, 0)) for p in players}
        for p in players:
            running[p] += points[p]
        rounds.append(
            RoundLine(
                number=int(result.number),
                winner=result.winner,
                yaku=[_yaku_line(y) for y in (result.yaku or [])],
                base=int(result.base or 0),
                multipliers=[_multiplier_line(m) for m in (result.multipliers or [])],
                points=points,
                running=dict(running),
                reason=_said(getattr(result, "reason", "")),
            )
        )
    totals = {p: int(state.totals.get(p, running[p])) for p in players}

    outcome_obj = getattr(state, "outcome", None)
    finished = outcome_obj is not None
    winner = getattr(outcome_obj, "winner", None) if finished else None
    if finished:
        outcome = _outcome_sentence(outcome_obj, winner, totals)
    elif getattr(state, "tie_break", False) and not getattr(state, "round_in_progress", False):
        outcome = Message("progress.tied", n=len(rounds), table=_standing(totals))
    elif getattr(state, "round_in_progress", False):
        outcome = Message("progress.in_round", n=state.round_number, table=_standing(totals))
    else:
        outcome = Message("progress.next_round", n=len(rounds) + 1, table=_standing(totals))

    if events is not None:
        log = [getattr(e, "event", e) for e in events]
    else:
        log = list(getattr(state, "log", []) or [])
    corrections = sum(1 for e in log if getattr(e, "type", None) in CORRECTION_TYPES)

    deck = getattr(state, "shown_deck", None)
    named = getattr(state, "deck_names", None) is not None or getattr(deck, "name", "standard")
    deck_data = deck.names_data() if deck is not None and named != "standard" else None
    rounds_planned = getattr(state, "rounds_planned", None) or getattr(info, "rounds", 0) or 0
    rules = getattr(info, "rules", None) or _rules_name(state)
    created = getattr(info, "created_at", "") or ""
    title = getattr(info, "title", None) or f"{' vs '.join(players)}"
    return MatchSummary(
        match_id=getattr(info, "id", None),
        title=title,
        players=players,
        rules=rules,
        rounds_planned=int(rounds_planned),
        created_at=created,
        rounds=rounds,
        totals=totals,
        finished=finished,
        winner=winner,
        outcome=outcome,
        corrections=corrections,
        events=len(log),
        teams={str(t): [str(m) for m in ms] for t, ms in state.teams.items()}
        if getattr(state, "teams", None)
        else None,
        deck=deck_data,
        # The rounds' own notes (card values not adding up...), not the live table's hints.
        warnings=[
            _said(n) for r in (getattr(state, "rounds", []) or []) for n in getattr(r, "notes", ())
        ],
    )


def _yaku_line(yaku) -> YakuLine:
    if isinstance(yaku, str):
        return YakuLine(yaku, 0)
    if isinstance(yaku, dict):
        return YakuLine(str(yaku.get("name") or yaku.get("id")), int(yaku.get("points", 0)))
    name = getattr(yaku, "name", None) or getattr(yaku, "id", None) or str(yaku)
    return YakuLine(_said(name), int(getattr(yaku, "points", 0) or 0))


def _multiplier_line(mult) -> MultiplierLine:
    if isinstance(mult, dict):
        return MultiplierLine(int(mult.get("factor", 1)), str(mult.get("reason", "")))
    if isinstance(mult, (tuple, list)):
        return MultiplierLine(int(mult[0]), str(mult[1]))
    return MultiplierLine(int(getattr(mult, "factor", 1)), _said(getattr(mult, "reason", "")))


def _rules_name(state) -> str:
    rules = getattr(state, "rules", None)
    return str(getattr(rules, "name", rules) or "")


def _said(text) -> str:
    """An engine's words as they are (a Message, said again by the page in its language),
    anything else as text."""
    return text if isinstance(text, str) else str(text or "")


def _standing(totals: dict[str, int]) -> Listing:
    return Listing(Message("standing.entry", name=p, value=_signed(v)) for p, v in totals.items())


def _outcome_sentence(outcome, winner, totals) -> str:
    reason = getattr(outcome, "reason", None) or getattr(outcome, "text", None)
    if isinstance(reason, Message) and reason.endswith("."):
        return reason.with_capital()
    if reason:
        text = str(reason).rstrip(".")
        return f"{text[0].upper()}{text[1:]}."
    if winner:
        return Message("outcome.wins", winner=winner, table=_standing(totals))
    return Message("outcome.ends_in_tie", table=_standing(totals))


def _signed(value: int) -> str:
    return f"{value:+d}" if value else "0"


# ---------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------


def render_text(summary: MatchSummary) -> str:
    """A plain-text ledger, fit for a terminal or an e-mail."""
    players = summary.players
    width = max([6, *(len(p) for p in players)])
    lines = [
        summary.title,
        f"Rules: {summary.rules} · rounds played: {summary.rounds_played}"
        + (f" of {summary.rounds_planned}" if summary.rounds_planned else "")
        + (f" · started {printable.date_text(summary.created_at)}" if summary.created_at else ""),
        *([summary.teams_line] if summary.teams else []),
        "",
    ]
    header = f"{'Round':>5}  {'Winner':<{width}}  {'Yaku':<34} {'Base':>4}  {'Multipliers':<30}"
    header += "".join(f"  {p:>{width}}" for p in players)
    lines += [header, "-" * len(header)]
    for r in summary.rounds:
        yaku = ", ".join(f"{y.name} {y.points}" for y in r.yaku) or (summary.said(r.reason) or "-")
        mult = "; ".join(m.text for m in r.multipliers) or "-"
        row = f"{r.number:>5}  {(r.winner or 'draw'):<{width}}  {yaku[:34]:<34} {r.base:>4}  {mult[:30]:<30}"
        row += "".join(f"  {r.running[p]:>{width}}" for p in players)
        lines.append(row)
    if not summary.rounds:
        lines.append("(no round finished yet)")
    lines += ["-" * len(header)]
    lines.append("Totals: " + ", ".join(f"{p} {summary.totals[p]}" for p in players))
    lines.append(summary.said(summary.outcome))
    lines.append(f"Corrections made during the match: {summary.corrections}")
    for warning in summary.warnings:
        lines.append(f"Note: {summary.said(warning)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------


def chart_svg(summary: MatchSummary, width: int = 640, height: int = 220) -> str:
    """The running totals over the rounds as an inline SVG line chart (no script)."""
    players = summary.players
    series = {p: [0] + [r.running[p] for r in summary.rounds] for p in players}
    values = [v for s in series.values() for v in s]
    low, high = min(values + [0]), max(values + [1])
    if high == low:
        high = low + 1
    left, right, top, bottom = 40, 12, 12, 28
    steps = max(1, len(summary.rounds))
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(i: int) -> float:
        return left + plot_w * i / steps

    def y(v: float) -> float:
        return top + plot_h * (high - v) / (high - low)

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img"'
        f' xmlns="http://www.w3.org/2000/svg" aria-label="Running totals over the rounds">',
        f'<line class="axis" x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}"/>',
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}"/>',
        f'<text class="tick" x="{left - 6}" y="{y(high) + 4:.1f}" text-anchor="end">{high}</text>',
        f'<text class="tick" x="{left - 6}" y="{y(low) + 4:.1f}" text-anchor="end">{low}</text>',
    ]
    if low < 0 < high:
        parts.append(
            f'<text class="tick" x="{left - 6}" y="{y(0) + 4:.1f}" text-anchor="end">0</text>'
        )
    for i in range(steps + 1):
        parts.append(
            f'<text class="tick" x="{x(i):.1f}" y="{height - 8}" text-anchor="middle">{i}</text>'
        )
    for n, p in enumerate(players):
        colour = PLAYER_COLOURS[n % len(PLAYER_COLOURS)]
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(series[p]))
        parts.append(
            f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2.5"'
            f' points="{points}"><title>{printable.escape(p)}</title></polyline>'
        )
        for i, v in enumerate(series[p]):
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"/>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(summary: MatchSummary, *, back_url: str | None = None, lang: str = "en") -> str:
    """The printable summary page: a standalone HTML document (CSS inlined), A4 print CSS.
    ``back_url``: a link back to the match, shown on screen only (the tablet page); ``lang``:
    the language of its words (en, fr, ja; the sentences in ``summary`` are shown as given)."""
    from markupsafe import Markup

    if not isinstance(summary, MatchSummary):  # another game's summary renders itself
        return summary.render_html(back_url=back_url, lang=lang)
    return printable.render_page(
        TEMPLATE_NAME,
        summary,
        lang=lang,
        back_url=back_url,
        totals=summary.totals,
        chart=Markup(chart_svg(summary)),
        name_card=summary.card_namer(lang),
    )


# ---------------------------------------------------------------------------------------------
# PDF
# ---------------------------------------------------------------------------------------------


def render_pdf(summary: MatchSummary, *, use_chromium: bool = True, timeout: float = 60) -> bytes:
    """The summary as PDF bytes: Chromium's print of the HTML when available, else the
    built-in writer (ledger table and chart, A4)."""
    chromium = printable.find_chromium() if use_chromium else None
    if chromium:
        pdf = printable.chromium_pdf(chromium, render_html(summary), timeout)
        if pdf is not None:
            return pdf
    return builtin_pdf(summary)


def builtin_pdf(summary: MatchSummary) -> bytes:
    """A small, valid A4 PDF of the summary with no dependency: title, ledger, chart."""
    pages = [printable.PdfPage()]
    page = pages[0]
    margin, y = 48.0, 60.0
    page.text(margin, y, summary.title, 18, bold=True)
    y += 20
    subtitle = f"Rules: {summary.rules}   Rounds played: {summary.rounds_played}"
    if summary.rounds_planned:
        subtitle += f" of {summary.rounds_planned}"
    if summary.created_at:
        subtitle += f"   Started {printable.date_text(summary.created_at)}"
    page.text(margin, y, subtitle, 10)
    y += 16
    if summary.teams:
        page.text(margin, y, summary.teams_line, 10)
        y += 16
    page.text(margin, y, summary.said(summary.outcome), 11, bold=True)
    y += 26

    players = summary.players
    columns = [margin + dx for dx in (0, 34, 96, 246, 276)]
    table_right = printable.PdfPage.WIDTH - margin
    step = min(60.0, (table_right - margin - 370) / max(1, len(players)))
    player_x = [margin + 370 + step * i for i in range(len(players))]
    name_chars = max(3, int(step / 5.5))  # Helvetica-Bold 9 pt: about 5.5 pt a character

    def header(page: printable.PdfPage, y: float) -> float:
        for x, label in zip(
            columns, ("Round", "Winner", "Yaku", "Base", "Multipliers"), strict=True
        ):
            page.text(x, y, label, 9, bold=True)
        for x, p in zip(player_x, players, strict=True):
            page.text(x, y, _pdf_clip(p, name_chars), 9, bold=True)
        page.line(margin, y + 5, printable.PdfPage.WIDTH - margin, y + 5)
        return y + 16

    y = header(page, y)
    for r in summary.rounds:
        yaku = [f"{v.name} {v.points}" for v in r.yaku] or [summary.said(r.reason) or "-"]
        mults = [m.text for m in r.multipliers] or ["-"]
        height = 12 * max(len(yaku), len(mults))
        if y + height > printable.PdfPage.HEIGHT - 60:  # keep a row whole on one page
            page = printable.PdfPage()
            pages.append(page)
            y = header(page, 60)
        page.text(columns[0], y, str(r.number), 9)
        page.text(columns[1], y, (r.winner or "draw")[:12], 9)
        for i, text in enumerate(yaku):
            page.text(columns[2], y + 12 * i, _pdf_clip(text, 28), 9)
        page.text(columns[3], y, str(r.base), 9)
        for i, text in enumerate(mults):
            page.text(columns[4], y + 12 * i, _pdf_clip(text, 20), 9)
        for x, p in zip(player_x, players, strict=True):
            page.text(x, y, f"{r.running[p]} ({_signed(r.points[p])})", 9)
        y += height + 4
    if not summary.rounds:
        page.text(margin, y, "No round finished yet.", 9)
        y += 14
    page.line(margin, y - 6, printable.PdfPage.WIDTH - margin, y - 6)
    y += 8
    page.text(
        margin, y, "Totals: " + ", ".join(f"{p} {summary.totals[p]}" for p in players), 11, True
    )
    y += 16
    page.text(margin, y, f"Corrections made during the match: {summary.corrections}", 9)
    y += 36

    # The chart: running totals per player over the rounds.
    chart_h = 180
    if y + chart_h + 30 > printable.PdfPage.HEIGHT - 40:
        page = printable.PdfPage()
        pages.append(page)
        y = 60
    _pdf_chart(page, summary, margin, y, printable.PdfPage.WIDTH - 2 * margin, chart_h)
    return printable.pdf_document([p.content() for p in pages])


def _pdf_clip(text: str, length: int) -> str:
    return text if len(text) <= length else text[: length - 1] + "."


def _pdf_chart(page: printable.PdfPage, summary: MatchSummary, x0, y0, width, height):
    series = {p: [0] + [r.running[p] for r in summary.rounds] for p in summary.players}
    values = [v for s in series.values() for v in s]
    low, high = min(values + [0]), max(values + [1])
    if high == low:
        high = low + 1
    steps = max(1, len(summary.rounds))
    left = x0 + 30

    def px(i):
        return left + (width - 30) * i / steps

    def py(v):
        return y0 + height * (high - v) / (high - low)

    page.text(x0, y0 - 10, "Running totals", 10, bold=True)
    page.line(left, py(0), x0 + width, py(0), 0.5, (0.5, 0.5, 0.5))
    page.line(left, y0, left, y0 + height, 0.5, (0.5, 0.5, 0.5))
    page.text(x0, py(high) + 3, str(high), 8)
    page.text(x0, py(low) + 3, str(low), 8)
    for i in range(steps + 1):
        page.text(px(i) - 2, y0 + height + 12, str(i), 8)
    for n, p in enumerate(summary.players):
        colour = printable.hex_colour(PLAYER_COLOURS[n % len(PLAYER_COLOURS)])
        page.polyline([(px(i), py(v)) for i, v in enumerate(series[p])], 1.8, colour)
        lx = left + 90 * n
        page.line(lx, y0 + height + 26, lx + 16, y0 + height + 26, 2.5, colour)
        page.text(lx + 20, y0 + height + 29, p[:14], 9)


# ---------------------------------------------------------------------------------------------
# One entry point for the CLI
# ---------------------------------------------------------------------------------------------


def render(summary: MatchSummary, fmt: str) -> bytes:
    """The summary in ``fmt`` (text, html, pdf, json) as bytes ready to write."""
    import json

    if not isinstance(summary, MatchSummary):  # another game's summary renders itself
        return summary.render(fmt)
    if fmt == "text":
        return render_text(summary).encode("utf-8")
    if fmt == "html":
        return render_html(summary).encode("utf-8")
    if fmt == "pdf":
        return render_pdf(summary)
    if fmt == "json":
        return (json.dumps(summary.to_dict(), ensure_ascii=False, indent=2) + "\n").encode()
    raise CompanionError(f"Unknown format {fmt!r}: choose one of {', '.join(FORMATS)}.")
