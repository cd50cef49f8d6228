"""What every command module of ``companion`` shares: the ``main`` group (its help sections,
the lab's commands loaded only when run, the one-sentence answer to a bug), turning bad input
into exit code 2 and one sentence (``fail``, ``friendly_errors``), and the options several
commands take (``model_option``, ``SEED``, ``DB_OPTION_HELP``...).

The commands themselves are in the modules listed in ``companion.cli.COMMAND_MODULES``; this
module imports none of them.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
from pathlib import Path

import click

from companion import CompanionError, __version__

# Set to see a bug's traceback rather than the one sentence the command line prints.
TRACEBACK_VARIABLE = "COMPANION_TRACEBACK"
_BIDI_CONTROLS = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))


def terminal_safe(text: str, keep: str = "\n") -> str:
    """``text`` with control characters (ESC, BEL, NUL... and bidi overrides) written as
    ``\\x1b``-style escapes, so that a name typed on the tablet cannot drive the terminal."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): that byte
            out.append(f"\\x{code - 0xDC00:02x}")
            continue
        if ch in keep or not (code < 0x20 or 0x7F <= code < 0xA0 or code in _BIDI_CONTROLS):
            out.append(ch)
        else:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


def fail(message: str) -> None:
    """Print one sentence to stderr and exit with code 2 (bad input)."""
    text = terminal_safe(str(message), keep="")
    # a name quoted with repr() shows a byte that was not UTF-8 as '\udcff': say the byte
    text = _ESCAPED_BYTE.sub(lambda found: f"\\x{found.group(1)}", text)
    click.echo(f"Error: {text}", err=True)
    sys.exit(2)


_ESCAPED_BYTE = re.compile(r"\\udc([89a-f][0-9a-f])")


def friendly_errors(func):
    """Turn CompanionError (and other bad-input errors) into ``fail``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except CompanionError as exc:
            fail(str(exc))

    return wrapper


def echo_json(obj) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


# ``companion --help`` lists the player's commands first, then the vision ones, then any other
# registered command, then the lab's. Names not registered (yet) are left out.
HELP_SECTIONS = (
    (
        "Playing",
        (
            "serve",
            "demo",
            "run",
            "summary",
            "matches",
            "replay",
            "score",
            "rules",
            "hanamikoji",
            "deck",
        ),
    ),
    ("Keeping matches", ("stats", "export", "import", "backup", "rename", "archive", "delete")),
    (
        "Cards and camera",
        ("detect", "eval", "bench", "bench-pipeline", "render", "simulate", "bench-live"),
    ),
    ("Tablet", ("bench-page",)),
)
# Other distributions add commands as sqlite-utils plugins do: an entry point in the group
# ``companion.commands`` naming a click command (the lab registers train, fit-acceptance and
# ablate-augmentation so). They are loaded only when run. The product keeps only the hint for
# the lab's commands, so that ``companion train`` without the lab says how to install it.
PLUGIN_GROUP = "companion.commands"
LAB_COMMANDS = {
    "train": "Train the recognizer on synthetic scenes, export ONNX.",
    "fit-acceptance": "Fit the learned acceptance rule to a model's nets.",
    "ablate-augmentation": "What render realism and augmentation are worth.",
}


def plugin_entry_points() -> dict:
    """The commands other installed distributions register, by name (not loaded)."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=PLUGIN_GROUP)}


def lab_missing(name: str) -> click.Command:
    """A command that says in one sentence how to install the lab."""

    @click.command(
        name,
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def missing():
        fail(
            f"`companion {name}` is part of the lab, which is not installed: "
            "from a clone of the repository, run pip install -e lab."
        )

    missing.help = LAB_COMMANDS.get(name, "")
    return missing


def plugin_command(name: str) -> click.Command | None:
    """The registered command ``name`` (loaded now), the lab's hint when the lab is missing or
    broken off, or None for a name nobody registers."""
    entry = plugin_entry_points().get(name)
    if entry is not None:
        try:
            command = entry.load()
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("companion_lab"):
                raise
        else:
            command.name = name
            return command
    return lab_missing(name) if name in LAB_COMMANDS else None


class CompanionGroup(click.Group):
    """The ``companion`` group: commands listed by section, the lab's loaded only when run."""

    def list_commands(self, ctx):
        names = super().list_commands(ctx)
        ordered = [n for _, section in HELP_SECTIONS for n in section if n in names]
        ordered += [n for n in names if n not in ordered]
        plugins = [*plugin_entry_points(), *LAB_COMMANDS]
        return ordered + [n for n in dict.fromkeys(plugins) if n not in names]

    def get_command(self, ctx, name):
        command = super().get_command(ctx, name)
        if command is None:
            return plugin_command(name)
        return command

    def invoke(self, ctx):
        """Run the command; a bug (any exception that is not bad input) is one sentence and
        exit code 1 instead of a traceback, unless $COMPANION_TRACEBACK is set (the tests set
        it, so that a bug still fails them with its traceback)."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - the last resort, for bugs only
            if os.environ.get(TRACEBACK_VARIABLE) or isinstance(exc, BrokenPipeError):
                raise
            click.echo(
                f"Error: the companion failed unexpectedly ({type(exc).__name__}); this is a "
                f"bug, please report it with the command you ran ({TRACEBACK_VARIABLE}=1 "
                "shows the details).",
                err=True,
            )
            sys.exit(1)

    def format_commands(self, ctx, formatter):
        names = super().list_commands(ctx)
        width = max(45, formatter.width - 26)  # the short help, after a name of up to 20

        def short(name):
            return self.commands[name].get_short_help_str(width)

        shown = set()
        for title, section in HELP_SECTIONS:
            rows = [(n, short(n)) for n in section if n in names]
            shown.update(n for n, _ in rows)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [(n, short(n)) for n in names if n not in shown]
        if rest:
            with formatter.section("More"):
                formatter.write_dl(rest)
        plugins = {n: LAB_COMMANDS.get(n, "") for n in plugin_entry_points()} | LAB_COMMANDS
        with formatter.section("Lab (pip install -e lab)"):
            formatter.write_dl([(n, h) for n, h in plugins.items() if n not in names])


@click.group(cls=CompanionGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="companion")
def main():
    """Hanafuda Companion: follow a physical Hanafuda game from camera to score."""


# What the command modules share: the options and arguments several of them take.

RULES_OPTION_HELP = "Preset name (see `companion rules list`) or path to a rule file (.toml)."


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that refuses nan, which compares false with any bound and so
    passes every range, and the infinities (inf passes an open-ended range)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


# Every random stream (numpy's generators, the simulator's) takes a seed from 0 to 2**32 - 1.
SEED = click.IntRange(0, 2**32 - 1)



def pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.2f} %"


# The recognizer's model, for every command that runs it (vision, live).
model_option = click.option(
    "--model",
    "model_path",
    type=click.Path(),
    help="Model metadata JSON or its folder (default: the committed model, companion/models).",
)


DB_OPTION_HELP = "SQLite database (default: $COMPANION_DB, else the per-user data folder)."


def open_store_for_reading(db):
    """The store at ``db`` (or the default one); a named file that does not exist is an
    error rather than a new empty database."""
    from companion.store import MatchStore, StoreError

    try:
        missing = db is not None and str(db) != ":memory:" and not Path(db).expanduser().exists()
    except OSError as exc:  # a folder this user cannot read
        raise StoreError(f"Cannot open the database {db}: {exc.strerror}.") from None
    if missing:
        raise StoreError(f"There is no database at {db}.")
    return MatchStore.open(db)


def database_exists(path: Path) -> bool:
    """Whether there is a database at ``path``; a folder this user cannot read is said in one
    sentence."""
    try:
        return path.exists()
    except OSError as exc:
        raise CompanionError(f"Cannot open the database {path}: {exc.strerror}.") from None


def page_address(host: str, port: int) -> str:
    """The address to open: on the LAN, this machine's LAN address in https."""
    from companion.web import hosts

    if hosts.is_loopback(host):
        return f"http://{hosts.url_host(host)}:{port}/"
    return f"https://{hosts.url_host(hosts.lan_address(host))}:{port}/"


def use_lan_https(app, host: str) -> None:
    """Serve the LAN in https (a phone lends its camera only to a secure page), with the
    certificate kept in the user's data folder, made now the first time."""
    from companion.web import tls

    cert_path, made = tls.serve_lan_in_https(app, host)
    if made:
        click.echo(f"Made this server's certificate for https: {cert_path}")


def say_lan_https(app, host: str, port: int) -> None:
    """What a player's browser will say the first time, and this machine's plain address."""
    from companion.web import hosts, tls

    cert_path = app.config.get("TLS_FILES", (None,))[0]
    if cert_path is not None:
        click.echo(tls.first_visit_sentence(hosts.lan_address(host), cert_path))
    if host.strip("[]") in ("0.0.0.0", "::", ""):
        click.echo(f"On this machine: http://127.0.0.1:{port}/")
