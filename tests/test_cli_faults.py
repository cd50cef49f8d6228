"""The command line's last wrong words (issue 83, section 4): each a sentence and exit 2."""

from __future__ import annotations

from click.testing import CliRunner

from companion.cli import main
from companion.store import MatchStore


def test_delete_without_an_answer_deletes_nothing_and_says_why(tmp_path):
    db = tmp_path / "c.db"
    with MatchStore.open(db) as store:
        match_id = store.create_match(players=["Aki", "Ben"])
    result = CliRunner().invoke(main, ["delete", str(match_id), "--db", str(db)], input="")
    assert result.exit_code == 2
    assert "Aborted" not in result.output
    assert "nothing was deleted" in result.output and "--yes" in result.output
    with MatchStore.open(db) as store:
        assert [m.id for m in store.matches()] == [match_id]


def test_bytes_that_are_not_text_are_described_as_the_bytes(tmp_path):
    name = b"x\xff".decode("utf-8", "surrogateescape")  # as Python reads such an argument
    result = CliRunner().invoke(main, ["deck", "add", name, str(tmp_path)])
    assert result.exit_code == 2
    assert "\\udc" not in result.output and "'x\\xff'" in result.output


def test_render_refuses_a_background_that_is_no_image(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a picture")
    result = CliRunner().invoke(
        main, ["render", "--bench", "--n", "1", "--quiet", "--background", str(text)]
    )
    assert result.exit_code == 2
    assert "notes.txt cannot be read: it is not a PNG or JPEG image" in result.output
