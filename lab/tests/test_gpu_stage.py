"""lab/gpu-stage.sh: a training stage sized for a lent GPU machine's device time, run here on
the CPU with a handful of scenes through the same four steps (prepare, device, anneal, finish); and
what makes such a stage's minutes count (one host-to-device copy of the augmentation a step)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from companion.simulator import synth

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "lab" / "gpu-stage.sh"
SHARED = synth.find_shared_dir()
pytestmark = pytest.mark.skipif(
    not (SHARED / "decks").is_dir() or shutil.which("bash") is None,
    reason="reference decks (../shared/decks) or bash not available",
)


def run_script(*args, env=None, cwd=None, script=SCRIPT):
    full_env = {**os.environ, "PYTHON": sys.executable, **(env or {})}
    return subprocess.run(
        ["bash", str(script), *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=600,
    )


def test_prepare_copies_the_training_decks_into_an_ignored_shared_folder(tmp_path):
    (tmp_path / "lab").mkdir()
    shutil.copy(SCRIPT, tmp_path / "lab" / SCRIPT.name)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

    def prepare():
        return run_script(
            "prepare",
            env={"COMPANION_SHARED": str(SHARED)},
            script=tmp_path / "lab" / SCRIPT.name,
        )

    result = prepare()
    assert result.returncode == 0, result.stdout + result.stderr
    decks = sorted(p.name for p in (tmp_path / "shared" / "decks").iterdir())
    # the held-out deck stays behind: the stage trains on the three training decks only
    assert decks == ["hwatu-korean", "modern-mantia", "traditional-ngs"]
    assert (tmp_path / "shared" / "backgrounds").is_dir()
    assert "/shared/" in (tmp_path / ".git" / "info" / "exclude").read_text().splitlines()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True
    ).stdout
    assert "shared" not in status and "lab/" in status  # shared/ is ignored, not committed
    # twice: the exclusion is not written again
    assert prepare().returncode == 0
    assert (tmp_path / ".git" / "info" / "exclude").read_text().count("/shared/") == 1


def test_a_stage_runs_detached_is_collected_annealed_then_exported_fitted_and_paired(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    work, sent = tmp_path / "work", tmp_path / "sent"
    stage = {
        "STAGE_WORK": str(work),
        "OUT": str(sent),
        "STAGE_SCENES": "4",
        "STAGE_LENS": "2",
        "STAGE_BACKS": "2",
        "STAGE_MINUTES": "0.1",
        "STAGE_WORKERS": "2",
        "STAGE_DEVICE": "cpu",
        "STAGE_SEED": "1981",
    }
    # no stage yet: nothing to anneal, and nothing started
    early = run_script("anneal", "0.1", "300", env=stage)
    assert early.returncode == 2 and "no finished stage" in early.stdout
    assert not (work / "anneal.pid").exists()
    # the first call returns before the stage ends: it says so, and sends the log back
    first = run_script("device", "0", env=stage)
    assert first.returncode == 3, first.stdout + first.stderr
    assert "still running" in first.stdout and (sent / "stage.log").is_file()
    pid = (work / "pid").read_text().strip()
    # while it runs (it trains 6 s at least, then exports) there is still nothing to anneal
    assert run_script("anneal", "0.1", "300", env=stage).returncode == 2
    # the next call starts nothing new: it waits on the same stage, then sends the model back
    second = run_script("device", "300", env=stage)
    assert second.returncode == 0, second.stdout + second.stderr + (sent / "stage.log").read_text()
    assert (work / "pid").read_text().strip() == pid
    assert "stage finished" in second.stdout
    meta = json.loads((sent / "recognizer.json").read_text())
    last = meta["training"]["stages"][-1]
    assert last["resumed_from"] == "companion/models" and last["device"] == "cpu"
    assert last["scenes"] == 4 and last["lens_scenes"]["scenes"] == 2
    assert "synth.scene_seed(1981," in last["scene_seeds"]
    assert (sent / "localizer.pt").is_file() and (sent / "classifier.pt").is_file()
    # a call after the end sends the same files back at once
    assert run_script("device", "300", env=stage).returncode == 0

    # the next call: the stage's nets on, on the same scenes, at 0.3 times the learning rate
    annealed = tmp_path / "annealed"
    anneal = run_script("anneal", "0.1", "300", env={**stage, "OUT": str(annealed)})
    assert anneal.returncode == 0, anneal.stdout + anneal.stderr
    assert (annealed / "anneal.log").is_file() and (annealed / "classifier.pt").is_file()
    on = json.loads((annealed / "recognizer.json").read_text())["training"]["stages"]
    assert on[-2] == last and on[-1]["resumed_from"] == str(work / "out")
    assert on[-1]["scene_seeds"] == last["scene_seeds"] and on[-1]["minutes"] == 0.1
    for net in ("localizer", "classifier"):
        rate = last["learning_rates"][net]
        assert on[-1]["learning_rates"][net] == pytest.approx(0.3 * rate)

    out = tmp_path / "stage"
    committed = (ROOT / "companion" / "models" / "recognizer.json").read_bytes()
    finish = run_script(
        "finish",
        str(annealed),
        str(out),
        "1982",
        env={"FINISH_RULE_N": "30", "FINISH_TREES": "5", "FINISH_EVAL_N": "3"},
        cwd=tmp_path,
    )
    assert finish.returncode == 0, finish.stdout + finish.stderr
    exported = json.loads((out / "recognizer.json").read_text())
    assert exported["training"]["stages"][-2:] == on[-2:]  # both runs' records are kept
    assert exported["settings"]["accept_above"] == 0.775 and exported["settings"]["accept_trees"]
    evals = sorted(p.name for p in out.glob("eval-*.json"))
    assert evals == [
        "eval-hwatu-korean-1984.json",
        "eval-modern-mantia-1983.json",
        "eval-traditional-ngs-1982.json",
    ]
    paired = json.loads((out / evals[0]).read_text())
    assert paired["images"] == 3 and "difference" in paired["against"]
    # ...and with a control: the committed nets, their rule fitted again the same way
    control = json.loads((tmp_path / "stage.control" / "recognizer.json").read_text())
    assert control["localizer"] == json.loads(committed)["localizer"]
    assert control["training"]["acceptance"]["scenes_per_deck"] == 30
    assert (
        ROOT / "companion" / "models" / "recognizer.json"
    ).read_bytes() == committed  # left as it was
    assert sorted(p.name for p in out.glob("control-*.json")) == [
        "control-" + name[len("eval-") :] for name in evals
    ]
    pooled = [line for line in finish.stdout.splitlines() if line.startswith("| pooled |")]
    assert pooled[0].count("%") == 3  # the stage, the committed model, the control
    # ...and the stage averaged with the committed nets, its rule fitted again, against the control
    mean = json.loads((tmp_path / "stage.mean" / "recognizer.json").read_text())
    assert mean["export"]["averaged_with"] == str(out)
    assert mean["training"]["stages"][-3:-1] == on[-2:]
    assert mean["training"]["stages"][-1]["averaged"]["share"] == 0.5
    assert mean["training"]["acceptance"]["scenes_per_deck"] == 30
    assert sorted(p.name for p in out.glob("mean-*.json")) == [
        "mean-" + name[len("eval-") :] for name in evals
    ]
    averaged = json.loads((out / "mean-hwatu-korean-1984.json").read_text())
    assert averaged["images"] == 3 and "difference" in averaged["against"]
    assert (
        "averaged with the committed nets" in finish.stdout
        and "against the control" in finish.stdout
    )
    assert len(pooled) == 2 and pooled[1].count("%") == 2

    # nothing sent back: a clear message, no export
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = run_script("finish", str(empty), str(tmp_path / "none"), "1985")
    assert nothing.returncode == 2 and "neither recognizer.json" in nothing.stdout
    assert not (tmp_path / "none").exists()


def test_training_finds_decks_where_companion_shared_points(tmp_path, monkeypatch):
    # on a device machine the decks travel inside the checkout, not in ../shared
    from companion_lab.training import deck_dir

    (tmp_path / "decks" / "some-deck").mkdir(parents=True)
    monkeypatch.setenv("COMPANION_SHARED", str(tmp_path))
    assert deck_dir("some-deck") == tmp_path / "decks" / "some-deck"
    monkeypatch.delenv("COMPANION_SHARED")
    beside_repo = ROOT.parent / "shared" / "decks" / "some-deck"
    assert deck_dir("some-deck") == beside_repo
    assert deck_dir(str(tmp_path / "decks" / "some-deck")) == tmp_path / "decks" / "some-deck"


def test_augment_sends_its_random_numbers_in_one_copy_and_repeats_for_a_seed(monkeypatch):
    # on a GPU each copy from host memory waits for the work queued before it: one per step
    torch = pytest.importorskip("torch")
    import numpy as np
    from companion_lab import training

    sent = []
    real = training.to_device
    monkeypatch.setattr(training, "to_device", lambda a, d: sent.append(a.shape) or real(a, d))
    x = torch.rand(64, 3, 80, 48, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(5)
    first = training.augment(x.clone(), np.random.default_rng(7))
    assert len(sent) == 1 and sent[0][0] > 64 * 9  # the colour matrices and more, at once
    torch.manual_seed(5)
    again = training.augment(x.clone(), np.random.default_rng(7))
    assert torch.equal(first, again)
    assert first.shape == x.shape and 0 <= first.min() and first.max() <= 1
    assert not torch.equal(first, x)  # it did change the pixels
    # a batch of one that draws no gamma, glare or blur still works
    one = training.augment(torch.rand(1, 3, 8, 8), np.random.default_rng(0), glare=False)
    assert one.shape == (1, 3, 8, 8)
