"""One language per page: English, French or Japanese (Flask-Babel; catalogs in
``companion/web/translations``, how to refresh them in its README).

The language is the one ``?lang=xx`` asked for (remembered in a ``lang`` cookie, so that
every later page and htmx swap keeps it), else the browser's best match among those the page
speaks (``Accept-Language``), else English. An unknown ``lang`` is ignored."""

from __future__ import annotations

from urllib.parse import quote, urlencode

from flask import request
from flask_babel import Babel, get_locale, get_translations, gettext
from flask_babel import gettext as _

from companion import CompanionError, messages
from companion.game.cards import STANDARD_DECK, card_name_in
from companion.live.source_state import SourceState
from companion.web.pages import own_page

LANGUAGES = {"en": "English", "fr": "Français", "ja": "日本語"}
DEFAULT_LANGUAGE = "en"
LANG_COOKIE = "lang"
LANG_COOKIE_DAYS = 365


def asked_language() -> str | None:
    """The language this request names with ``?lang=``, when the page speaks it."""
    lang = (request.args.get("lang") or "").strip().lower()
    return lang if lang in LANGUAGES else None


def select_locale() -> str:
    chosen = asked_language() or request.cookies.get(LANG_COOKIE)
    if chosen in LANGUAGES:
        return chosen
    return request.accept_languages.best_match(list(LANGUAGES)) or DEFAULT_LANGUAGE


def language() -> str:
    """The page's language code (``en``, ``fr`` or ``ja``)."""
    return str(get_locale() or DEFAULT_LANGUAGE)


def switch_url(lang: str) -> str:
    """This page in ``lang``: the same address and query, ``lang`` replaced. A page answering
    a POST (an error page) switches on the match list instead."""
    # Only a page of this site that exists is repeated: an error page for an address such as
    # "/\\evil.example/" (a browser reads the backslash as a slash: another host) or one with
    # a tab in it switches on the match list instead.
    path = quote(request.path, safe="/-._~!$&'()*+,;=:@")
    if request.method != "GET" or request.url_rule is None or not own_page(path):
        return f"/?{urlencode({'lang': lang})}"
    # A ``next`` that is not a page of this site is not repeated (the join page drops it too).
    args = [
        (k, v)
        for k, v in request.args.items(multi=True)
        if k != "lang" and (k != "next" or own_page(v))
    ]
    return f"{path}?{urlencode(args + [('lang', lang)])}"


def card_name(card) -> str:
    """A card's name in the page's language (its English one where the deck has none). In
    Japanese, a standard card is written in kanji (松に鶴), not in the deck's romaji."""
    return card_name_in(card, language())


def say(value, deck=None) -> str:
    """An engine's words (a Message, a yaku's Named name...) in the page's language, by the
    catalogs; cards in them by their name in ``deck`` (the standard deck by default)."""
    translations = get_translations()
    return messages.say(
        value,
        translations.gettext,
        language(),
        lambda code: named_card(code, deck),
        translations.ngettext,
    )


def named_card(code: str, deck=None) -> str:
    """A card as a log line names it: its name in the page's language and its code."""
    try:
        card = (deck or STANDARD_DECK).card(str(code))
    except CompanionError:
        return str(code)
    return f"{card_name(card)} ({card.code})"


def camera_states() -> dict[str, str]:
    """The camera's states (``/live/status``'s ``camera``) as the page names them."""
    return {
        SourceState.OFF: _("off"),
        SourceState.CONNECTING: _("connecting"),
        SourceState.LIVE: _("live"),
        SourceState.LOST: _("lost"),
        SourceState.ENDED: _("ended"),
    }


def script_words() -> dict:
    """The words the page's scripts write themselves (``data-words`` on the body)."""
    return {
        "camera": camera_states(),
        "camera_says": _("Camera: %(text)s", text="{text}"),
        "unreachable": _("The server cannot be reached; is it still running?"),
        "error": _("Error %(status)s", status="{status}"),
    }


def rule_text(text) -> str:
    """A rule file's own words (an option's label or description, a preset's title) in the
    page's language when the catalogs know them, else as the file wrote them. Plain text:
    escaped where it is shown (a rule file can come from anywhere)."""
    return gettext(str(text)) if text else ""


def extract_rule_texts(fileobj, keywords, comment_tags, options):
    """A Babel extractor for rule files (babel.cfg): the title of the game and each option's
    label and description, the words the new-match form shows."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    data = tomllib.loads(fileobj.read().decode("utf-8"))
    texts = [data.get("game", {}).get("title")]
    for option in (data.get("options") or {}).values():
        texts += [option.get("label"), option.get("description")]
    for text in texts:
        if isinstance(text, str) and text:
            yield 0, "_", text, []


def _template_gettext():
    """The templates' ``_``/``gettext`` and ``ngettext``: Jinja's own (the translation filled
    with its escaped parameters, ``num`` the count of ``ngettext``), French elided where a
    parameter starts with a vowel ("Photo d’avril", as the engines' sentences are)."""
    from flask_babel import get_translations
    from jinja2 import pass_context
    from markupsafe import Markup

    from companion.messages import elide

    def fill(context, text, variables):
        if variables and language() == "fr":
            text = elide(text, {k: str(v) for k, v in variables.items()})
        if context.eval_ctx.autoescape:
            text = Markup(text)
        return text % variables

    @pass_context
    def gettext(context, string, **variables):
        return fill(context, get_translations().ugettext(string), variables)

    @pass_context
    def ngettext(context, singular, plural, num, **variables):
        variables.setdefault("num", num)
        return fill(context, get_translations().ungettext(singular, plural, num), variables)

    return {"_": gettext, "gettext": gettext, "ngettext": ngettext}


def init_app(app) -> None:
    Babel(app, locale_selector=select_locale, default_translation_directories="translations")
    app.jinja_env.globals.update(_template_gettext())
    app.add_template_filter(say, "say")
    app.add_template_filter(rule_text, "rule_text")

    @app.context_processor
    def language_for_templates():
        return {
            "page_lang": language(),
            "languages": LANGUAGES,
            "lang_url": switch_url,
            "camera_states": camera_states,
            "script_words": script_words,
        }

    @app.after_request
    def remember_language(response):
        lang = asked_language()
        if lang is not None:
            response.set_cookie(
                LANG_COOKIE, lang, max_age=LANG_COOKIE_DAYS * 86400, samesite="Lax", httponly=True
            )
        if request.endpoint != "static":  # the same files in every language
            response.vary.add("Accept-Language")
            response.vary.add("Cookie")
        return response
