"""Replay a recorded table through the real pipeline, and score it against a truth file.

    report = replay_video("table.mp4", detector, truth=load_truth("truth.json"))
    report.rounds_exact, report.rounds_total, report.to_dict()

The match lives in an in-memory store. Koi/Stop answers come from the truth file's
``decisions`` in order, as a tablet's taps would (the next unused answer of that round and
player, tapped no earlier than the simulated player called it); without one (or when it has
none left for that player), a player stops at his first yaku, 3 s after it shows. What the
camera cannot see (a dealt-hand declaration, a redeal) is tapped from the truth's events too.
No correction is ever made, so ``rounds_exact`` counts rounds scored right by the camera
alone. ``bench_pipeline`` times the same loop (frames per second, per-frame times, and the
latency from a card lying steady to its event). The truth format is in docs/LIVE.md.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from companion import CompanionError
from companion.game.engine import IllegalEvent, apply
from companion.live.pipeline import LivePipeline
from companion.live.sources import VideoFileSource
from companion.live.zones import Zones, default_zones
from companion.simulator import synth
from companion.store import MatchStore


class TruthError(CompanionError):
    """A truth file that cannot be used (one sentence)."""


def load_truth(path: str | Path) -> dict:
    path = Path(path)
    try:
        truth = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TruthError(f"Cannot read the truth file {path}: {exc.strerror}.") from None
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested past the parser's depth
        raise TruthError(f"The truth file {path} is not JSON.") from None
    if not isinstance(truth, dict) or not str(truth.get("format", "")).startswith(
        "companion-simulation/"
    ):
        raise TruthError(f"{path} is not a companion-simulation truth file.")
    wrong = _truth_shape_error(truth)
    if wrong:
        raise TruthError(f"The truth file {path} is damaged: {wrong}.")
    return truth


def _truth_shape_error(truth: dict) -> str | None:
    """What in ``truth`` has not the shape docs/LIVE.md gives (the replay reads every part of
    it), or None."""

    def whole(value, allow_none=False) -> bool:
        if value is None:
            return allow_none
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    def listed(key) -> list:
        value = truth.get(key, [])
        return value if isinstance(value, list) else None

    players = truth.get("players", [])
    if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
        return "players is not a list of names"
    if not isinstance(truth.get("rules", ""), str):
        return "rules is not a rule set's name"
    if not isinstance(truth.get("zones", {}), dict | None):
        return "zones is not a zone layout"
    for key in ("events", "decisions", "rounds"):
        if listed(key) is None or not all(isinstance(item, dict) for item in listed(key)):
            return f"{key} is not a list of objects"
    for item in listed("events"):
        if not whole(item.get("frame")) or not isinstance(item.get("event"), dict):
            return "an event lacks its frame number or its event"
        if "steady_frame" in item and not whole(item["steady_frame"]):
            return "an event's steady_frame is not a frame number"
    for item in listed("decisions"):
        if item.get("answer", "stop") not in ("koi", "stop"):
            return "a decision's answer is not koi or stop"
    for item in listed("rounds"):
        if not (
            whole(item.get("round"))
            and whole(item.get("first_frame", 0))
            and whole(item.get("last_frame"), allow_none=True)
        ):
            return "a round lacks its number or has frames that are not frame numbers"
        points, captures = item.get("points", {}), item.get("captures", {})
        if not isinstance(points, dict) or not isinstance(captures, dict):
            return "a round's points or captures are not per player"
        if not all(isinstance(c, list) for c in captures.values()):
            return "a round's captures are not lists of cards"
    return None


@dataclass
class RoundReport:
    round: int
    captures: dict  # player -> codes
    points: dict
    checks: list  # codes flagged for a check
    truth_points: dict | None = None
    truth_captures: dict | None = None

    @property
    def exact(self) -> bool:
        return self.truth_points is not None and self.points == self.truth_points

    def to_dict(self) -> dict:
        data = {
            "round": self.round,
            "captures": self.captures,
            "points": self.points,
            "checks": self.checks,
        }
        if self.truth_points is not None:
            data["truth_points"] = self.truth_points
            data["exact"] = self.exact
        return data


@dataclass
class ReplayReport:
    rounds: list = field(default_factory=list)
    frames: int = 0
    detected_frames: int = 0
    seconds: float = 0.0
    frame_ms: list = field(default_factory=list)
    cycle_ms: list = field(default_factory=list)  # per frame, its decoding included
    cycle_cpu_ms: list = field(default_factory=list)  # the same in CPU time (all threads)
    truth: bool = False
    rounds_total: int = 0
    captures_missed: int = 0
    captures_added: int = 0
    captures_misnamed: int = 0
    flagged_wrong: int = 0
    unflagged_wrong: int = 0
    steady_to_event_frames: list = field(default_factory=list)
    steady_to_event_ms: list = field(default_factory=list)
    # (round, player, code, seconds of video, reason shown on the tablet or None) of captures
    # slower than SLOW_CAPTURE_S; the reason: "check" (it was flagged for a check), or the id
    # of the sentence saying why it waited (``LivePipeline.unread``)
    slow_captures: list = field(default_factory=list)
    unread_shown: list = field(default_factory=list)  # (frame, player, sentence id) of each
    wrong: list = field(default_factory=list)  # (round, player, code, flagged) of wrong captures
    fps_video: float = 10.0
    recognised: int = 0  # recorded captures recognised where they lay (no event)
    restarts: list = field(default_factory=list)  # frames after which a new pipeline took over
    drops: list = field(default_factory=list)  # (frame, seconds) the camera showed nothing
    asked: int = 0  # questions put to the tablet about what the camera did not see
    still_settled: int = 0  # frames a card settled on without the detector's look

    @property
    def rounds_exact(self) -> int:
        return sum(1 for r in self.rounds if r.exact)

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds else 0.0

    def to_dict(self) -> dict:
        data = {
            "rounds": [r.to_dict() for r in self.rounds],
            "frames": self.frames,
            "detected_frames": self.detected_frames,
        }
        if self.truth:
            data.update(
                rounds_exact=self.rounds_exact,
                rounds_total=self.rounds_total,
                captures_missed=self.captures_missed,
                captures_added=self.captures_added,
                captures_misnamed=self.captures_misnamed,
                flagged_wrong=self.flagged_wrong,
                unflagged_wrong=self.unflagged_wrong,
                steady_to_event_frames=self.steady_to_event_frames,
                slow_captures=[
                    {"round": n, "player": p, "card": c, "seconds": round(sec, 1), "reason": why}
                    for n, p, c, sec, why in self.slow_captures
                ],
                slow_captures_unexplained=sum(1 for *_, why in self.slow_captures if not why),
                unread_shown_s=round(len(self.unread_shown) / self.fps_video, 1),
            )
        if self.restarts:
            data.update(restarts=self.restarts, recognised=self.recognised)
        if self.restarts or self.drops:
            data.update(asked=self.asked)
        if self.drops:
            data.update(drops=[list(d) for d in self.drops])
        return data

    def text(self, card_words=None) -> str:
        """The report for a terminal; ``card_words``: code -> how to name a card (a taught
        deck's names: ``cli.live.card_words``), codes alone without it."""
        said = card_words or str
        sep = ", " if card_words else " "  # names have spaces in them
        lines = []
        for r in self.rounds:
            caps = "; ".join(
                f"{p}: {sep.join(said(x) for x in c) or '-'}" for p, c in r.captures.items()
            )
            pts = ", ".join(f"{p} {n:+d}" for p, n in r.points.items())
            line = f"Round {r.round}: {pts}  [{caps}]"
            if r.checks:
                line += f"  check: {sep.join(said(x) for x in r.checks)}"
            if r.truth_points is not None:
                line += "  exact" if r.exact else f"  (truth {r.truth_points})"
            lines.append(line)
        if not self.rounds:
            lines.append("No round was played.")
        if self.truth:
            lines.append(
                f"{self.rounds_exact}/{self.rounds_total} rounds exact; captures missed "
                f"{self.captures_missed}, added {self.captures_added}, misnamed "
                f"{self.captures_misnamed}; wrong captures flagged {self.flagged_wrong}, "
                f"not flagged {self.unflagged_wrong}"
            )
        return "\n".join(lines)


def _match_setup(truth: dict | None, zones: Zones | None = None) -> dict:
    """The replayed match: the truth file's; without one, the layout's seats playing livret,
    or Hana-Awase (the three-player game, seed 004) at a three-seat table."""
    seats = list(zones.players) if zones is not None else ["A", "B"]
    rules = "hana-awase" if len(seats) == 3 else "livret"
    setup = {"players": seats, "rules": rules, "rounds": None, "oya": None}
    if truth:
        setup["players"] = list(truth.get("players") or setup["players"])
        setup["rules"] = truth.get("rules") or "livret"
        for item in truth.get("events", []):
            event = item.get("event", {})
            if event.get("type") == "match_started":
                setup["rounds"] = event.get("rounds")
                setup["oya"] = event.get("oya")
                setup["options"] = event.get("options")
                break
    return setup


def _replayed_match(truth: dict | None, zones: Zones | None, store: MatchStore | None = None):
    """(zones, store, match_id) of a replay: the layout given, else the truth's, else the
    two-seat one; the match of ``_match_setup`` created in ``store`` (in memory by default)."""
    if zones is None:
        zones = Zones.from_dict(truth["zones"]) if truth and truth.get("zones") else None
    zones = zones or default_zones(2)
    setup = _match_setup(truth, zones)
    store = store or MatchStore.open(":memory:")
    match_id = store.create_match(
        players=setup["players"],
        rules=setup["rules"],
        rounds=setup["rounds"],
        oya=setup["oya"],
        options=setup.get("options"),
    )
    return zones, store, match_id


TABLET_TAPS = ("hand_declared", "redeal")  # what the camera cannot see: a player says it


TAPS = ("truth", "none")


class _Answers:
    """The tablet's taps. Koi/Stop: the truth's answers in order, each tapped no earlier than
    the frame the simulated player called it (his turn over); with none left for that player
    (or no truth), stop after ``WAIT`` seconds of a pending decision. Declarations and
    redeals, which the camera cannot see: the truth's events at their frame, tried until the
    match accepts them (for 5 seconds). ``taps="none"``: no tap at all (the camera reads
    Koi, Stop, round ends and deals from the table)."""

    WAIT = 3.0
    # seconds a player takes to answer a question the camera puts to the tablet (it did not
    # see the answer: a gap, a restart); answered as the truth's player did, with taps or none
    ASKED_WAIT = 3.0

    def __init__(self, truth: dict | None, taps: str = "truth"):
        if taps not in TAPS:
            raise CompanionError(f"Taps are 'truth' or 'none', not {taps!r}.")
        self.none = taps == "none"
        self.asked_left = list((truth or {}).get("decisions", []))
        self.asked_since: int | None = None
        self.told = _events_by_round(truth)
        truth = {} if self.none else (truth or {})
        calls = [
            item["frame"]
            for item in truth.get("events", [])
            if item.get("event", {}).get("type") in ("koi_called", "stop_called")
        ]
        decisions = list(truth.get("decisions", []))
        frames = calls if len(calls) == len(decisions) else [0] * len(decisions)
        self.left = [dict(d, frame=f) for d, f in zip(decisions, frames, strict=True)]
        self.pending_since: int | None = None
        self.taps = [
            (item["frame"], item["event"])
            for item in (truth or {}).get("events", [])
            if item.get("event", {}).get("type") in TABLET_TAPS
        ]

    def due_taps(self, frame_index: int) -> list:
        return [(f, e) for f, e in self.taps if f <= frame_index]

    def tapped(self, tap) -> None:
        self.taps.remove(tap)

    def answered(self, round_number: int, player: str) -> None:
        """That decision is in the store: no question about it is answered again."""
        for i, d in enumerate(self.asked_left):
            if (d.get("round"), d.get("player")) == (round_number, player):
                del self.asked_left[i]
                return

    def answer_asked(self, state, frame_index: int, fps: float, question: str | None):
        """The players' answer to the camera's question (``question``: "decision", "round",
        "captures" or None), ``ASKED_WAIT`` after it was put: "koi" or "stop" as the truth's
        player answered (stop when it has none left), "round" (a round whose cards went
        unseen, ended on the tablet as it went: ``round_told``) or "captures" (cards the
        camera could not read, added on the tablet: ``captures_told``); None: not yet."""
        if question is None:
            self.asked_since = None
            return None
        if self.asked_since is None:
            self.asked_since = frame_index
        if frame_index - self.asked_since < self.ASKED_WAIT * fps:
            return None
        self.asked_since = None
        if question in ("round", "captures"):
            return question
        player = state.pending_decision
        for d in self.asked_left:
            if (d.get("round"), d.get("player")) == (state.round_number, player):
                return d.get("answer", "stop")
        return "stop"

    def round_told(self, state) -> list:
        """How the players end on the tablet a round whose cards went while the camera was
        away: the truth's events of that round the match lacks, in their order (the captures
        nobody recorded, the Koi and Stop, the cards running out). Without a truth: the cards
        ran out."""
        events = self.told.get(state.round_number)
        if events is None:
            return [{"type": "cards_ran_out"}]
        held = {c.code for cards in state.captures.values() for c in cards}
        out = []
        for _, event in events:
            kind = event.get("type")
            if kind == "card_captured" and event.get("card") not in held:
                out.append({"type": kind, "player": event["player"], "card": event["card"]})
            elif kind in ("koi_called", "stop_called", "cards_ran_out"):
                out.append({k: v for k, v in event.items() if k in ("type", "player")})
        return out

    def captures_told(self, state, frame_index: int, players) -> list:
        """How the players add on the tablet the captures of ``players`` the camera could
        not read: the truth's captures of this round made by ``frame_index`` that the match
        lacks, in their order."""
        held = {c.code for cards in state.captures.values() for c in cards}
        return [
            {"type": "card_captured", "player": event["player"], "card": event["card"]}
            for frame, event in self.told.get(state.round_number, [])
            if event["type"] == "card_captured"
            and frame <= frame_index
            and event["player"] in players
            and event["card"] not in held
        ]

    def answer(self, state, frame_index: int, fps: float) -> str | None:
        """ "koi", "stop", or None: not yet (the player has not tapped)."""
        if self.none or not (state.pending_decision and state.round_in_progress):
            self.pending_since = None
            return None
        if self.pending_since is None:
            self.pending_since = frame_index
        player = state.pending_decision
        for i, d in enumerate(self.left):
            if d.get("round") == state.round_number and d.get("player") == player:
                if frame_index < d["frame"]:
                    return None
                del self.left[i]
                self.pending_since = None
                return d.get("answer", "stop")
        if frame_index - self.pending_since >= self.WAIT * fps:
            self.pending_since = None
            return "stop"
        return None


def question_of(pipeline, state) -> str | None:
    """What the camera asks the tablet now: "decision" (a Koi/Stop it did not see answered),
    "round" (a round whose cards went while it was away), "captures" (cards lying in a
    player's captures that it could not read back from away), or None."""
    if pipeline is None or state is None or not state.round_in_progress:
        return None
    decider = pipeline.decider
    player = state.pending_decision
    if player is not None and decider.asked(state, player):
        return "decision"
    if decider.moved_on == state.round_number:
        return "round"
    if decider.unread_players(state):
        return "captures"
    return None


def _events_by_round(truth: dict | None) -> dict:
    """Round number -> the truth's events of that round after its deal, as (frame, event) in
    order (captures, Koi, Stop, the cards running out)."""
    out: dict = {}
    number = 0
    for item in (truth or {}).get("events", []):
        event = item.get("event", {})
        if event.get("type") == "round_started":
            number += 1
            out[number] = []
        elif number and event.get("type") in (
            "card_captured", "koi_called", "stop_called", "cards_ran_out"
        ):  # fmt: skip
            out[number].append((int(item.get("frame", 0)), event))
    return out


def answer_as_the_truth_did(
    answers, store, match_id: int, frame_index: int, fps: float, pipeline=None
) -> list:
    """Record the players' taps due by ``frame_index`` (``answers``: the truth's, or none with
    ``--taps none``), and their answers to what the camera (``pipeline``) asks the tablet;
    returns what was appended."""
    appended = []
    for tap in answers.due_taps(frame_index):
        try:
            appended.append(store.append(match_id, tap[1]))
            answers.tapped(tap)
        except IllegalEvent:
            if tap[0] < frame_index - 5 * fps:
                answers.tapped(tap)  # never accepted: the camera missed its round
    state = store.state(match_id)
    while (kind := answers.answer(state, frame_index, fps)) is not None:
        player = state.pending_decision
        event = {"type": "koi_called" if kind == "koi" else "stop_called", "player": player}
        try:
            appended.append(store.append(match_id, event))
        except IllegalEvent:  # the camera read it from the table first
            break
        answers.answered(state.round_number, player)
        state = store.state(match_id)
    kind = answers.answer_asked(state, frame_index, fps, question_of(pipeline, state))
    if kind == "round":
        number = state.round_number
        for event in answers.round_told(state):
            state = store.state(match_id)
            if not state.round_in_progress or state.round_number != number:
                break
            if event["type"] in ("koi_called", "stop_called"):
                if state.pending_decision != event["player"]:
                    continue  # answered already
            elif event["type"] == "cards_ran_out" and state.pending_decision:
                continue
            try:
                appended.append(store.append(match_id, event))
            except IllegalEvent:
                continue
            if event["type"] in ("koi_called", "stop_called"):
                answers.answered(number, event["player"])
    elif kind == "captures":
        players = pipeline.decider.unread_players(state)
        for event in answers.captures_told(state, frame_index, players):
            try:
                appended.append(store.append(match_id, event))
            except IllegalEvent:
                continue
    elif kind is not None:
        player = state.pending_decision
        event = {
            "koi": {"type": "koi_called", "player": player},
            "stop": {"type": "stop_called", "player": player},
        }[kind]
        try:
            appended.append(store.append(match_id, event))
            if player is not None:
                answers.answered(state.round_number, player)
        except IllegalEvent:
            pass
    return appended


def dropped_frames(drops, fps: float) -> set:
    """The frame numbers a camera showed nothing for: each (first frame, seconds) of
    ``drops``."""
    out = set()
    for first, seconds in drops:
        out.update(range(int(first), int(first) + int(round(float(seconds) * fps))))
    return out


def replay_video(
    video: str | Path,
    detector,
    *,
    zones: Zones | None = None,
    truth: dict | None = None,
    limit: int | None = None,
    taps: str = "truth",
    drops=(),
    on_end=None,
    timings: dict | None = None,
) -> ReplayReport:
    """Run the pipeline over every frame of ``video`` (as fast as the machine goes).
    ``taps``: "truth" (Koi/Stop and what the camera cannot see tapped from the truth file) or
    "none" (no tap: the truth only scores); the players answer what the camera asks the
    tablet either way. ``drops``: (frame, seconds) from which the camera showed nothing (a
    stream that dropped out): those frames never reach the pipeline, the taps go on.
    ``on_end(pipeline, store, match_id)`` is called once the video has played.
    ``timings``: a dict that gets, per stage ("decode", and ``LivePipeline.timings``' own),
    the seconds each frame spent there."""
    source = VideoFileSource(video)
    zones, store, match_id = _replayed_match(truth, zones)
    pipeline = LivePipeline(detector, zones, store, match_id)
    answers = _Answers(truth, taps)
    report = ReplayReport(truth=truth is not None, fps_video=source.fps)
    report.drops = sorted((int(f), float(s)) for f, s in drops)
    unseen = dropped_frames(report.drops, source.fps)
    event_ms: dict[int, float] = {}
    if timings is not None:
        pipeline.timings = timings
    start = last = time.perf_counter()
    last_cpu = time.process_time()
    with source:
        for frame in source:
            t0 = time.perf_counter()
            if timings is not None:
                timings.setdefault("decode", []).append(t0 - last)
            appended = [] if frame.index in unseen else pipeline.process(frame)
            if pipeline.unread is not None:
                unread = pipeline.unread
                report.unread_shown.append((frame.index, unread.params["player"], unread.id))
            appended += answer_as_the_truth_did(
                answers, store, match_id, frame.index, source.fps, pipeline
            )
            now = time.perf_counter()
            ms = (now - t0) * 1000
            report.frame_ms.append(ms)
            report.cycle_ms.append((now - last) * 1000)
            cpu = time.process_time()
            report.cycle_cpu_ms.append((cpu - last_cpu) * 1000)
            last, last_cpu = now, cpu
            if appended:
                event_ms[frame.index] = ms
            if limit is not None and frame.index + 1 >= limit:
                break
    report.seconds = time.perf_counter() - start
    if on_end is not None:
        on_end(pipeline, store, match_id)
    report.frames = pipeline.frames
    report.detected_frames = pipeline.detected_frames
    report.still_settled = pipeline.still_settled
    report.recognised = len(pipeline.recognised)
    report.asked = pipeline.asked
    _rounds(report, store, match_id, pipeline)
    if truth:
        _compare(report, truth, pipeline, event_ms)
    return report


def _rounds(report: ReplayReport, store, match_id, pipeline) -> None:
    """Per finished round: the captures as they stood when it ended, its points, its checks."""
    state = None
    for stored in store.events(match_id):
        before = state
        state = apply(state, stored.event)
        if before is not None and len(state.rounds) > len(before.rounds):
            result = state.rounds[-1]
            # a round ended again after an undo (a Stop made again) is reported once
            report.rounds = [r for r in report.rounds if r.round != result.number]
            report.rounds.append(
                RoundReport(
                    round=result.number,
                    captures={p: [c.code for c in cs] for p, cs in before.captures.items()},
                    points=dict(result.points),
                    checks=[c["card"] for c in before.checks],
                )
            )
    if state is not None and state.round_in_progress:  # the video ended mid-round
        report.rounds.append(
            RoundReport(
                round=state.round_number,
                captures={p: [c.code for c in cs] for p, cs in state.captures.items()},
                points={p: 0 for p in state.players},
                checks=[c["card"] for c in state.checks],
            )
        )


def _compare(report: ReplayReport, truth: dict, pipeline, event_ms: dict) -> None:
    truth_rounds = truth.get("rounds", [])
    report.rounds_total = len(truth_rounds)
    ours = {r.round: r for r in report.rounds}
    flagged = {(rec.round, rec.player, rec.card): rec.check for rec in pipeline.captures}
    for tr in truth_rounds:
        number = tr["round"]
        mine = ours.get(number)
        if mine is None:
            mine = RoundReport(number, {}, {}, [])
            report.rounds.append(mine)
        mine.truth_points = dict(tr.get("points", {}))
        mine.truth_captures = {p: list(c) for p, c in tr.get("captures", {}).items()}
        for player, codes in mine.truth_captures.items():
            got = mine.captures.get(player, [])
            missed = [c for c in codes if c not in got]
            added = [c for c in got if c not in codes]
            misnamed = min(len(missed), len(added))
            report.captures_misnamed += misnamed
            report.captures_missed += len(missed) - misnamed
            report.captures_added += len(added) - misnamed
            for code in added:
                was_flagged = bool(flagged.get((number, player, code)))
                report.wrong.append((number, player, code, was_flagged))
                if was_flagged:
                    report.flagged_wrong += 1
                else:
                    report.unflagged_wrong += 1
    report.rounds.sort(key=lambda r: r.round)
    # steady -> event, for the truth's captures the pipeline named right
    first_frames = [
        (tr["round"], tr.get("first_frame", 0), tr.get("last_frame")) for tr in truth_rounds
    ]
    records = {(rec.round, rec.player, rec.card): rec for rec in pipeline.captures}
    for item in truth.get("events", []):
        event = item.get("event", {})
        if event.get("type") != "card_captured" or "steady_frame" not in item:
            continue
        number = next(
            (
                n
                for n, lo, hi in first_frames
                if lo <= item["frame"] and (hi is None or item["frame"] <= hi)
            ),
            None,
        )
        rec = records.get((number, event.get("player"), event.get("card")))
        if rec is None:
            continue
        frames = rec.event_frame - int(item["steady_frame"])
        report.steady_to_event_frames.append(frames)
        ms = frames * 1000.0 / report.fps_video + event_ms.get(rec.event_frame, 0.0)
        report.steady_to_event_ms.append(ms)
        seconds = frames / report.fps_video  # video time: the same however loaded the machine
        if seconds > SLOW_CAPTURE_S:
            player = event.get("player")
            said = (
                sentence
                for frame, said_of, sentence in report.unread_shown
                if said_of == player and item["steady_frame"] <= frame <= rec.event_frame
            )
            why = "check" if rec.check else next(said, None)
            report.slow_captures.append((number, player, event.get("card"), seconds, why))


SLOW_CAPTURE_S = 3.0  # a capture this much later than its card lay still is listed by name


def percentile(values, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


BENCH_DECKS = ("traditional-scan", "traditional-ngs")  # the held-out one where it is present
BENCH_SEED = 4242


def behind_real_time(cycle_ms, fps: float) -> float:
    """The most seconds a pipeline that takes ``cycle_ms`` per frame (decoding included)
    falls behind a camera delivering ``fps`` frames a second, every frame queued: a frame
    arriving at i / fps is done at max(previous done, arrival) + its work."""
    done = lag = 0.0
    for i, ms in enumerate(cycle_ms):
        arrival = i / fps
        done = max(done, arrival) + ms / 1000.0
        lag = max(lag, done - arrival)
    return lag


def behind_newest_first(cycle_ms, fps: float) -> float:
    """The most seconds a pipeline that takes ``cycle_ms`` per frame falls behind a camera
    delivering ``fps`` frames a second when it always takes the newest frame arrived (as a
    live camera is read, ``LiveSource(newest=True)``), the older ones dropped: each frame
    taken costs what it cost in the replay (the frames it skips cost nothing)."""
    done = lag = 0.0
    i, n = 0, len(cycle_ms)
    while i < n:
        arrival = i / fps
        done = max(done, arrival) + cycle_ms[i] / 1000.0
        lag = max(lag, done - arrival)
        i = max(i + 1, int(done * fps))  # the newest frame arrived by then
    return lag


def simulate(
    out_dir: Path,
    *,
    seed: int = BENCH_SEED,
    deck: str | None = None,
    rounds: int = 1,
    turns=8,
    fps: int = 10,
):
    """Render a simulated table with ``companion simulate`` (its command line is the stable
    contract); returns (video path, truth path)."""
    import subprocess
    import sys


    decks = synth.find_shared_dir() / "decks"
    if deck is None:
        deck = next((d for d in BENCH_DECKS if (decks / d).is_dir()), BENCH_DECKS[0])
    deck_path = Path(deck) if Path(deck).is_dir() else decks / deck
    cmd = [
        sys.executable, "-m", "companion.cli", "simulate", "--deck", str(deck_path),
        "--seed", str(seed), "--out", str(out_dir), "--rounds", str(rounds), "--quiet",
        "--fps", str(fps),
    ]  # fmt: skip
    if turns:
        cmd += ["--max-turns", str(turns)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise CompanionError(f"Cannot render a simulated table ({last}).")
    return out_dir / "table.mp4", out_dir / "truth.json"


def bench_pipeline(detector, *, video=None, frames: int = 600, fps: int = 10) -> dict:
    """The whole pipeline's speed on a 1280x720 simulated video (decoding included): frames
    per second, the median milliseconds per frame, the 95th percentile of the time from a
    card lying steady in a capture area to its event (video time plus that frame's work),
    and the most seconds it would fall behind a camera filming at the video's frame rate
    (``behind_s_max``). ``fps``: the frame rate of the video rendered when none is given."""
    import tempfile

    import cv2

    cv2.setNumThreads(2)  # as on a 2-core machine: the recognizer's sessions use 2 threads too
    with tempfile.TemporaryDirectory(prefix="companion-bench-") as tmp:
        if video is None:
            video, truth_path = simulate(Path(tmp), fps=fps)
        else:
            video = Path(video)
            truth_path = video.with_name("truth.json")
        truth = load_truth(truth_path) if Path(truth_path).is_file() else None
        timings: dict[str, list[float]] = {}
        report = replay_video(video, detector, truth=truth, limit=frames, timings=timings)
    p95 = percentile(report.steady_to_event_ms, 95)
    return {
        "video": Path(video).name,
        "frames": report.frames,
        "detected_frames": report.detected_frames,
        "fps": round(report.fps, 2),
        "ms_per_frame_median": round(float(np.median(report.frame_ms)), 2),
        "ms_per_frame_p95": round(float(np.percentile(report.frame_ms, 95)), 2),
        "steady_to_event_ms_p95": None if p95 is None else round(p95, 1),
        "steady_to_event_frames": report.steady_to_event_frames,
        "video_fps": report.fps_video,
        "behind_s_max": round(behind_real_time(report.cycle_ms, report.fps_video), 3),
        # from the CPU time the frames took (every thread counted): what an otherwise idle
        # machine would show at most, when the wall-clock figure is that of a shared one
        "behind_s_max_cpu": round(behind_real_time(report.cycle_cpu_ms, report.fps_video), 3),
        # the same, the newest frame taken each time (a live camera, a stream): the older ones
        # are dropped rather than queued, so the lag stays that of one frame's work
        "behind_s_max_newest": round(behind_newest_first(report.cycle_ms, report.fps_video), 3),
        # frames on which a card settled with nothing moved over it since the last look: its
        # capture decided without waiting for the detector (``LivePipeline._settle_still``)
        "still_settled": report.still_settled,
        "looks_per_s": round(report.detected_frames * report.fps_video / max(report.frames, 1), 2),
        # where a frame's time goes: per stage, over the frames that went through it (the
        # detector and what follows it: the looks only), milliseconds
        "stage_ms": {
            stage: {
                "median": round(float(np.median(seconds)) * 1000, 2),
                "p95": round(float(np.percentile(seconds, 95)) * 1000, 2),
                "frames": len(seconds),
            }
            for stage, seconds in timings.items()
            if seconds
        },
        # captures later than SLOW_CAPTURE_S after their card lay still, and of them those
        # with no reason shown on the tablet while they waited
        "slow_captures": len(report.slow_captures),
        "slow_captures_unexplained": sum(1 for *_, why in report.slow_captures if not why),
    }
