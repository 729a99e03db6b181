"""*Follow a word* on the Attention Lab: the candidates' probability and rank per layer equal the library's logit
lens on local GPT-2 and Llama folders (random weights) and on a trained character model; typed words and another
position change the chart; random weights, BERT and an encoder–decoder model are refused with a sentence."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.app.conftest import app_at, assert_no_exception, lab_with_trained
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder, mark_special_tokens
from transformer_core.lens import follow_tokens
from transformer_core.pretrained import load_pretrained
from ui.attention import keys as av
from ui.attention.beyond import follow_word as fw

PAGE = "pages/attention.py"
TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module", name="root")
def root_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("follow_models")
    gpt2_folder(root / "tiny-gpt2", layers=3, heads=2)
    llama_folder(root / "tiny-llama", layers=2, heads=6, kv_heads=2, width=48, positions=64, tied=True)
    bert_folder(root / "tiny-bert", layers=2, heads=2)
    mark_special_tokens(root / "tiny-bert")
    return root


@pytest.fixture(autouse=True)
def _models_dir(root, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(root))


def _pretrained(name: str):
    at = app_at(PAGE)
    at.radio(key=av.SOURCE).set_value("pretrained").run()
    menu = at.selectbox(key=av.PRETRAINED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith(name + " "))).run()
    at.text_input(key=av.TEXT).set_value(TEXT).run()
    return _follow(at)


def _follow(at):
    at.button_group(key=av.BEYOND).set_value("follow").run()
    assert_no_exception(at)
    return at


def _traces(at, key: str = "attn.follow.chart") -> list[dict]:
    chart = next(c for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id)
    return json.loads(chart.proto.spec)["data"]


def _probs(traces) -> np.ndarray:
    return np.array([t["y"] for t in traces]).T  # (L, K)


def _ranks(traces) -> np.ndarray:
    return np.array([t["customdata"] for t in traces]).T


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama"])
def test_the_chart_is_the_logit_lens_of_the_top_three(root, name):
    at = _pretrained(name)
    pre = load_pretrained(str(root / name))
    ids = pre.tokenizer.encode(TEXT).ids
    with torch.no_grad():
        top = pre.model(torch.tensor([ids]))[0, -1].topk(3).indices.tolist()
    assert at.multiselect(key=fw.PICK).value == top
    traces = _traces(at)
    expected = follow_tokens(pre.model, ids, top)
    np.testing.assert_allclose(_probs(traces), expected.probs, rtol=1e-5)
    np.testing.assert_array_equal(_ranks(traces), expected.ranks)
    assert len(traces[0]["x"]) == len(pre.model.blocks)
    np.testing.assert_array_equal(_probs(_traces(at, "attn.follow.ranks")), expected.ranks)
    assert any("logit lens" in c.value and "rough" in c.value for c in at.caption)


def test_a_typed_word_and_another_position_change_the_chart(root):
    at = _pretrained("tiny-gpt2")
    pre = load_pretrained(str(root / "tiny-gpt2"))
    ids = pre.tokenizer.encode(TEXT).ids
    before = _probs(_traces(at))
    at.multiselect(key=fw.PICK).set_value([]).run()
    assert any("Choose a token" in i.value for i in at.info)
    at.text_input(key=av.FOLLOW_WORDS).set_value("dog, zzzz").run()
    assert_no_exception(at)
    typed = pre.tokenizer.token_to_id("do")  # this tiny tokenizer writes " dog" as "␣", "do", "g"
    assert any("“zzzz” gives no token" in w.value for w in at.warning)
    traces = _traces(at)
    assert [t["name"] for t in traces] == ["“do”"]
    np.testing.assert_allclose(_probs(traces)[:, 0], follow_tokens(pre.model, ids, [typed]).probs[:, 0], rtol=1e-5)
    assert any("first token" in c.value and "dog" in c.value for c in at.caption)
    at.selectbox(key=av.FOLLOW_POS).set_value(2).run()
    moved = _probs(_traces(at))  # the picks are the top three at the new position again, then the typed word
    assert moved.shape == (before.shape[0], 4)
    np.testing.assert_allclose(moved[:, -1], follow_tokens(pre.model, ids, [typed], position=1).probs[:, 0],
                               rtol=1e-5)
    assert not np.allclose(moved[:, -1], _probs(traces)[:, 0])


def test_a_trained_character_model_is_followed_by_its_characters():
    at, model = lab_with_trained("causal_lm", "char_lm", {av.TEXT: "the cat"})
    _follow(at)
    at.text_input(key=av.FOLLOW_WORDS).set_value("sat").run()
    assert_no_exception(at)
    traces = _traces(at)
    assert traces[-1]["name"] == "“s”" and len(traces) == 4
    assert len(traces[0]["x"]) == len(model.blocks)


def _refusal(at) -> str:
    return " ".join(i.value for i in at.info)


def test_models_without_a_next_word_are_refused_with_a_sentence():
    at = app_at(PAGE)
    at.text_input(key=av.TEXT).set_value(TEXT).run()
    assert "Random weights predict nothing" in _refusal(_follow(at))
    assert "fills in words from both sides" in _refusal(_pretrained("tiny-bert"))
    at, _ = lab_with_trained("seq2seq", "reverse", {av.TEXT: "31415926"})
    assert "does not write text token by token" in _refusal(_follow(at))
