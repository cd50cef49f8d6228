"""The printable summary of a Hanamikoji match: per round the items before each geisha, where
her favour token stands, each player's geishas and points, and the result with its reason.

``build_summary(state, info, events)`` gives a ``HanamikojiSummary`` of plain values;
``companion.summaries.koikoi`` hands it here for text, HTML (``hanamikoji_summary.html``, the same
inlined ``summary.css`` as Koi-Koi), PDF and JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from companion import CompanionError
from companion.game.hanamikoji import GEISHAS, MAX_ROUNDS, SIDES, round_lines
from companion.game.messages import Message
from companion.summaries import printable

TEMPLATE_NAME = "hanamikoji_summary.html"
CORRECTION_TYPES = ("undo",)


@dataclass(frozen=True)
class GeishaLine:
    name: str
    value: int
    items: dict  # name -> items before her this round
    favour: str | None  # name of the player holding her token after the round
    moved: bool


@dataclass(frozen=True)
class RoundLine:
    number: int
    first: str  # name of the player who started the round
    geishas: list[GeishaLine]
    points: dict  # name -> points after the round
    geisha_counts: dict  # name -> geishas won after the round
    reason: str


@dataclass(frozen=True)
class HanamikojiSummary:
    match_id: int | None
    title: str
    players: list[str]
    created_at: str
    rounds: list[RoundLine]
    points: dict  # name -> points now
    geisha_counts: dict
    finished: bool
    winner: str | None
    outcome: str
    corrections: int
    events: int
    text_lines: list[str] = field(default_factory=list)
    game: str = "hanamikoji"
    rules: str = "hanamikoji"
    rounds_planned: int = MAX_ROUNDS

    @property
    def rounds_played(self) -> int:
        return len(self.rounds)

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("text_lines")
        data["rounds_played"] = self.rounds_played
        return data

    # -- renderers ---------------------------------------------------------------------------

    def render_text(self) -> str:
        head = [self.title, f"Hanamikoji · rounds played: {self.rounds_played} of at most 3"]
        if self.created_at:
            head[-1] += f" · started {printable.date_text(self.created_at)}"
        tail = [self.outcome, f"Corrections made during the match: {self.corrections}"]
        return "\n".join([*head, "", *self.text_lines, "", *tail]) + "\n"

    def render_html(self, *, back_url: str | None = None, lang: str = "en") -> str:
        """The printable page (as Koi-Koi's: ``companion.summaries.koikoi.render_html``), its
        words in ``lang`` (en, fr, ja)."""
        return printable.render_page(
            TEMPLATE_NAME, self, lang=lang, back_url=back_url, totals=self.points
        )

    def render_pdf(self, *, use_chromium: bool = True, timeout: float = 60) -> bytes:
        chromium = printable.find_chromium() if use_chromium else None
        if chromium:
            pdf = printable.chromium_pdf(chromium, self.render_html(), timeout)
            if pdf is not None:
                return pdf
        pages = [printable.PdfPage()]
        y = 60.0
        pages[0].text(48, y, self.title, 18, bold=True)
        y += 24
        for line in self.render_text().splitlines()[1:]:
            if y > printable.PdfPage.HEIGHT - 48:
                pages.append(printable.PdfPage())
                y = 60.0
            pages[-1].text(48, y, line, 9)
            y += 12
        return printable.pdf_document([p.content() for p in pages])

    def render(self, fmt: str) -> bytes:
        if fmt == "text":
            return self.render_text().encode("utf-8")
        if fmt == "html":
            return self.render_html().encode("utf-8")
        if fmt == "pdf":
            return self.render_pdf()
        if fmt == "json":
            return (json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n").encode()
        raise CompanionError(f"Unknown format {fmt!r}: choose one of text, html, pdf, json.")


def build_summary(state, info=None, events=None) -> HanamikojiSummary:
    """The summary of a replayed Hanamikoji match (``info``: the store's MatchInfo)."""
    names = state.names
    rounds = []
    for r in state.rounds:
        rounds.append(
            RoundLine(
                number=r.number,
                first=names[r.first],
                geishas=[
                    GeishaLine(
                        g.name,
                        g.value,
                        {names[s]: r.counts.side(s)[i] for s in SIDES},
                        names[r.favours[i]] if r.favours[i] else None,
                        i in r.moved,
                    )
                    for i, g in enumerate(GEISHAS)
                ],
                points={names[s]: r.points[s] for s in SIDES},
                geisha_counts={names[s]: r.geishas[s] for s in SIDES},
                reason=r.reason(names),
            )
        )
    if state.outcome:
        reason = state.outcome.text(names)
        after = {"n": state.decided_after_round}
        if reason.id == "hanamikoji.both_conditions":  # the sentence goes on after a colon
            outcome = Message("hanamikoji.after_round_both", **after, **reason.params)
        else:
            outcome = Message("hanamikoji.after_round", **after, reason=reason)
    else:
        outcome = Message(
            "hanamikoji.in_progress",
            n=state.round_number,
            most=MAX_ROUNDS,
            starts=names[state.first_player],
        )
    log = [getattr(e, "event", e) for e in events] if events is not None else list(state.log)
    text_lines = [line for r in state.rounds for line in round_lines(r, names)]
    if not text_lines:
        text_lines = ["(no round scored yet)"]
    return HanamikojiSummary(
        match_id=getattr(info, "id", None),
        title=getattr(info, "title", None) or " vs ".join(state.players),
        players=list(state.players),
        created_at=getattr(info, "created_at", "") or "",
        rounds=rounds,
        points={names[s]: p for s, p in state.points.items()},
        geisha_counts={names[s]: n for s, n in state.geishas.items()},
        finished=state.finished,
        winner=names[state.winner] if state.winner else None,
        outcome=outcome,
        corrections=sum(1 for e in log if getattr(e, "type", None) in CORRECTION_TYPES),
        events=len(log),
        text_lines=text_lines,
    )
