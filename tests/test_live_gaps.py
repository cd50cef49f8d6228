"""What the camera did not see, it does not decide: a stream that drops out, a lens dark or
covered, a pipeline started again. Hand-written detection sequences through the real tracker
and decider (the helpers of test_live); a simulated round cut at each kind of moment is
measured by ``companion replay --drop-at`` (docs/LIVE.md)."""

from __future__ import annotations

import numpy as np
import pytest
from test_live import (
    DEAL,
    FIELD_SPOTS,
    ZONES,
    ScriptedDetector,
    Table,
    gather,
    hanami_for_aki,
    live,
    logged,
)

from companion.live.pipeline import LivePipeline
from companion.store import MatchStore

__all__ = ["live"]  # the fixture, used by name

DEAL_2 = ["01-2", "02-1", "04-2", "06-1", "07-3", "08-2", "10-2", "12-4"]


def away(table, seconds, during=None):
    """The camera sees nothing for ``seconds`` (its frames never come); ``during`` changes
    the table meanwhile."""
    if during is not None:
        during(table)
    table.index += round(seconds * 10)


def round_life(store, match_id):
    """The events that are not captures (after match_started), as (type, player)."""
    return [
        (s.event.type, getattr(s.event, "player", None))
        for s in store.events(match_id)[1:]
        if s.event.type != "card_captured"
    ]


def stopped_gathered_and_dealt_again(table, play_on=False):
    """Aki stops; every card is gathered; the next round is dealt (and, with ``play_on``, its
    first turns are played: Ben takes 06-1 with 06-3, cards are laid on the field)."""
    table.cards.clear()
    for code, (x, y) in zip(DEAL_2, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    if play_on:
        table.take("06-1")
        table.put("06-1", 300, 100)
        table.put("06-3", 330, 100)
        table.put("11-1", 470, 360)
        table.put("05-2", 580, 360)


@pytest.mark.parametrize("play_on", [False, True], ids=["new-deal", "new-deal-and-play"])
def test_a_stop_made_while_the_camera_was_away_is_asked_never_guessed(live, play_on):
    store, match_id, table = live
    hanami_for_aki(table)
    table.run(5)
    assert store.state(match_id).pending_decision == "Aki"
    events = round_life(store, match_id)
    away(table, 19, lambda t: stopped_gathered_and_dealt_again(t, play_on))
    table.run(80)  # the camera is back: 8 s of the new table
    assert round_life(store, match_id) == events  # no Koi, no Stop, no round end, no deal
    proposal = table.pipeline.proposal
    assert proposal.kind == "asked"
    assert "19 s" in proposal.text and "Aki" in proposal.text
    store.append(match_id, {"type": "stop_called", "player": "Aki"})  # answered on the tablet
    table.run(40)
    state = store.state(match_id)
    assert state.rounds[0].winner == "Aki" and state.rounds[0].kind == "stop"
    assert state.round_number == 2 and state.round_in_progress
    assert table.pipeline.proposal is None or table.pipeline.proposal.kind != "asked"
    dealt = set(DEAL_2) - ({"06-1"} if play_on else set())
    assert dealt <= {c.code for c in state.field}
    if play_on:  # the next round's first capture goes to the next round
        assert sorted(c.code for c in state.captures["Ben"]) == ["06-1", "06-3"]
        assert state.rounds[0].points["Aki"] > 0


def test_play_seen_after_a_gap_does_not_answer_a_koi_asked_on_the_tablet(live):
    store, match_id, table = live
    hanami_for_aki(table)
    table.run(5)

    def ben_plays_on(t):  # Aki said Koi; Ben laid a card that took nothing
        t.put("04-1", 470, 360)

    away(table, 6, ben_plays_on)
    table.run(20)
    table.run(3, hand=True)
    table.put("12-1", 580, 360)  # and Ben's draw: plainly a Koi, had it been seen
    table.run(20)
    assert ("koi_called", "Aki") not in round_life(store, match_id)
    assert table.pipeline.proposal.kind == "asked"
    assert store.state(match_id).pending_decision == "Aki"
    store.append(match_id, {"type": "koi_called", "player": "Aki"})
    table.take("11-2")  # play goes on and is read again
    table.run(3, hand=True)
    table.put("11-1", 600, 100)
    table.put("11-2", 630, 100)
    table.run(12)
    assert sorted(c.code for c in store.state(match_id).captures["Ben"]) == ["11-1", "11-2"]
    assert [e for e in round_life(store, match_id) if e[0] == "koi_called"] == [
        ("koi_called", "Aki")
    ]


def test_a_short_gap_over_a_still_table_changes_nothing_and_koi_is_read(live):
    store, match_id, table = live
    hanami_for_aki(table)
    table.run(5)
    away(table, 3)  # Aki thinks; the stream drops and comes back, the table as it was
    table.run(20)
    assert table.pipeline.gaps and not table.pipeline.asked
    table.run(3, hand=True)
    table.put("04-1", 470, 360)
    table.run(8)
    table.run(3, hand=True)
    table.put("12-1", 580, 360)
    table.run(10)
    calls = [s.event for s in store.events(match_id) if s.event.type == "koi_called"]
    assert [(e.player, e.source) for e in calls] == [("Aki", "camera")]


def test_a_capture_made_while_the_camera_was_away_is_taken_over(live):
    store, match_id, table = live
    table.run(5)

    def aki_takes_the_pine(t):
        t.take("01-1")
        t.put("01-1", 300, 620)
        t.put("01-3", 330, 620)

    away(table, 4, aki_takes_the_pine)
    table.run(25)
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Aki"]) == ["01-1", "01-3"]
    assert [s.event.type for s in store.events(match_id)].count("card_captured") == 2
    assert not table.pipeline.asked  # every card that came there is read: nothing to ask


def lying_unread(table, *spots):
    """Cards lying at ``spots`` that show in the picture but that the detector never reads
    (a row's first cards, half under the next row, read by no look)."""
    from test_live import quad

    drawn = table.image

    def image():
        picture = drawn()
        for x, y in spots:
            q = np.array(quad(x, y), np.int32)
            picture[q[:, 1].min() : q[:, 1].max(), q[:, 0].min() : q[:, 0].max()] = 215
        return picture

    table.image = image


def aki_takes_two_months(taken, read):
    """The play while the camera is away: Aki takes the field's cards ``taken``; the two
    cards ``read`` lie in his captures where looks read them, two more beside them where no
    look does (``lying_unread``)."""

    def play(t):
        t.take(*taken)
        for x, code in zip((300, 330), read, strict=True):
            t.put(code, x, 620)
        lying_unread(t, (400, 620), (430, 620))

    return play


def test_captures_made_while_away_that_the_camera_cannot_read_are_asked_never_left_out(live):
    """The camera away 19 s while Aki takes the pine (read when it is back) and the cherry
    curtain with 03-3, which lie in his captures where no look reads them: the pine is taken
    over and the tablet is asked for the rest; added there, the question is answered."""
    store, match_id, table = live
    table.run(5)
    away(table, 19, aki_takes_two_months(taken=("01-1", "03-3"), read=("01-1", "01-3")))
    table.run(40)
    state = store.state(match_id)
    assert sorted(c.code for c in state.captures["Aki"]) == ["01-1", "01-3"]
    proposal = table.pipeline.proposal
    assert proposal.kind == "asked"
    assert "19 s" in proposal.text and "Aki" in proposal.text and "captures" in proposal.text
    for card in ("03-3", "03-1"):  # added on the tablet
        store.append(match_id, {"type": "card_captured", "player": "Aki", "card": card})
    table.run(10)
    proposal = table.pipeline.proposal
    assert proposal is None or proposal.kind != "asked"
    assert sorted(c.code for c in store.state(match_id).captures["Aki"]) == [
        "01-1", "01-3", "03-1", "03-3"
    ]  # fmt: skip


def test_a_yaku_the_cards_added_on_the_tablet_make_is_asked_never_read_from_play(live):
    """Away 19 s while Aki takes the curtain (read back) and the sake cup with its chaff,
    which no look reads: asked for, the cup added on the tablet makes his Hanami; whether he stopped
    or called Koi fell in the gap, so it is asked, and Ben's play seen afterwards does not
    answer it."""
    store, match_id, table = live
    table.run(5)
    away(table, 19, aki_takes_two_months(taken=("03-3", "09-4"), read=("03-1", "03-3")))
    table.run(40)
    assert table.pipeline.proposal.kind == "asked"
    for card in ("09-4", "09-1"):  # added one by one on the tablet: the cup makes Hanami
        store.append(match_id, {"type": "card_captured", "player": "Aki", "card": card})
        table.run(5)
    assert store.state(match_id).pending_decision == "Aki"
    table.run(3, hand=True)
    table.put("04-1", 470, 360)  # Ben's card and his draw: plainly a Koi, had it been seen
    table.run(8)
    table.run(3, hand=True)
    table.put("12-1", 580, 360)
    table.run(20)
    assert ("koi_called", "Aki") not in round_life(store, match_id)
    proposal = table.pipeline.proposal
    assert proposal.kind == "asked" and "Koi" in proposal.text and "Aki" in proposal.text


@pytest.mark.parametrize("play_on", [False, True], ids=["new-deal", "new-deal-and-play"])
def test_a_round_played_and_gathered_unseen_before_any_capture_is_asked(live, play_on):
    """Away 60 s from before the round's first capture: it was played, gathered and the
    next one dealt (and begun). Its field's cards are gone, and not into the captures: the
    round is left to the tablet, never continued with the next deal's play."""
    store, match_id, table = live
    table.run(5)
    away(table, 60, lambda t: stopped_gathered_and_dealt_again(t, play_on))
    table.run(40)
    state = store.state(match_id)
    assert state.round_number == 1 and not any(state.captures.values())
    proposal = table.pipeline.proposal
    assert proposal.kind == "asked" and "60 s" in proposal.text and "round" in proposal.text


def dark(table, seconds):
    """The lens covered (an even, nearly black picture): the detector finds nothing."""
    from companion.live.sources import Frame

    for _ in range(round(seconds * 10)):
        table.detector.looks = []
        image = np.full((720, 1280, 3), 6, np.uint8)
        table.events += table.pipeline.process(Frame(image, table.index, table.index / 10))
        table.index += 1


def test_nothing_is_decided_while_the_lens_is_covered(live):
    store, match_id, table = live
    hanami_for_aki(table)
    table.run(5)
    events = round_life(store, match_id)
    dark(table, 6)  # a sleeve over the lens: no card seen, no hand seen, no backs
    assert round_life(store, match_id) == events  # not read as the cards gathered
    assert table.pipeline.blind_frames == 60
    table.run(30)  # uncovered, the table as it was: play goes on being read
    assert round_life(store, match_id) == events
    assert not table.pipeline.asked


def test_a_frozen_stream_is_a_gap():
    """A live stream that sends the same picture over and over (a stalled encoder) is not
    looked at: the table it shows is not the table."""
    from companion.live.session import LiveSession
    from companion.live.sources import Frame, FrameSource

    class Stalled(FrameSource):
        fps = 10.0

        def __init__(self, picture):
            self.picture, self.index, self.state = picture, 0, "live"

        def read(self):
            frame = Frame(self.picture, self.index, self.index / 10)
            self.index += 1
            return frame

        def describe(self):
            return "stream"

    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6)
    detector = ScriptedDetector()
    scene = Table(LivePipeline(detector, ZONES, store, match_id), detector)
    for code, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True):
        scene.put(code, x, y)
    source = Stalled(scene.image())
    session = LiveSession(source, detector, store, match_id=match_id, realtime=False)
    detector.looks = list(scene.cards.values())
    for _ in range(60):
        session.step()
    assert session.pipeline.frames < 60 and session.frozen
    status = session.status()
    assert status["camera"] == "lost" and status["message"].id == "camera.frozen"
    source.picture = source.picture.copy()
    source.picture[:20, :20] = 255  # it moves again
    session.step()
    assert not session.frozen and session.status()["camera"] == "live"


def play_to_akis_sanko(t):
    """The deal, Aki's two captures, Ben's card taking nothing and Aki's third bright (Sanko):
    a Stop or Koi is then awaited from Aki."""
    from test_live_restart import ROWS

    for code, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True):
        t.put(code, x, y)
    t.run(25)
    for dealt, hand, spots in (("01-1", "01-3", (0, 1)), ("03-3", "03-1", (2, 3))):
        t.take(dealt)
        t.run(3, hand=True)
        t.put(dealt, *ROWS["Aki"][spots[0]])
        t.put(hand, *ROWS["Aki"][spots[1]])
        t.run(10)
    t.run(3, hand=True)
    t.put("12-1", 470, 360)  # Ben's card, taking nothing
    t.run(10)
    t.take("08-3")
    t.run(3, hand=True)
    t.put("08-3", 700, 620)
    t.put("08-1", 734, 620)  # Aki's third bright: Sanko
    t.run(10)


def test_a_restart_while_a_koi_or_stop_is_awaited_asks_it_and_play_seen_again_never_answers():
    """Killed while Aki's Koi/Stop was awaited, started again on a recording played from its
    start: an empty table, then the deal and Aki's captures laid again in front of it; the
    cards coming into sight once counted as play going on (a Koi nobody called)."""
    from test_live_restart import new_match, start

    store, match_id = new_match()
    table = start(store, match_id, {}, 20)  # the table before the deal

    play_to_akis_sanko(table)
    assert store.state(match_id).pending_decision == "Aki"
    events = round_life(store, match_id)
    again = start(store, match_id, {}, 20)  # the same recording from its start
    play_to_akis_sanko(again)
    again.run(30)
    assert round_life(store, match_id) == events
    assert again.pipeline.proposal.kind == "asked" and "Aki" in again.pipeline.proposal.text


def test_replay_drop_at_keeps_those_frames_from_the_pipeline(tmp_path):
    import cv2
    from click.testing import CliRunner

    from companion.bench.replay import replay_video
    from companion.cli import main

    video = tmp_path / "table.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10, (64, 36))
    weave = np.random.default_rng(1).integers(40, 200, (36, 64, 3)).astype(np.uint8)
    for _ in range(40):
        writer.write(weave)
    writer.release()
    report = replay_video(video, ScriptedDetector(), drops=[(10, 2.0)])
    assert report.frames == 20  # frames 10 to 29 never reached it
    data = report.to_dict()
    assert data["drops"] == [[10, 2.0]] and data["asked"] == 0
    refused = CliRunner().invoke(main, ["replay", str(video), "--drop-at", "10"])
    assert refused.exit_code == 2 and "FRAME:SECONDS" in refused.output


@pytest.mark.parametrize("first", ["empty-table", "deal-lying"])
def test_a_restart_after_the_stop_plays_the_ended_round_again_without_opening_one(first):
    """Killed while Aki's Stop was awaited, started again on the recording played from its
    start (its first picture an empty table, or the deal already lying): the Stop is asked
    and answered; the ended round's deal and its play, seen again, open no round (neither
    the deal, an earlier round's, nor a field read once its captures are under way, nor
    the field cards remembered while a hand gathers them); the next deal, after the table
    was gathered, opens the next round."""
    from test_live_restart import new_match, start

    store, match_id = new_match()
    table = start(store, match_id, {}, 20)
    play_to_akis_sanko(table)
    assert store.state(match_id).pending_decision == "Aki"
    if first == "deal-lying":
        again = start(store, match_id, {}, 20)
    else:
        detector = ScriptedDetector()
        again = Table(LivePipeline(detector, ZONES, store, match_id), detector)
        again.run(20)
    again.run(30)
    assert again.pipeline.proposal.kind == "asked"
    store.append(match_id, {"type": "stop_called", "player": "Aki"})  # answered on the tablet
    again.run(20)
    play_to_akis_sanko(again)
    again.run(30)
    assert not store.state(match_id).round_in_progress
    for code in list(again.cards):  # the cards gathered under a sweeping hand
        again.take(code)
        again.run(2, hand=True)
    again.run(20)
    assert [e.event.type for e in again.events] == []  # nothing opened, nothing captured
    for code, (x, y) in zip(DEAL_2, FIELD_SPOTS, strict=True):
        again.put(code, x, y)
    again.run(30)
    state = store.state(match_id)
    assert state.round_number == 2 and state.round_in_progress
    assert set(DEAL_2) == {c.code for c in state.field}


# A short cut (2 s) over each kind of moment; the capture and the Koi are above. The long
# cuts and the restarts over a simulated match: ``python -m companion.bench.gaps``.


def test_a_short_cut_as_the_stop_is_said_leaves_the_stop_to_the_gathering_seen(live):
    """A stops: the final table lies still while points are counted, the camera away 2 s of
    it. Back, the table is as it was: nothing asked, and the sweep seen after reads the Stop."""
    from test_live import gather

    store, match_id, table = live
    hanami_for_aki(table)
    table.run(5)
    away(table, 2)
    table.run(15)
    assert not table.pipeline.asked and store.state(match_id).round_in_progress
    gather(table, "03-1", "03-3", "09-1", "09-4")
    table.run(40)
    stops = [(s.event.player, s.event.source) for s in store.events(match_id)
             if s.event.type == "stop_called"]  # fmt: skip
    assert stops == [("Aki", "camera")]
    assert store.state(match_id).rounds[-1].winner == "Aki"


def test_a_short_cut_over_the_gathering_asks_the_decision_and_the_next_deal_opens(live):
    """A stops; the camera is away the 2 s his captures are swept: back, they are gone with
    no answer seen. The decision is asked, never read (a Stop is likely, not seen); answered
    on the tablet, the field gathered in sight and the next deal open the next round."""
    from test_live import gather

    store, match_id, table = live
    hanami_for_aki(table)
    table.run(20)
    events = round_life(store, match_id)
    away(table, 2, lambda t: t.take("03-1", "03-3", "09-1", "09-4"))
    table.run(40)
    assert round_life(store, match_id) == events
    assert table.pipeline.proposal.kind == "asked" and "Aki" in table.pipeline.proposal.text
    store.append(match_id, {"type": "stop_called", "player": "Aki"})
    gather(table, *[c for c in DEAL if c not in ("03-3", "09-4")])
    table.run(15)
    for code, (x, y) in zip(DEAL_2, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(25)
    state = store.state(match_id)
    assert state.rounds[0].winner == "Aki" and state.rounds[0].kind == "stop"
    assert state.round_number == 2 and sorted(c.code for c in state.field) == sorted(DEAL_2)


def test_a_short_cut_over_the_next_deal_opens_the_round_on_the_deal_seen_back(live):
    """The round ended, the table gathered in sight; the camera is away the 2 s the next
    field is dealt: back, the deal lying opens the next round, nothing asked."""
    from test_live import gather

    store, match_id, table = live
    hanami_for_aki(table)
    table.run(5)
    store.append(match_id, {"type": "stop_called", "player": "Aki"})  # tapped
    table.run(10)
    gather(table, *table.cards)
    table.run(15)

    def dealt(t):
        for code, (x, y) in zip(DEAL_2, FIELD_SPOTS, strict=True):
            t.put(code, x, y)

    away(table, 2, dealt)
    table.run(40)  # the table compared a second after, the deal opened once it lies still
    state = store.state(match_id)
    assert state.round_number == 2 and state.round_in_progress
    assert sorted(c.code for c in state.field) == sorted(DEAL_2)
    assert not table.pipeline.asked


def test_a_round_dealt_and_begun_while_the_camera_was_away_is_opened_and_its_captures_taken_over(
    live,
):
    """The round ended and was gathered in sight; the camera away 19 s while the next round
    is dealt and Ben takes 06-1 with 06-3: back, the round under way is opened on the field
    lying and Ben's capture taken over (never taken for the ended round's cards left lying)."""
    from test_live import gather

    store, match_id, table = live
    hanami_for_aki(table)
    table.run(5)
    store.append(match_id, {"type": "stop_called", "player": "Aki"})  # tapped
    table.run(10)
    gather(table, *table.cards)
    table.run(15)
    away(table, 19, lambda t: stopped_gathered_and_dealt_again(t, play_on=True))
    table.run(40)
    state = store.state(match_id)
    assert state.round_number == 2 and state.round_in_progress
    assert sorted(c.code for c in state.captures["Ben"]) == ["06-1", "06-3"]
    assert {"01-2", "02-1", "04-2", "07-3"} <= {c.code for c in state.field}


class MatTable(Table):
    """A plain, evenly lit mat (a dark blue felt): emptied of cards, its picture is nearly
    even (a grey spread under the covered-lens test's), as a simulated plain table is."""

    MAT = np.clip(
        np.array([67, 25, 21], np.float32)
        + np.random.default_rng(1).normal(0, 2.5, (720, 1280, 1)),
        0,
        255,
    ).astype(np.uint8)

    def image(self):
        image = self.MAT.copy()
        for name, xy, _, _ in self.cards.values():
            x, y = int(xy[0]), int(xy[1])
            shade = 120 + 7 * sum(map(ord, name)) % 120
            image[y - 45 : y + 45, x - 28 : x + 28] = shade
        return image


def dealt_on_a_mat():
    """A match whose first deal lies on a plain mat, looked at a while: (store, id, table)."""
    store = MatchStore.open(":memory:")
    match_id = store.create_match(players=["Aki", "Ben"], rules="livret", rounds=6, oya="Aki")
    detector = ScriptedDetector()
    table = MatTable(LivePipeline(detector, ZONES, store, match_id), detector)
    for code, (x, y) in zip(DEAL, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(25)
    return store, match_id, table


def test_an_emptied_plain_mat_is_the_cleared_table_and_the_next_deal_opens_the_round():
    store, match_id, table = dealt_on_a_mat()
    hanami_for_aki(table)
    table.run(20)  # "Stop": the table stays as it is while points are counted
    gather(table, *table.cards)  # Aki sweeps his captures, then the field, in one go
    table.run(25)  # the mat lies bare a moment: not a covered lens, the Stop is read
    stops = [e for e in logged(store, match_id) if e.type == "stop_called"]
    assert [(e.player, e.source) for e in stops] == [("Aki", "camera")]
    # the next deck set down (its back read as a card) and dealt at once, a hand over it
    table.put("10-4", 1180, 360)
    for code, (x, y) in zip(DEAL_2, FIELD_SPOTS, strict=True):
        table.put(code, x, y)
    table.run(4, hand=True)
    table.run(30)
    state = store.state(match_id)
    assert state.round_number == 2 and state.round_in_progress
    assert sorted(c.code for c in state.field) == sorted(DEAL_2)
    assert table.pipeline.blind_frames == 0


def test_an_even_picture_of_another_colour_than_the_mat_is_a_covered_lens():
    _, _, table = dealt_on_a_mat()
    dark(table, 3)  # a sleeve over the lens: nearly black, unlike the mat
    assert table.pipeline.blind_frames == 30


def test_a_restart_after_the_stop_reading_the_replayed_round_in_mid_play_opens_no_round():
    """Killed after Aki's Stop, started again on the recording played from its start, the
    first field read in mid-play: five of the deal's cards and a card captured in that round
    (Aki's 03-1, laid on the field before it was taken). Every card of it is that round's,
    so it is that round played again, never a new deal; the next deal still opens round 2."""
    from test_live_restart import ROWS, new_match, start

    store, match_id = new_match()
    table = start(store, match_id, {}, 20)
    play_to_akis_sanko(table)
    store.append(match_id, {"type": "stop_called", "player": "Aki"})
    detector = ScriptedDetector()
    again = Table(LivePipeline(detector, ZONES, store, match_id), detector)
    again.run(20)
    mid_play = [c for c in DEAL if c not in ("01-1", "03-3", "08-3")] + ["03-1"]
    assert len(mid_play) == 6
    for code, (x, y) in zip(mid_play, FIELD_SPOTS, strict=False):
        again.put(code, x, y)
    again.run(30)
    again.take("03-1")
    again.run(3, hand=True)
    again.put("03-1", *ROWS["Aki"][0])
    again.run(20)
    assert [e.event.type for e in again.events] == []  # nothing opened, nothing captured
    assert not store.state(match_id).round_in_progress
    for code in list(again.cards):  # gathered under a sweeping hand
        again.take(code)
        again.run(2, hand=True)
    again.run(20)
    for code, (x, y) in zip(DEAL_2, FIELD_SPOTS, strict=True):
        again.put(code, x, y)
    again.run(30)
    state = store.state(match_id)
    assert state.round_number == 2 and state.round_in_progress
    assert set(DEAL_2) == {c.code for c in state.field}
