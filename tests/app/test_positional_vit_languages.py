"""Positional Encodings and ViT Patching in German and Chinese: headings in the class's language, no English left.

The page checks read the catalogues (``locales/<lang>/LC_MESSAGES/messages.po``).
"""

from __future__ import annotations

import contextlib
import io
import json
import struct
import zlib

import pytest
from babel.messages.pofile import read_po
from google.protobuf.json_format import MessageToDict
from PIL import Image

from explorer import images
from explorer.i18n import _, get, using_language
from explorer.i18n.catalogs import catalogue_path
from explorer.i18n.message import localized
from tests.app.conftest import app_at, assert_no_exception
from transformer_core import positional
from ui.positional import labels
from ui.positional import views as pv
from ui.vit import controls as vc

LANGS = ("de", "zh-CN")
VIT_HEADINGS = ("1 · Cut the picture into patches", "2 · Flatten in reading order",
                "3 · Project to tokens, add CLS and positions", "4 · Where does the CLS token look?",
                "5 · A pretrained ViT on this picture")
SHOWN_SECTIONS = ("table", "relative", "beyond", "compare", "shuffle", "pretrained")  # "pretrained": its offers
SKIPPED_KEYS = {"id", "formId", "key", "data", "arrowData", "url", "fileId", "mimetype", "icon", "pageScriptHash"}
PLOTLY_KEYS = {"text", "name", "hovertemplate", "title"}  # what a person reads in a figure's spec


def test_every_encoding_has_a_translatable_name_and_summary():
    """Each registered encoding is in the page's tables, in the registry's own English words."""
    for kind in positional.kinds():
        spec = positional.get(kind)
        assert (labels.TITLES.get(kind), labels.SHORTS.get(kind), labels.SUMMARIES.get(kind)) == (
            spec.title, spec.short, spec.summary), kind
        with using_language("en"):
            assert (labels.title(kind), labels.short(kind), labels.summary(kind)) == (spec.title, spec.short,
                                                                                     spec.summary)


def test_picture_messages_are_english_and_say_themselves_in_german():
    """A bad picture's message is English where it is made (a cache every session shares) and German when shown."""
    with pytest.raises(images.ImageError) as raised:
        images.read_image(b"x" * (3 * 2**19), max_bytes=2**20)
    with using_language("en"):
        assert str(raised.value) == localized(raised.value) == "The file is 1.5 MB; the limit is 1 MB."
    with using_language("de"):
        assert localized(raised.value) == "Die Datei ist 1,5 MB groß; die Grenze liegt bei 1 MB."


def _msgids_translated_differently(code: str) -> set[str]:
    """The English msgids whose translation into ``code`` differs from them."""
    with catalogue_path(get(code).locale).open("rb") as po:
        catalogue = read_po(po, locale=get(code).locale)
    english = set()
    for message in catalogue:
        if not message.id or not message.string:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        english |= {i for i in ids if i not in strings}
    return english


def _strings(node, out: list[str], key: str | None = None) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "spec" and isinstance(v, str):  # a Plotly figure: its titles, names and hover texts
                with contextlib.suppress(ValueError):
                    _plotly(json.loads(v), out)
            elif k not in SKIPPED_KEYS:
                _strings(v, out, k)
    elif isinstance(node, list):
        for v in node:
            _strings(v, out, key)
    elif isinstance(node, str):
        out.append(node)


def _plotly(node, out: list[str], key: str | None = None) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            _plotly(v, out, k)
    elif isinstance(node, list):
        for v in node:
            _plotly(v, out, key)
    elif isinstance(node, str) and key in PLOTLY_KEYS:
        out.append(node.removesuffix("<extra></extra>"))


def shown_texts(at) -> list[str]:
    """Every text of the page's elements (labels, help, captions, markdown, options, chart titles)."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            _strings(MessageToDict(proto), out)
        children = getattr(node, "children", None)
        for child in (children.values() if isinstance(children, dict) else ()):
            walk(child)

    walk(at._tree)  # noqa: SLF001
    return out


INSIDE_CHARS = 24  # an English message this long is looked for inside longer texts too (a menu line, a row)


def assert_no_english(at, code: str) -> None:
    english = _msgids_translated_differently(code)
    texts = shown_texts(at)
    left = {t for t in texts if t.strip().strip("*").strip() in english}
    long = [m for m in english if len(m) >= INSIDE_CHARS and "{" not in m]
    left |= {m for m in long if any(m in t for t in texts)}
    assert not left, f"still English in {code}: {sorted(left)}"


@pytest.mark.parametrize("code", LANGS)
def test_positional_page_speaks_the_language(code):
    at = app_at("pages/positional.py", query={"lang": code})
    assert_no_exception(at)
    with using_language(code):
        sections = {s: _(pv.SECTIONS[s]) for s in pv.SECTIONS}
    radio = at.radio(key=pv.SECTION)
    assert radio.options == list(sections.values())
    assert all(sections[s] != pv.SECTIONS[s] for s in sections)  # the headings are translated
    for section in SHOWN_SECTIONS:
        with using_language(code):  # the radio's format_func translates in the test's thread too
            at.radio(key=pv.SECTION).set_value(section).run()
        assert_no_exception(at)
        assert_no_english(at, code)


@pytest.mark.parametrize("code", LANGS)
def test_vit_page_speaks_the_language(code):
    at = app_at("pages/vit.py", query={"lang": code})
    assert_no_exception(at)
    with using_language(code):
        wanted = [_(h) for h in VIT_HEADINGS]
    assert all(w != h for w, h in zip(wanted, VIT_HEADINGS, strict=True))
    assert [s.value for s in at.subheader] == wanted
    assert_no_english(at, code)


def _bomb() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    head = struct.pack(">IIBBBBB", 50_000, 50_000, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(b"\0" * 4000))


def test_a_bad_picture_is_explained_in_german():
    at = app_at("pages/vit.py", query={"lang": "de"})
    with using_language("de"):  # the widgets' format_funcs translate in the test's thread too
        at.radio(key=vc.SOURCE).set_value("upload").run()
        at.file_uploader(key=vc.UPLOAD).set_value(("bomb.png", _bomb(), "image/png")).run()
        assert_no_exception(at)
        english = ("The image is too large to decode safely (limit {limit} pixels). Small files that claim huge "
                   "sizes are a known attack ('decompression bomb'); please use a smaller image.")
        expected = _(english).format(limit="40.000.000")  # German numbers, as the reader writes them
        assert expected != english
        assert any(expected in e.value for e in at.error), [e.value for e in at.error]
        buf = io.BytesIO()
        Image.new("RGBA", (64, 64), (0, 0, 255, 0)).save(buf, "PNG")
        at.file_uploader(key=vc.UPLOAD).set_value(("clear.png", buf.getvalue(), "image/png")).run()
        note = _("Transparent parts were placed on a white background.")
        assert not at.error and any(note in c.value for c in at.caption)
