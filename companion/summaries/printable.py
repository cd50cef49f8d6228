"""What every game's printable summary shares: the HTML templates' environment (one per
language), the inlined style sheet, the players' colours, and the PDF: headless Chromium's print
of the HTML when a Chromium exists, else a small built-in PDF writer (``PdfPage``,
``pdf_document``). ``companion.summaries.koikoi`` and ``companion.summaries.hanamikoji`` lay out
their own pages with these.
"""

from __future__ import annotations

import datetime
import functools
import os
import shutil
import subprocess
import tempfile
import unicodedata
from pathlib import Path

from companion.messages import say
from companion.resources import package_path

WEB_DIR = package_path("web")
CSS_PATH = WEB_DIR / "static" / "summary.css"
# Players' colours in the chart and the PDF (also used by summary.css's legend swatches).
PLAYER_COLOURS = ("#b3261e", "#1f5fa8", "#2e7d32", "#8e44ad")


def date_text(iso: str) -> str:
    try:
        return datetime.datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return iso


def escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


SUMMARY_LANGUAGES = ("en", "fr", "ja")  # the page's catalogs: companion/web/translations


@functools.lru_cache(maxsize=len(SUMMARY_LANGUAGES))
def environment(lang: str = "en"):
    # Built once per language: jinja2 then compiles the template once and checks the file for
    # changes; each language's words are installed once, so renders share nothing mutable.
    import gettext

    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(WEB_DIR / "templates")),
        autoescape=jinja2.select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    # English too: its catalog names what is not English at its source (a dealt hand's kind).
    translations = gettext.translation(
        "messages", str(WEB_DIR / "translations"), [lang], fallback=True
    )
    env.install_gettext_translations(translations, newstyle=True)

    # The engine's sentences and the rule files' names, said in the same language; the cards
    # in them by the page's ``name_card`` (code -> words) where it gives one.
    @jinja2.pass_context
    def say_filter(context, value):
        name_card = context.get("name_card")
        return say(
            value,
            translate=translations.gettext,
            lang=lang,
            name_card=name_card,
            translate_plural=translations.ngettext,
        )

    env.filters["say"] = say_filter
    return env


def render_page(template_name: str, summary, *, lang: str, back_url: str | None, **context) -> str:
    """A game's printable summary page (its template extends ``_summary_page.html``): a
    standalone HTML document, CSS inlined, its words in ``lang`` (en, fr, ja; English for any
    other). ``back_url``: a link back to the match, on screen only; ``context``: what the
    game's template needs besides (``totals``, the number in each player's box)."""
    from markupsafe import Markup

    lang = lang if lang in SUMMARY_LANGUAGES else "en"
    return (
        environment(lang)
        .get_template(template_name)
        .render(
            lang=lang,
            s=summary,
            css=Markup(CSS_PATH.read_text(encoding="utf-8")),
            colours=PLAYER_COLOURS,
            back_url=back_url,
            started=date_text(summary.created_at) if summary.created_at else "",
            printed=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            **context,
        )
    )


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def chromium_pdf(chromium: str, html: str, timeout: float) -> bytes | None:
    with tempfile.TemporaryDirectory(prefix="companion-pdf-") as tmp:
        page = Path(tmp) / "summary.html"
        out = Path(tmp) / "summary.pdf"
        page.write_text(html, encoding="utf-8")
        command = [
            chromium,
            "--headless",
            "--no-sandbox",  # needed when run as root (containers); the page is our own file
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-pdf-header-footer",
            f"--user-data-dir={tmp}/profile",
            f"--print-to-pdf={out}",
            page.as_uri(),
        ]
        try:
            subprocess.run(command, capture_output=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if out.exists() and out.read_bytes().startswith(b"%PDF"):
            return out.read_bytes()
    return None


class PdfPage:
    """Drawing operators for one page, in points from the top-left corner."""

    WIDTH, HEIGHT = 595.28, 841.89  # A4

    def __init__(self):
        self.ops: list[str] = []

    def text(self, x: float, y: float, text: str, size: float = 10, bold: bool = False):
        font = "F2" if bold else "F1"
        self.ops.append(
            f"BT /{font} {size:.1f} Tf {x:.2f} {self.HEIGHT - y:.2f} Td ({pdf_string(text)}) Tj ET"
        )

    def line(self, x1, y1, x2, y2, width: float = 0.5, colour=(0, 0, 0)):
        r, g, b = colour
        self.ops.append(
            f"{r:.3f} {g:.3f} {b:.3f} RG {width:.2f} w {x1:.2f} {self.HEIGHT - y1:.2f} m"
            f" {x2:.2f} {self.HEIGHT - y2:.2f} l S"
        )

    def polyline(self, points, width: float = 1.5, colour=(0, 0, 0)):
        if len(points) < 2:
            return
        r, g, b = colour
        path = " ".join(
            f"{x:.2f} {self.HEIGHT - y:.2f} {'m' if i == 0 else 'l'}"
            for i, (x, y) in enumerate(points)
        )
        self.ops.append(f"{r:.3f} {g:.3f} {b:.3f} RG {width:.2f} w {path} S 0 0 0 RG")

    def content(self) -> bytes:
        return "\n".join(self.ops).encode("latin-1")


def pdf_string(text: str) -> str:
    # The standard fonts speak WinAnsi (about Latin-1): "Sankō" becomes "Sanko", and what
    # has no Latin form (kanji...) becomes "?".
    safe = str(text).replace("×", "x").replace("·", "-").replace("—", "-").replace("−", "-")
    safe = "".join(latin1(ch) for ch in safe)
    return safe.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def latin1(ch: str) -> str:
    if ord(ch) < 256:
        return ch
    base = unicodedata.normalize("NFKD", ch)[0]
    return base if ord(base) < 256 else "?"


def hex_colour(colour: str) -> tuple[float, float, float]:
    colour = colour.lstrip("#")
    return tuple(int(colour[i : i + 2], 16) / 255 for i in (0, 2, 4))


def pdf_document(contents: list[bytes]) -> bytes:
    """Assemble objects, xref table and trailer around the pages' content streams."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below, once the pages object number is known
    pages_id = add(b"")
    regular = add(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )
    bold = add(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"
    )
    kids = []
    for content in contents:
        stream = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        kids.append(
            add(
                (
                    f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 {PdfPage.WIDTH} "
                    f"{PdfPage.HEIGHT}] /Resources << /Font << /F1 {regular} 0 R /F2 {bold} 0 R"
                    f" >> >> /Contents {stream} 0 R >>"
                ).encode()
            )
        )
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {pages_id} 0 R >>".encode()
    objects[pages_id - 1] = (
        f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>"
    ).encode()

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        catalog,
        xref,
    )
    return bytes(out)
