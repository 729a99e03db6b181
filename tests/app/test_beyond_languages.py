"""*Beyond attention* in German and Chinese: each lens of the Attention Lab (random weights) shows its heading and
its own sentence as the catalogue translates them, and no text of the lens is left in English where a translation
exists."""

from __future__ import annotations

from collections import Counter

import pytest
from babel.messages.pofile import read_po

from explorer.i18n import _, get, using_language
from explorer.i18n.catalogs import catalogue_path
from tests.app.conftest import app_at, assert_no_exception
from ui.attention import keys as av
from ui.attention.beyond import mlp_half
from ui.attention.beyond.registry import VIEWS

HEADING = "Beyond attention: what the model used"
OWN_TEXT = {  # what each lens itself shows on the Lab's random weights (English source)
    "why": "Random weights predict nothing, so there is no word to explain. Under *Weights*, pick a pretrained model "
    "(GPT-2, a Llama-family model, BERT) or a model you trained on the Live Training page.",
    "decide": "Random weights predict nothing, so there is no answer to bring back. Pick a pretrained model (GPT-2, "
    "Llama, BERT) or one trained on Live Training.",
    "mlp": mlp_half.CAPTION,
    "follow": "Random weights predict nothing worth following. Pick a pretrained GPT-2 or Llama-family model, or a "
    "character model trained on Live Training.",
    "map": "These weights are random: the rows of the table were drawn at random, so the map and the neighbours show "
    "no meaning yet. Train a model or load a pretrained one to see learned rows.",
}
TEXTS = ("caption", "markdown", "info", "warning", "error", "subheader")


def _shown(at) -> Counter:
    """Every text the page shows (text elements' bodies, widgets' labels), counted."""
    found = Counter(str(e.value) for kind in TEXTS for e in at.get(kind))
    for kind in (
        "button",
        "selectbox",
        "radio",
        "text_input",
        "text_area",
        "toggle",
        "number_input",
        "pills",
        "multiselect",
        "button_group",
        "download_button",
    ):
        found.update(str(w.label) for w in at.get(kind) if getattr(w, "label", None))
    return found


def _english_left(code: str) -> set[str]:
    """The catalogue's English sources whose translation differs from them."""
    with catalogue_path(get(code).locale).open("rb") as po:
        catalogue = read_po(po, locale=get(code).locale)
    return {m.id for m in catalogue if isinstance(m.id, str) and m.id and m.string and m.string != m.id}


@pytest.mark.parametrize("code", ["de", "zh-CN"])
def test_every_lens_speaks_the_language(code):
    at = app_at("pages/attention.py", query={"lang": code})
    assert_no_exception(at)
    before, english = _shown(at), _english_left(code)
    with using_language(code):
        heading = _(HEADING)
    assert heading != HEADING and heading in [s.value for s in at.subheader]
    for view in VIEWS:
        with using_language(code):  # AppTest sends the picked lens by its label, made here by the picker's format_func
            at.button_group(key=av.BEYOND).set_value(view.key).run()
            own = _(OWN_TEXT[view.key])
        assert_no_exception(at)
        lens = _shown(at) - before  # the texts the lens added
        assert own != OWN_TEXT[view.key] and own in lens, (view.key, list(lens))
        assert not set(lens) & english, (view.key, set(lens) & english)
