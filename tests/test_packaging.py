"""The product apart from the lab: what a player installs imports neither torch nor the lab
(``lab/``, a distribution of its own), and a lab command says how to get the lab."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from companion.cli import main
from companion.cli.base import LAB_COMMANDS

ROOT = Path(__file__).resolve().parents[1]
# an import hook that refuses the lab and what only the lab needs, as a player's install would
WITHOUT_THE_LAB = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "companion_lab", "onnx"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Refuse())
"""


def run_python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_cli_the_web_app_and_the_recognizer_load_neither_torch_nor_the_lab():
    out = run_python(
        "import json, sys\n"
        "import companion.cli, companion.web, companion.recognizer\n"
        "companion.cli.main(['--help'], standalone_mode=False)\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('torch', 'companion_lab')]\n"
        "print(json.dumps(loaded))\n"
    )
    assert json.loads(out.splitlines()[-1]) == []


def test_every_product_module_imports_without_torch_or_the_lab():
    out = run_python(
        WITHOUT_THE_LAB + "import pkgutil, importlib, companion\n"
        "names = [m.name for m in pkgutil.walk_packages(companion.__path__, 'companion.')\n"
        "         if not m.name.endswith('__main__')]\n"
        "for name in names: importlib.import_module(name)\n"
        "print(len(names))\n"
    )
    assert int(out.split()[-1]) >= 20  # the product's modules, every one imported


def test_no_product_source_imports_torch():
    sources = [p for p in (ROOT / "companion").rglob("*.py")]
    assert sources
    for path in sources:
        for line in path.read_text().splitlines():
            words = line.split()
            assert words[:2] not in (["import", "torch"], ["from", "torch"]), path


def test_a_lab_command_without_the_lab_says_in_one_sentence_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "companion_lab", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "companion_lab.cli", None)
    for name in LAB_COMMANDS:
        result = CliRunner().invoke(main, [name, "--out", "/tmp/x"])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "pip install -e lab" in lines[0], result.output
        assert "Traceback" not in result.output


def test_help_lists_the_players_commands_first_and_the_lab_last():
    text = CliRunner().invoke(main, ["--help"]).output
    positions = [text.index(f"  {name} ") for name in ("serve", "score", "detect", "train")]
    assert positions == sorted(positions), text
    assert "Lab (pip install -e lab)" in text


# What the game package must never load: the camera, the page and the database live at the edges.
NOT_IN_THE_GAME = ("numpy", "cv2", "flask", "flask_babel", "jinja2", "werkzeug", "sqlite3",
                   "sqlite_utils", "onnxruntime", "waitress", "torch")


def test_the_game_package_is_pure():
    out = run_python(
        "import importlib.abc, json, pkgutil, importlib, sys\n"
        f"REFUSED = {NOT_IN_THE_GAME!r}\n"
        "class Refuse(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in REFUSED:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "import companion.game\n"
        "names = [m.name for m in pkgutil.walk_packages(companion.game.__path__, 'companion.game.')]\n"
        "for name in names: importlib.import_module(name)\n"
        "from companion.game import engine, rules, scoring, hanamikoji\n"
        "state = engine.replay([engine.MatchStarted.new(['A', 'B'], 'livret', rounds=6)])\n"
        "scoring.score_hand(rules.RuleSet.load('koikoi-japan'), [])\n"
        "hanamikoji.replay([hanamikoji.HanamikojiStarted(players=('A', 'B'), first='A')])\n"
        "print(json.dumps(sorted(names)))\n"
    )
    names = json.loads(out.splitlines()[-1])
    assert "companion.game.engine" in names and "companion.game.registry" in names


def test_a_refused_module_really_fails_the_purity_check():
    # The check above must be able to fail: the same hook refuses numpy to a module that uses it.
    result = subprocess.run(
        [sys.executable, "-c",
         "import importlib.abc, sys\n"
         "class Refuse(importlib.abc.MetaPathFinder):\n"
         "    def find_spec(self, name, path=None, target=None):\n"
         "        if name.split('.')[0] == 'numpy':\n"
         "            raise ModuleNotFoundError(name, name=name)\n"
         "sys.meta_path.insert(0, Refuse())\n"
         "import companion.detections\n"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode != 0 and "numpy" in result.stderr


# A command registered by another distribution, as the lab registers its own (PLUGIN_GROUP).
@click.command("hello-plugin")
def hello_plugin():
    """Say hello from a plugin."""
    click.echo("hello from a plugin")


def test_a_command_registered_as_an_entry_point_runs_and_is_listed(monkeypatch):
    from importlib.metadata import EntryPoint

    import companion.cli.base as cli

    entry = EntryPoint("hello-plugin", f"{__name__}:hello_plugin", cli.PLUGIN_GROUP)
    monkeypatch.setattr(cli, "plugin_entry_points", lambda: {"hello-plugin": entry})
    result = CliRunner().invoke(main, ["hello-plugin"])
    assert result.exit_code == 0 and result.output == "hello from a plugin\n", result.output
    assert "hello-plugin" in CliRunner().invoke(main, ["--help"]).output
    assert CliRunner().invoke(main, ["no-such-command"]).exit_code == 2


def test_the_lab_registers_its_commands_through_the_entry_point_group():
    import tomllib

    lab = tomllib.loads((ROOT / "lab" / "pyproject.toml").read_text())
    registered = lab["project"]["entry-points"]["companion.commands"]
    assert set(registered) == set(LAB_COMMANDS)
    # each names a click command of the lab's own group, under the same name
    source = (ROOT / "lab" / "companion_lab" / "cli.py").read_text()
    for name, target in registered.items():
        module, _, attribute = target.partition(":")
        assert module == "companion_lab.cli"
        assert f'@main.command("{name}")' in source and f"def {attribute}(" in source
