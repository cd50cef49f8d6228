"""The match list and the new-match form (option toggles generated from the rule file)."""

from __future__ import annotations

from flask import Blueprint, current_app, redirect, request, url_for

from companion.web.views import WebError, is_htmx, render, store

bp = Blueprint("matches", __name__)

MAX_NAME_LENGTH = 24


def _presets() -> list[tuple[str, str]]:
    from companion.rules import RuleSet

    presets = []
    for name in RuleSet.presets():
        try:
            presets.append((name, RuleSet.load(name).title or name))
        except Exception:  # noqa: BLE001 - a broken preset file must not take the page down
            continue
    return presets


def _ruleset(name: str):
    from companion.rules import RuleSet

    if not name:
        raise WebError("Choose a rule preset.", 400)
    if name not in RuleSet.presets():
        raise WebError(f"There is no rule preset {name!r}.", 400)
    return RuleSet.load(name)


@bp.get("/")
def index():
    from companion.rules import RuleSet

    presets = _presets()
    default = (
        "livret" if any(p == "livret" for p, _ in presets) else (presets[0][0] if presets else "")
    )
    rules = RuleSet.load(default) if default else None
    return render(
        "index.html",
        None,
        matches=store().matches(),
        presets=presets,
        rules=rules,
        chosen=default,
        invite=_invite(),
    )


def _invite() -> dict | None:
    """The join code and its QR code, shown to those who already joined (to invite others)."""
    from companion.web.auth import can_change, join_qr_svg

    code = current_app.config.get("JOIN_CODE")
    if not code or not can_change():
        return None
    base = current_app.config.get("PUBLIC_URL") or request.host_url.rstrip("/")
    url = f"{base}/join?code={code}"
    return {"code": code, "url": url, "qr": join_qr_svg(url)}


@bp.get("/new/options")
def options():
    rules = _ruleset(request.args.get("rules", ""))
    return render("_options.html", "_options.html", rules=rules)


def _players_from_form(form, rules) -> list[str]:
    names = []
    for i in (1, 2, 3):
        name = " ".join((form.get(f"player_{i}") or "").split())
        if name:
            names.append(name)
    if len(names) < 2:
        raise WebError("Give at least two player names.", 400)
    if any(len(n) > MAX_NAME_LENGTH for n in names):
        raise WebError(f"A player name can be at most {MAX_NAME_LENGTH} characters.", 400)
    if len({n.casefold() for n in names}) != len(names):
        raise WebError("Two players have the same name; give each a different one.", 400)
    allowed = tuple(getattr(rules, "players", (2,)))
    if len(names) not in allowed:
        counts = " or ".join(str(n) for n in allowed)
        raise WebError(f"The {rules.name} rules are for {counts} players, not {len(names)}.", 400)
    return names


@bp.post("/matches")
def create():
    form = request.form
    rules = _ruleset(form.get("rules", ""))
    players = _players_from_form(form, rules)
    try:
        rounds = int(form.get("rounds") or rules.default_rounds)
    except ValueError:
        raise WebError("The number of rounds must be 6 or 12.", 400) from None
    if rounds not in tuple(rules.rounds):
        allowed = " or ".join(str(n) for n in rules.rounds)
        raise WebError(f"The {rules.name} rules play {allowed} rounds, not {rounds}.", 400)
    known = {o.id for o in rules.options}
    unknown = sorted(k[4:] for k in form if k.startswith("opt_") and k[4:] not in known)
    if unknown:
        raise WebError(f"The {rules.name} rules have no option {unknown[0]!r}.", 400)
    options = {o.id: f"opt_{o.id}" in form for o in rules.options}
    oya_field = (form.get("oya") or "1").strip()
    if not oya_field.isdigit() or not 1 <= int(oya_field) <= len(players):
        raise WebError("Choose which player is Oya (the first dealer).", 400)
    oya = players[int(oya_field) - 1]
    title = " ".join((form.get("title") or "").split())[:80] or None
    match_id = store().create_match(
        players=players, rules=rules.name, rounds=rounds, options=options, oya=oya, title=title
    )
    target = url_for("match.page", match_id=match_id)
    if is_htmx():
        resp = current_app.response_class("", 204)
        resp.headers["HX-Redirect"] = target
        return resp
    return redirect(target, 303)
