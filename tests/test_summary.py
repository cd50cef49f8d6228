"""The match summary: values from the replay, text/HTML/PDF renderings, the CLI commands."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from companion.cli import main
from companion.demo import play_script
from companion.store import MatchStore
from companion.summaries import summary_from_store
from companion.summaries.koikoi import (
    MatchSummary,
    build_summary,
    builtin_pdf,
    chart_svg,
    render_html,
    render_pdf,
    render_text,
)
from companion.summaries.printable import find_chromium


@pytest.fixture
def demo_store():
    """The demo script played into a store: 3 rounds done (win after a Koi, win, draw)."""
    with MatchStore.open(":memory:") as store:
        play_script(store)
        yield store


@pytest.fixture
def demo_summary(demo_store) -> MatchSummary:
    return summary_from_store(demo_store)


def finished_match(store, players=("Aki", "Ben")) -> int:
    """A 6-round livret match where the first player declares teshi (6 points) every round."""
    match_id = store.create_match(players=list(players), rounds=6, title="Quick one")
    for _ in range(6):
        store.append(match_id, {"type": "round_started"})
        store.append(match_id, {"type": "hand_declared", "player": players[0], "kind": "teshi"})
    return match_id


# -- values -------------------------------------------------------------------------------------


def test_summary_of_the_demo(demo_summary):
    s = demo_summary
    assert s.players == ["Aki", "Ben"] and s.rules == "livret" and s.rounds_planned == 6
    assert [r.winner for r in s.rounds] == ["Aki", "Ben", None]
    first = s.rounds[0]
    # Sankō 6, doubled by Ben's Koi-Koi (livret: x (1 + the caller's Koi count)), zero-sum.
    assert [(y.name, y.points) for y in first.yaku] == [("Sankō", 6)]
    assert first.base == 6 and first.multiplier == 2
    assert first.points == {"Aki": 12, "Ben": -12}
    assert s.rounds[1].points == {"Aki": -3, "Ben": 3}
    assert [r.running for r in s.rounds] == [
        {"Aki": 12, "Ben": -12},
        {"Aki": 9, "Ben": -9},
        {"Aki": 9, "Ben": -9},
    ]
    assert s.totals == {"Aki": 9, "Ben": -9}
    assert not s.finished and s.winner is None and "round 4" in s.outcome
    assert s.corrections == 3  # one card corrected, one removed, one undo
    assert s.title == "Demo: Aki vs Ben"
    data = json.loads(json.dumps(s.to_dict()))
    assert data["rounds_played"] == 3 and data["rounds"][0]["multipliers"][0]["factor"] == 2


def test_summary_of_a_finished_match():
    with MatchStore.open(":memory:") as store:
        match_id = finished_match(store)
        s = build_summary(store.state(match_id), store.get_match(match_id), store.events(match_id))
    assert s.finished and s.winner == "Aki"
    assert s.totals == {"Aki": 36, "Ben": -36}
    assert s.outcome.startswith("Aki wins the match")
    assert s.corrections == 0 and s.rounds_played == 6


def test_summary_says_which_rounds_were_entered_by_hand():
    with MatchStore.open(":memory:") as store:
        match_id = store.create_match(players=["Aki", "Ben"], rounds=6, oya="Aki")
        store.append(match_id, {"type": "round_entered", "winner": "Ben", "points": 7})
        store.append(match_id, {"type": "round_entered"})
        s = summary_from_store(store, match_id)
    assert [(r.winner, r.points) for r in s.rounds] == [
        ("Ben", {"Aki": -7, "Ben": 7}),
        (None, {"Aki": 0, "Ben": 0}),
    ]
    assert s.totals == {"Aki": -7, "Ben": 7}
    text = render_text(s)
    assert "Entered by hand: 7 points" in text and "Entered by hand: a draw" in text
    assert "Entered by hand: 7 points" in render_html(s)


def test_summary_before_any_round(tmp_path):
    with MatchStore.open(":memory:") as store:
        store.create_match(players=["Aki", "Ben"])
        s = summary_from_store(store)
    assert s.rounds == [] and s.totals == {"Aki": 0, "Ben": 0}
    assert "No round finished yet" in render_html(s)
    assert "(no round finished yet)" in render_text(s)
    assert builtin_pdf(s).startswith(b"%PDF-")


def test_summary_of_a_team_match_names_the_members():
    with MatchStore.open(":memory:") as store:
        store.create_match(
            players=["Les Roses", "Les Mauves"],
            rules="ferme-florale",
            options={"teams": True},
            teams={"Les Roses": ["Aki", "Chie"], "Les Mauves": ["Ben", "Dan"]},
            oya="Aki",
        )
        s = summary_from_store(store)
    assert s.teams == {"Les Roses": ["Aki", "Chie"], "Les Mauves": ["Ben", "Dan"]}
    line = "Teams: Les Roses (Aki, Chie); Les Mauves (Ben, Dan)"
    assert line in render_text(s) and line in render_html(s)
    assert rb"Les Mauves \(Ben, Dan\)" in builtin_pdf(s)  # PDF strings escape brackets
    with MatchStore.open(":memory:") as store:
        store.create_match(players=["Aki", "Ben"])
        assert summary_from_store(store).teams is None


# -- text and HTML ------------------------------------------------------------------------------


def test_render_text(demo_summary):
    text = render_text(demo_summary)
    lines = text.splitlines()
    assert lines[0] == "Demo: Aki vs Ben"
    round_rows = [line for line in lines if re.match(r"\s+\d+\s", line)]
    assert len(round_rows) == 3
    assert re.search(r"1\s+Aki\s+Sankō 6\s+6\s+×2", round_rows[0])
    assert round_rows[0].split()[-2:] == ["12", "-12"]
    assert "Totals: Aki 9, Ben -9" in text
    assert "Corrections made during the match: 3" in text


def test_render_html_is_printable_and_standalone(demo_summary):
    html = render_html(demo_summary)
    assert "@page" in html and "size: A4" in html and "@media print" in html
    assert "break-inside: avoid" in html
    assert "<nav" not in html  # no navigation unless asked for (tablet page)
    assert not re.search(r"""(src|href)=["']https?://""", html)  # nothing fetched from outside
    assert html.count("<tbody>") == 1 and html.count("<tr>") == 3 + 2  # rounds + head + foot
    assert "Sankō <b>6</b>" in html and "×2" in html
    assert html.count("<polyline") == 2
    with_back = render_html(demo_summary, back_url="/matches/1")
    assert 'href="/matches/1"' in with_back and "no-print" in with_back


def test_html_escapes_player_names():
    with MatchStore.open(":memory:") as store:
        match_id = store.create_match(players=["<b>Aki</b>", "Ben & co"])
        html = render_html(summary_from_store(store, match_id))
    assert "<b>Aki</b>" not in html and "&lt;b&gt;Aki&lt;/b&gt;" in html
    assert "Ben &amp; co" in html


def test_chart_follows_the_running_totals(demo_summary):
    svg = chart_svg(demo_summary, width=640, height=220)
    series = re.findall(r'<polyline[^>]*points="([^"]+)"', svg)
    assert len(series) == 2
    aki = [tuple(map(float, p.split(","))) for p in series[0].split()]
    assert len(aki) == 4  # the start plus 3 rounds
    xs = [x for x, _ in aki]
    assert xs == sorted(xs)
    ys = [y for _, y in aki]  # SVG y grows downwards: Aki goes up 12, down 3, flat
    assert ys[1] < ys[0] and ys[2] > ys[1] and ys[3] == ys[2]


# -- PDF ----------------------------------------------------------------------------------------


def _check_pdf_structure(pdf: bytes) -> None:
    assert pdf.startswith(b"%PDF-1.") and pdf.rstrip().endswith(b"%%EOF")
    xref = int(re.search(rb"startxref\s+(\d+)", pdf).group(1))
    assert pdf[xref:].startswith(b"xref")
    count = int(re.search(rb"xref\s+0 (\d+)", pdf[xref:]).group(1))
    offsets = re.findall(rb"(\d{10}) 00000 n", pdf[xref:])
    assert len(offsets) == count - 1
    for number, offset in enumerate(offsets, start=1):
        assert pdf[int(offset) :].startswith(b"%d 0 obj" % number)


def test_builtin_pdf_is_well_formed(demo_summary):
    pdf = builtin_pdf(demo_summary)
    _check_pdf_structure(pdf)
    assert b"/MediaBox [0 0 595.28 841.89]" in pdf  # A4
    assert b"(Totals: Aki 9, Ben -9) Tj" in pdf
    assert b"Sanko 6" in pdf  # the macron folded into the standard font's Latin-1


def test_builtin_pdf_handles_long_matches_and_any_name():
    with MatchStore.open(":memory:") as store:
        match_id = store.create_match(players=["秋子", "Ben (x)"], rounds=12)
        for _ in range(12):
            store.append(match_id, {"type": "round_started"})
            store.append(match_id, {"type": "cards_ran_out"})
        pdf = builtin_pdf(summary_from_store(store, match_id))
    _check_pdf_structure(pdf)
    assert b"Ben \\(x\\)" in pdf  # parentheses escaped in PDF strings
    assert b"/Count 1" in pdf or b"/Count 2" in pdf


@pytest.mark.skipif(not shutil.which("pdftotext"), reason="pdftotext (poppler-utils) not found")
def test_builtin_pdf_text_can_be_extracted(demo_summary, tmp_path):
    path = tmp_path / "s.pdf"
    path.write_bytes(builtin_pdf(demo_summary))
    text = subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    assert "Demo: Aki vs Ben" in text and "Totals: Aki 9, Ben -9" in text


@pytest.mark.browser
@pytest.mark.skipif(find_chromium() is None, reason="no chromium binary")
def test_render_pdf_with_chromium(demo_summary, tmp_path):
    pdf = render_pdf(demo_summary)
    assert pdf.startswith(b"%PDF-")
    assert pdf != builtin_pdf(demo_summary)  # chromium's print, not the fallback
    if shutil.which("pdfinfo"):
        path = tmp_path / "c.pdf"
        path.write_bytes(pdf)
        info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True).stdout
        assert "(A4)" in info and re.search(r"Pages:\s+1\n", info)


def test_render_pdf_falls_back_without_chromium(demo_summary):
    assert render_pdf(demo_summary, use_chromium=False) == builtin_pdf(demo_summary)


# -- CLI ----------------------------------------------------------------------------------------


@pytest.fixture
def db_path(tmp_path):
    path = tmp_path / "c.db"
    with MatchStore.open(path) as store:
        finished_match(store)
        play_script(store)  # the most recent match
    return path


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)), catch_exceptions=False)


def test_cli_summary_text_defaults_to_the_latest_match(db_path):
    result = run("summary", "--db", db_path)
    assert result.exit_code == 0
    assert result.output.startswith("Demo: Aki vs Ben")
    first = run("summary", "1", "--db", db_path)
    assert first.exit_code == 0 and first.output.startswith("Quick one")
    assert "Aki wins the match" in first.output


def test_cli_summary_files(db_path, tmp_path):
    html = tmp_path / "s.html"
    result = run("summary", "--db", db_path, "--format", "html", "--out", html)
    assert result.exit_code == 0 and "<svg" in html.read_text()
    pdf = tmp_path / "s.pdf"
    result = run("summary", "2", "--db", db_path, "--format", "pdf", "--out", pdf)
    assert result.exit_code == 0 and pdf.read_bytes().startswith(b"%PDF-")
    data = json.loads(run("summary", "--db", db_path, "--format", "json").output)
    assert data["totals"] == {"Aki": 9, "Ben": -9}


def test_cli_summary_errors(db_path, tmp_path):
    for args, message in (
        (["summary", "99", "--db", db_path], "There is no match 99"),
        (["summary", "abc", "--db", db_path], "not a match number"),
        (["summary", "--db", tmp_path / "missing.db"], "There is no database"),
        (["summary", "--db", db_path, "--out", tmp_path / "no" / "dir" / "x.txt"], "Cannot write"),
    ):
        result = CliRunner().invoke(main, list(map(str, args)))
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
    empty = tmp_path / "empty.db"
    MatchStore.open(empty).close()
    result = CliRunner().invoke(main, ["summary", "--db", str(empty)])
    assert result.exit_code == 2 and "no matches" in result.output


def test_cli_matches(db_path, monkeypatch, tmp_path):
    result = run("matches", "--db", db_path)
    assert result.exit_code == 0
    rows = result.output.splitlines()[1:]
    assert rows[0].split()[0] == "2" and "in progress" in rows[0]
    assert rows[1].split()[0] == "1" and "finished" in rows[1]
    data = json.loads(run("matches", "--db", db_path, "--json").output)
    assert [m["id"] for m in data] == [2, 1]
    assert set(data[0]) >= {"id", "title", "players", "rules", "created_at", "last_seq", "finished"}
    # COMPANION_DB picks the database when --db is not given.
    monkeypatch.setenv("COMPANION_DB", str(db_path))
    assert json.loads(run("matches", "--json").output)[1]["title"] == "Quick one"
    monkeypatch.setenv("COMPANION_DB", str(tmp_path / "fresh" / "none.db"))
    assert "No matches yet" in run("matches").output


def test_summary_of_a_three_player_card_values_match():
    """Hana-Awase counts card values (20/10/5/1), is not zero-sum, and notes a missing card."""
    with MatchStore.open(":memory:") as store:
        match_id = store.create_match(players=["A", "B", "C"], rules="hana-awase", rounds=6)
        store.append(match_id, {"type": "round_started"})
        for player, card in zip(
            "ABCABC", ["01-1", "01-2", "02-1", "03-1", "12-1", "08-1"], strict=True
        ):
            store.append(match_id, {"type": "card_captured", "player": player, "card": card})
        store.append(match_id, {"type": "cards_ran_out"})
        s = summary_from_store(store, match_id)
    # A: crane 20 + curtain 20; B: poem ribbon 5 + phoenix 20; C: warbler 10 + moon 20.
    assert s.rounds[0].points == {"A": 40, "B": 25, "C": 30} and s.rounds[0].winner == "A"
    assert s.totals == {"A": 40, "B": 25, "C": 30}
    assert s.outcome == "In progress: round 2 is next, A +40, B +25, C +30."
    assert any("95, not 264" in w for w in s.warnings)
    text = render_text(s)
    assert text.splitlines()[3].split()[-3:] == ["A", "B", "C"]
    _check_pdf_structure(builtin_pdf(s))


def test_summary_of_a_tie_waiting_for_its_extra_round():
    with MatchStore.open(":memory:") as store:
        match_id = store.create_match(players=["Aki", "Ben"], rounds=6)
        for k in range(6):
            store.append(match_id, {"type": "round_started"})
            player = ["Aki", "Ben"][k % 2]
            store.append(match_id, {"type": "hand_declared", "player": player, "kind": "teshi"})
        s = summary_from_store(store, match_id)
    assert not s.finished and s.totals == {"Aki": 0, "Ben": 0}
    assert s.outcome == "Tied after 6 rounds: one more round decides (Aki 0, Ben 0)."


def test_running_totals_start_from_the_bank():
    """koikoi-japan: each player starts with 30 points; the summary runs from there."""
    from pathlib import Path

    from companion.game.engine import replay
    from companion.summaries.koikoi import build_summary

    path = Path(__file__).with_name("matches") / "koikoi-japan-8-bank.json"
    state = replay(json.loads(path.read_text(encoding="utf-8"))["events"])
    summary = build_summary(state)
    assert summary.rounds[0].running == {"Aki": 37, "Bea": 23}
    assert summary.rounds[-1].running == summary.totals == {"Aki": 0, "Bea": 60}
    assert "ran out of points" in summary.outcome
