"""Replacing a taught deck: as a whole or not at all, and only when asked for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from companion.cli import main
from companion.recognizer.decks import UserDeck, list_decks

ROOT = Path(__file__).resolve().parents[1]


def made_deck(name: str, value: float) -> UserDeck:
    """A deck of references without the embedder: two crops of each of the 48 cards."""
    ids = np.repeat(np.arange(48), 2).astype(np.int64)
    embeddings = np.full((len(ids), 8), value, np.float32)
    return UserDeck(name, "standard", embeddings, ids, "scans", 1.0, 0.9)


REPLACER = textwrap.dedent(
    """
    import os, signal, sys
    import numpy as np
    from companion.recognizer import decks

    def killed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if sys.argv[2] == "writing":  # half the references written, then the power goes
        real = np.savez_compressed

        def half_then_killed(file, **arrays):
            real(file, **arrays)
            with open(file, "r+b") as written:
                written.truncate(os.path.getsize(file) // 2)
            killed()

        np.savez_compressed = half_then_killed
    else:  # between moving the old deck away and the new one in
        renames = []
        real_rename = os.rename

        def rename_then_killed(source, target):
            renames.append(target)
            if len(renames) == 2:
                killed()
            real_rename(source, target)

        os.rename = rename_then_killed
    ids = np.repeat(np.arange(48), 2).astype(np.int64)
    deck = decks.UserDeck("mine", "standard", np.full((96, 8), 2.0, np.float32), ids, "x", 1, 0.9)
    deck.save(sys.argv[1])
    print("saved")
    """
)


@pytest.mark.parametrize("when", ["writing", "swapping"])
def test_a_replacement_killed_midway_leaves_the_deck_that_was_there(tmp_path, when):
    made_deck("mine", 1.0).save(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", REPLACER, str(tmp_path), when],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert list_decks(tmp_path) == ["mine"]
    kept = UserDeck.load("mine", tmp_path)
    assert float(kept.embeddings[0, 0]) == 1.0  # the old deck, whole
    assert [p.name for p in tmp_path.iterdir() if ".old-" in p.name] == []  # put back
    made_deck("mine", 3.0).save(tmp_path)  # and it can be replaced afterwards
    assert float(UserDeck.load("mine", tmp_path).embeddings[0, 0]) == 3.0
    assert [p.name for p in tmp_path.iterdir() if ".old-" in p.name] == []


def test_a_replaced_deck_keeps_or_drops_its_own_names_with_it(tmp_path):
    names = tmp_path / "names.toml"
    names.write_text("# not read here\n")
    deck = made_deck("mine", 1.0)
    object.__setattr__(deck, "definition", "names.toml")
    deck.save(tmp_path / "decks", names)
    assert (tmp_path / "decks" / "mine" / "names.toml").read_text() == "# not read here\n"
    made_deck("mine", 2.0).save(tmp_path / "decks")  # taught again without its own names
    assert not (tmp_path / "decks" / "mine" / "names.toml").exists()


def test_deck_add_refuses_a_taken_name_unless_told_to_replace(tmp_path):
    decks = tmp_path / "decks"
    made_deck("mine", 1.0).save(decks)
    scans = tmp_path / "scans"
    scans.mkdir()  # no scans: were the name not refused first, this would be the error
    result = CliRunner().invoke(
        main, ["deck", "add", "mine", str(scans), "--decks-dir", str(decks)]
    )
    assert result.exit_code == 2
    assert "already a deck named 'mine'" in result.output
    assert "--replace" in result.output
    assert float(UserDeck.load("mine", decks).embeddings[0, 0]) == 1.0
    replaced = CliRunner().invoke(
        main, ["deck", "add", "mine", str(scans), "--decks-dir", str(decks), "--replace"]
    )
    assert replaced.exit_code == 2
    assert "already a deck" not in replaced.output  # past the name: the folder's own error
