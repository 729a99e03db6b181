"""*Watch it write* in German: the catalogue's texts, and none of its English sources left (AppTest, no browser).

Reads the German catalogue ``locales/de/LC_MESSAGES/messages.po``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from google.protobuf.message import Message

from explorer.i18n import _, catalogs, using_language
from tests.app.conftest import app_at, assert_no_exception
from tests.pretrained.hf_folders import gpt2_folder
from ui.attention import generation as gen
from ui.attention import keys as lab_keys

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = catalogs.catalogue_path("de")
PAGE = "pages/attention.py"
PROMPT = "the cat sat"
SKIPPED_FIELDS = {"id", "form_id", "key", "default", "value"}  # widget ids and values, not texts a person reads

@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2", layers=2, heads=2, positions=64)
    return root


@pytest.fixture(autouse=True)
def _models_dir(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models))
    catalogs.translations.cache_clear()  # read the catalogue as it is now


def _english_left() -> dict[str, str]:
    """The English sources (without placeholders) whose German differs: source → German."""
    with CATALOGUE.open("rb") as po:
        merged = read_po(po, locale="de")
    left = {}
    for m in merged:
        if not m.id or not isinstance(m.id, str) or "{" in m.id or "%{" in m.id:
            continue
        if m.string and m.string != m.id:
            left[m.id] = m.string
    return left


def _strings(value, field: str = "") -> list[str]:
    """Every text inside an element's message: labels, help texts, options, Markdown, chart titles."""
    if isinstance(value, Message):
        out = []
        for descriptor, item in value.ListFields():
            items = item if hasattr(item, "extend") else [item]  # a repeated field, else one value
            for one in items:
                out += _strings(one, descriptor.name)
        return out
    if isinstance(value, str) and field not in SKIPPED_FIELDS:
        if field == "spec" or field == "figure":  # a Plotly chart: its JSON's own strings
            try:
                return _json_strings(json.loads(value))
            except ValueError:
                return [value]
        return [value]
    return []


def _json_strings(value) -> list[str]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _json_strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _json_strings(item)]
    return [value] if isinstance(value, str) else []


def _section_texts(at, title: str) -> list[str]:
    """The texts of the section under the heading ``title``, up to the next heading (Markdown emphasis and
    Plotly's hover suffix removed)."""
    texts, inside = [], False
    for element in _walk(at.main):
        proto = getattr(element, "proto", None)
        if proto is None:
            continue
        heading = getattr(element, "type", None) == "heading" or type(proto).__name__ == "Heading"
        if heading:
            if inside:
                break
            inside = getattr(proto, "body", None) == title
            continue
        if inside:
            texts += _strings(proto)
    return [re.sub(r"<extra></extra>$", "", t.replace("**", "")).strip() for t in texts]


def _walk(node):
    """``node`` and everything under it, in the page's order."""
    yield node
    children = getattr(node, "children", {})
    for key in sorted(children):
        yield from _walk(children[key])


def test_watch_it_write_speaks_german():
    # AppTest formats the widgets' options in this thread (``format_func``): there too, in German
    with using_language("de"):
        at = app_at(PAGE, query={"lang": "de"})
        at.radio(key=lab_keys.SOURCE).set_value("pretrained").run()
        menu = at.selectbox(key=lab_keys.PRETRAINED_MODEL)
        menu.set_value(next(o for o in menu.options if o.startswith("tiny-gpt2 "))).run()
        at.text_input(key=lab_keys.TEXT).set_value(PROMPT).run()
        at.slider(key=gen.NEW_TOKENS).set_value(3).run()
        at.button(key="attn.gen.start").click().run()
    assert_no_exception(at)
    writing = at.session_state[gen.WRITING][1]
    assert writing.finished and len(writing.written) == 3

    with using_language("de"):
        texts = _section_texts(at, _("Watch it write"))
        assert texts, "no German Watch it write section on the page"
        expected = [_("New tokens"), _("Write"), _("Stop"), _("Branch the writing"),
                    _("Step {step}: the likeliest next tokens").format(step=writing.written[-1].step),
                    _("step: token read → token written"), _("CSV (steps)"), _("GIF (heatmap growing)"),
                    _("Greedy"), writing.describe()]
        assert _("Watch it write") != "Watch it write", "the catalogue does not translate the section's title"
    for text in expected:
        assert text in texts, f"{text!r} is not on the German page"
    english = _english_left()
    assert english, "the catalogue has none of this section's messages"
    left = sorted({t for t in texts if t in english})
    assert not left, f"English left on the German page: {[(t, english[t]) for t in left]}"
