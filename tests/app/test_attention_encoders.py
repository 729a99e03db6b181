"""The Attention Lab on the text encoders people have: a sentence-embedding BertModel whose tokenizer.json pads
to 128, a RoBERTa and a DistilBERT without tokenizer.json (AppTest, no browser)."""

from __future__ import annotations

import json

import pytest

from tests.app.conftest import app_at
from tests.pretrained.real_layouts import POSITIONS
from tests.pretrained.tokenizer_folders import LONG, model_folder
from ui.attention import keys as av

PAGE = "pages/attention.py"


def sentence_models(root):
    """The models folder of these tests (and of the browser test): three encoders as published."""
    model_folder("bert-model", "bert-json", root / "sentence-bert", layout="int-buffers")
    (root / "sentence-bert" / "1_Pooling").mkdir()
    (root / "sentence-bert" / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 16, "pooling_mode_mean_tokens": True}))
    model_folder("roberta", "roberta-files", root / "tiny-roberta", layout="tied-twice")
    model_folder("distilbert", "bert-files-lower", root / "tiny-distilbert", layout="gamma-beta")
    return root


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    return sentence_models(tmp_path_factory.mktemp("models"))


@pytest.fixture(autouse=True)
def _models_dir(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models))


def _pretrained(name: str, text: str):
    at = app_at(PAGE)
    at.radio(key=av.SOURCE).set_value("pretrained").run()
    menu = at.selectbox(key=av.PRETRAINED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith(name + " "))).run()
    at.text_input(key=av.TEXT).set_value(text).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _tokens_line(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Tokens"))


def test_a_sentence_embedding_model_shows_its_own_tokens_and_a_similarity_matrix(models):
    at = _pretrained("sentence-bert", "A man is eating food.")
    tokens = _tokens_line(at)
    assert "[PAD]" not in tokens and "[CLS]" in tokens and "[SEP]" in tokens
    assert "Lines to compare" in at.text_area(key=av.SIMILARITY_LINES).label
    assert at.get("plotly_chart"), "the cosine matrix is drawn"
    assert any("mean of its token vectors (from 1_Pooling/config.json)" in c.value for c in at.caption)
    assert not [t for t in at.subheader if t.value == "Fill in the blanks"]
    at.text_area(key=av.SIMILARITY_LINES).set_value("one line\n\nanother line").run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("Lines read as" in c.value for c in at.caption)


def test_a_long_text_is_cut_at_the_models_positions_with_a_note(models):
    at = _pretrained("sentence-bert", LONG)
    assert any(f"This model reads at most {POSITIONS} tokens" in i.value for i in at.info)


@pytest.mark.parametrize("name, text, mask", [("tiny-roberta", "The capital of France is <mask>.", "<mask>"),
                                              ("tiny-distilbert", "the capital of france is [MASK].", "[MASK]")])
def test_roberta_and_distilbert_fill_in_their_mask(models, name, text, mask):
    at = _pretrained(name, text)
    assert mask in _tokens_line(at)
    assert any(c.value.startswith(f"Best fill-ins for {mask} at position") for c in at.caption)
    at.radio(key=av.VIEW).set_value("steps").run()
    assert not at.exception, [e.message for e in at.exception]
