"""The match list and the new-match form (option toggles generated from the rule file)."""

from __future__ import annotations

import json
import threading

from flask import Blueprint, current_app, redirect, request, url_for
from flask_babel import gettext as _

from companion import CompanionError
from companion.game.rules import RuleSet
from companion.stats import statistics
from companion.store import MAX_EXPORT_BYTES, load_export
from companion.web.auth import can_change, join_qr_svg
from companion.web.errors import WebError
from companion.web.event_log import team_label
from companion.web.forms import whole_number
from companion.web.games import new_match_form, of_match
from companion.web.match import taught_names
from companion.web.pages import go_to, render, store

bp = Blueprint("matches", __name__)

MAX_NAME_LENGTH = 24


def _presets() -> list[tuple[str, str]]:
    presets = []
    for name in RuleSet.presets():
        try:
            presets.append((name, RuleSet.load(name).title or name))
        except Exception:  # noqa: BLE001 - a broken preset file must not take the page down
            continue
    return presets


def _ruleset(name: str):
    if not name:
        raise WebError(_("Choose a rule preset."), 400)
    if name not in RuleSet.presets():
        raise WebError(_("There is no rule preset %(name)r.", name=name), 400)
    return RuleSet.load(name)


@bp.get("/")
def index():
    presets = _presets()
    default = (
        "livret" if any(p == "livret" for p, _ in presets) else (presets[0][0] if presets else "")
    )
    setup = setup_context(RuleSet.load(default), {}) if default else {"rules": None}
    matches = store().matches()
    return render(
        "index.html",
        None,
        matches=matches,
        standings={m.id: standing(m) for m in matches[:STANDINGS_LISTED]},
        presets=presets,
        preset=default,
        invite=_invite(),
        **setup,
    )


STANDINGS_LISTED = 30  # the newest matches show their score in the list


def standing(match) -> dict | None:
    """A listed match's score: each side's total, and the round it is at. The score kept with
    the match's last change where there is one (no replay); else its replay. None when its
    log cannot be replayed (the match page then says why; the list must not fail for it)."""
    from companion.store import standing_of

    kept = match.current_standing
    if kept is not None:
        try:
            return _shown_standing(kept)
        except (KeyError, TypeError, ValueError):  # a row edited by hand: replayed instead
            pass
    try:
        return _shown_standing(standing_of(store().state(match.id)))
    except CompanionError:  # one damaged log must not take the list down
        return None


def _shown_standing(kept: dict) -> dict:
    return {
        "totals": [(team_label(side, members), total) for side, members, total in kept["sides"]],
        "round": kept["round"],
        "rounds": kept["rounds"],
    }


def _invite() -> dict | None:
    """The join code and its QR code, shown to those who already joined (to invite others)."""
    code = current_app.config.get("JOIN_CODE")
    if not code or not can_change():
        return None
    base = current_app.config.get("PUBLIC_URL") or request.host_url.rstrip("/")
    url = f"{base}/join?code={code}"
    return {"code": code, "url": url, "qr": join_qr_svg(url)}


@bp.get("/new/options")
def options():
    other_game = new_match_form(request.args.get("rules"))
    if other_game is not None:  # another game: its own form
        return other_game.options(request.args)
    rules = _ruleset(request.args.get("rules", ""))
    return render("_options.html", "_options.html", **setup_context(rules, request.args))


# The form's player fields: at most 3 players, 4 (in two teams) when the teams option is on.
PLACEHOLDERS = ("Aki", "Ben", "Chie", "Dan")


def setup_context(rules, values) -> dict:
    """What the rules-dependent part of the new-match form shows: the option toggles (as sent
    back by the page when it re-renders them, else the rule file's defaults), and the player
    fields those options call for, keeping what was typed."""
    chosen = {o.id: bool(o.default) for o in rules.options}
    if values.get("options_for") == rules.name:  # a re-render after a toggle: keep the toggles
        chosen = {o.id: f"opt_{o.id}" in values for o in rules.options}
    playing = rules.with_options(chosen)
    teams = bool(playing.match.teams)
    seats = 4 if teams else max(min(max(playing.players), 3), 2)
    same_preset = values.get("options_for") == rules.name  # else a new preset: its defaults
    rounds = (whole_number(values.get("rounds")) if same_preset else None) or playing.default_rounds
    oya = whole_number(values.get("oya")) or 1
    return {
        "rules": playing,
        "chosen": chosen,
        "teams": teams,
        "seats": seats,
        "required": seats if teams else min(playing.players),
        "names": [" ".join((values.get(f"player_{i}") or "").split()) for i in range(1, 5)],
        "team_names": [" ".join((values.get(f"team_{i}") or "").split()) for i in (1, 2)],
        "placeholders": PLACEHOLDERS,
        "rounds_chosen": rounds if rounds in playing.rounds else playing.default_rounds,
        "oya_chosen": oya if 1 <= oya <= seats else 1,
    }


def _options_from_form(form, rules) -> dict[str, bool]:
    known = {o.id for o in rules.options}
    unknown = sorted(k[4:] for k in form if k.startswith("opt_") and k[4:] not in known)
    if unknown:
        raise WebError(
            _(
                "The %(rules)s rules have no option %(option)r.",
                rules=rules.name,
                option=unknown[0],
            ),
            400,
        )
    return {o.id: f"opt_{o.id}" in form for o in rules.options}


def _names_from_form(form) -> list[str]:
    """The player names typed in, in seat order (empty fields skipped)."""
    names = []
    for i in (1, 2, 3, 4):
        name = " ".join((form.get(f"player_{i}") or "").split())
        if name:
            names.append(name)
    if any(len(n) > MAX_NAME_LENGTH for n in names):
        raise WebError(_("A player name can be at most %(n)d characters.", n=MAX_NAME_LENGTH), 400)
    if len({n.casefold() for n in names}) != len(names):
        raise WebError(_("Two players have the same name; give each a different one."), 400)
    return names


def _players_from_form(names, rules) -> list[str]:
    if len(names) < 2:
        raise WebError(_("Give at least two player names."), 400)
    allowed = tuple(getattr(rules, "players", (2,)))
    if len(names) not in allowed:
        counts = _(" or ").join(str(n) for n in allowed)
        raise WebError(
            _(
                "The %(rules)s rules are for %(counts)s players, not %(n)d.",
                rules=rules.name,
                counts=counts,
                n=len(names),
            ),
            400,
        )
    return names


def _teams_from_form(form, names) -> tuple[list[str], dict | None]:
    """Players and teams for the engine. The seating (4 players, 1 & 3 against 2 & 4) is the
    engine's to check, so that a wrong count gets its sentence; unnamed teams are left to it."""
    given = [" ".join((form.get(f"team_{i}") or "").split()) for i in (1, 2)]
    if len(names) != 4 or not any(given):
        return names, None
    if any(len(n) > MAX_NAME_LENGTH for n in given):
        raise WebError(_("A team name can be at most %(n)d characters.", n=MAX_NAME_LENGTH), 400)
    seats = ((names[0], names[2]), (names[1], names[3]))
    team_names = [given[i] or f"{a} & {b}" for i, (a, b) in enumerate(seats)]
    folded = [n.casefold() for n in names + team_names]
    clash = next((n for n in team_names if folded.count(n.casefold()) > 1), None)
    if clash:
        raise WebError(
            _(
                "The team name %(name)r is already taken; give each team and player its own name.",
                name=clash,
            ),
            400,
        )
    return team_names, {team: list(seat) for team, seat in zip(team_names, seats, strict=True)}


def _taught_deck() -> dict | None:
    """The names of the deck the camera is taught (``run --deck``), for the new match to keep."""
    names = taught_names()
    return None if names is None else names.names_data()


@bp.post("/matches")
def create():
    form = request.form
    other_game = new_match_form(form.get("rules"))
    if other_game is not None:  # another game: its own form
        return other_game.create(form)
    rules = _ruleset(form.get("rules", ""))
    options = _options_from_form(form, rules)
    playing = rules.with_options(options)
    names = _names_from_form(form)
    if playing.match.teams:
        players, teams = _teams_from_form(form, names)
    else:
        players, teams = _players_from_form(names, playing), None
    rounds = whole_number(form.get("rounds") or rules.default_rounds)
    if rounds is None:
        allowed = _(" or ").join(str(n) for n in playing.rounds)
        raise WebError(_("The number of rounds must be %(allowed)s.", allowed=allowed), 400)
    if rounds not in tuple(playing.rounds):
        allowed = _(" or ").join(str(n) for n in playing.rounds)
        raise WebError(
            _(
                "The %(rules)s rules play %(allowed)s rounds, not %(n)d.",
                rules=rules.name,
                allowed=allowed,
                n=rounds,
            ),
            400,
        )
    oya_seat = whole_number(form.get("oya") or "1")
    if oya_seat is None or not 1 <= oya_seat <= len(names):
        raise WebError(_("Choose which player is Oya (the first dealer)."), 400)
    oya = names[oya_seat - 1]  # with teams, a member: the engine seats his team as Oya
    title = " ".join((form.get("title") or "").split())[:80] or None
    match_id = store().create_match(
        players=players,
        rules=rules.name,
        rounds=rounds,
        options=options,
        oya=oya,
        title=title,
        teams=teams,
        deck=_taught_deck(),
    )
    target = url_for("match.page", match_id=match_id)
    return go_to(target)


# -- keeping matches: rename, delete, export, import ----------------------------------------


def _back_to_the_list():
    target = url_for("matches.index")
    return go_to(target)


@bp.post("/matches/<int:match_id>/rename")
def rename(match_id: int):
    store().rename_match(match_id, request.form.get("title"))
    return _back_to_the_list()


@bp.post("/matches/<int:match_id>/archive")
def archive(match_id: int):
    store().archive_match(match_id, request.form.get("archived", "1") != "0")
    return _back_to_the_list()


@bp.post("/matches/<int:match_id>/delete")
def delete(match_id: int):
    store().delete_match(match_id)
    return _back_to_the_list()


@bp.get("/matches/<int:match_id>/export")
def export(match_id: int):
    data = store().export_match(match_id)
    response = current_app.response_class(
        json.dumps(data, ensure_ascii=False, indent=2) + "\n", mimetype="application/json"
    )
    response.headers["Content-Disposition"] = f'attachment; filename="match-{match_id}.json"'
    return response


# Imports read at once: each holds its file and its parsed log in memory (some ten times the
# file's size) while the engine replays it, so that many sent together cannot take the
# server's memory. One more waits up to IMPORT_WAIT_SECONDS, then is told to try again.
IMPORTS_AT_ONCE = 2
IMPORT_WAIT_SECONDS = 10
_import_slots = threading.BoundedSemaphore(IMPORTS_AT_ONCE)


@bp.post("/matches/import")
def import_match():
    upload = request.files.get("file")
    if upload is None:
        raise WebError(_("Choose the exported match (a .json file) to import."), 400)
    if not _import_slots.acquire(timeout=IMPORT_WAIT_SECONDS):
        raise WebError(_("Other matches are being imported; try again in a moment."), 503)
    try:
        raw = upload.read(MAX_EXPORT_BYTES + 1)
        if len(raw) > MAX_EXPORT_BYTES:
            raise WebError(
                _(
                    "The file is larger than an export can be (%(n)d MB).",
                    n=MAX_EXPORT_BYTES // (1024 * 1024),
                ),
                413,
            )
        try:
            data = load_export(raw)
        except CompanionError:
            raise WebError(_("This file is not a JSON export of a match."), 400) from None
        del raw
        match_id = store().import_match(data)
    finally:
        _import_slots.release()
    target = url_for(of_match(match_id).page, match_id=match_id)
    return redirect(target, 303)


@bp.get("/stats")
def stats():
    return render("stats.html", None, figures=statistics(store()))
