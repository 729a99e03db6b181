"""*Why this word?* in the Attention Lab, on every kind of model it explains (small GPT-2, Llama and BERT folders
with random weights; models of the Lab's trained families) and its refusals (random weights, BERT without [MASK]).

The chart's numbers are checked against :func:`transformer_core.attribution.token_attributions` run here on the
same model, and the attention row against the model's own attention weights.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.app.conftest import app_at, assert_no_exception, lab_with_trained
from tests.app.test_attention_lab import _z
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder, mark_special_tokens
from transformer_core.attribution import token_attributions
from transformer_core.pretrained import load_pretrained
from ui.attention import keys as av
from ui.attention import lab_run
from ui.common import state

PAGE = "pages/attention.py"
CHART = "attn.why.chart"


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2", layers=2, heads=2)
    llama_folder(root / "tiny-llama", layers=2, heads=4, kv_heads=2, width=32, positions=64)
    bert_folder(root / "tiny-bert", layers=2, heads=2)
    mark_special_tokens(root / "tiny-bert")
    return root


@pytest.fixture(autouse=True)
def _models_dir(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models))


def _pretrained(name: str, text: str):
    at = app_at(PAGE, query={av.BEYOND: "why"})
    at.radio(key=av.SOURCE).set_value("pretrained").run()
    menu = at.selectbox(key=av.PRETRAINED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith(name + " "))).run()
    at.text_input(key=av.TEXT).set_value(text).run()
    assert_no_exception(at)
    return at


def _trained(family: str, task_name: str, text: str, **options):
    at, model = lab_with_trained(family, task_name, {av.TEXT: text, av.BEYOND: "why"}, **options)
    assert_no_exception(at)
    return at, model


def _chart(at) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id and CHART in c.proto.id)


def _rows(at) -> tuple[np.ndarray, np.ndarray, list]:
    """The attribution rows, the attention rows and the tokens in the cells, as the chart draws them."""
    data = _chart(at)["data"]
    z, w = _z(data[0]), _z(data[1])
    return z, w, data[0]["text"]


def _infos(at) -> str:
    return " ".join(i.value for i in at.info)


def _markdown(at) -> str:
    return " ".join(m.value for m in at.markdown)


def test_random_weights_are_refused_with_what_to_pick():
    at = app_at(PAGE, query={av.BEYOND: "why"})
    assert_no_exception(at)
    assert "Random weights predict nothing" in _infos(at)
    assert not any(c.proto.id and CHART in c.proto.id for c in at.get("plotly_chart"))


def test_gpt2_next_token_attribution_equals_the_library_and_follows_the_target(models):
    text = "the cat sat on the"
    at = _pretrained("tiny-gpt2", text)
    pre = load_pretrained(models / "tiny-gpt2")
    ids = pre.tokenizer.encode(text).ids
    with torch.no_grad():
        logits, attention = pre.model.forward_with_attention(torch.tensor([ids]))
    top = logits[0, -1].topk(5).indices.tolist()
    z, w, text_cells = _rows(at)
    expected = token_attributions(pre.model, ids, top[0]).values
    assert np.abs(expected).max() > 0 and expected.std() > 0
    np.testing.assert_allclose(z[0], expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(w[0], attention["decoder"][0][0, 0, -1].numpy(), rtol=1e-4, atol=1e-6)
    assert len(text_cells[0]) == len(ids)
    assert "They agree" in _markdown(at) or "They disagree" in _markdown(at)

    at.selectbox(key=av.WHY_TARGET).set_value(2).run()
    z2, _, _ = _rows(at)
    np.testing.assert_allclose(z2[0], token_attributions(pre.model, ids, top[2]).values, rtol=1e-4, atol=1e-6)
    assert not np.allclose(z2[0], z[0])

    at.toggle(key=av.WHY_HEADS).set_value(True).run()
    _, w_mean, _ = _rows(at)
    np.testing.assert_allclose(w_mean[0], attention["decoder"][0][0, :, -1].mean(0).numpy(), rtol=1e-4, atol=1e-6)


def test_integrated_gradients_run_on_the_button_and_state_their_gap(models):
    text = "the cat sat on the"
    at = _pretrained("tiny-gpt2", text)
    at.radio(key=av.WHY_METHOD).set_value("integrated_gradients").run()
    assert "until integrated gradients are computed" in " ".join(c.value for c in at.caption)
    at.selectbox(key=av.WHY_STEPS).set_value(16).run()
    next(b for b in at.button if b.label.startswith("Compute integrated gradients")).click().run()
    assert_no_exception(at)
    pre = load_pretrained(models / "tiny-gpt2")
    ids = pre.tokenizer.encode(text).ids
    with torch.no_grad():
        target = int(pre.model(torch.tensor([ids]))[0, -1].argmax())
    expected = token_attributions(pre.model, ids, target, method="integrated_gradients", steps=16)
    z, _, _ = _rows(at)
    np.testing.assert_allclose(z[0], expected.values, rtol=1e-4, atol=1e-6)
    assert "completeness gap" in " ".join(c.value for c in at.caption)


def test_llama_with_shared_kv_heads_explains_its_next_token(models):
    text = "the cat sat on the mat"
    at = _pretrained("tiny-llama", text)
    pre = load_pretrained(models / "tiny-llama")
    ids = pre.tokenizer.encode(text).ids
    with torch.no_grad():
        logits, attention = pre.model.forward_with_attention(torch.tensor([ids]))
    z, w, _ = _rows(at)
    target = int(logits[0, -1].argmax())
    np.testing.assert_allclose(z[0], token_attributions(pre.model, ids, target).values, rtol=1e-4, atol=1e-6)
    assert attention["decoder"][0].shape[1] == 4  # the query heads, though only 2 K/V heads are stored
    layer, head = int(at.session_state[av.LAYER]) - 1, int(at.session_state[av.HEAD]) - 1
    np.testing.assert_allclose(w[0], attention["decoder"][layer][0, head, -1].numpy(), rtol=1e-4, atol=1e-6)


def test_bert_without_mask_is_refused_and_a_fill_in_is_explained(models):
    at = _pretrained("tiny-bert", "the cat sat on the mat")
    assert "put [MASK] in your text" in _infos(at)
    at.text_input(key=av.TEXT).set_value("the cat [MASK] on the mat").run()
    assert_no_exception(at)
    pre = load_pretrained(models / "tiny-bert")
    ids = pre.tokenizer.encode("the cat [MASK] on the mat").ids
    spot = ids.index(pre.tokenizer.token_to_id(pre.tokenizer.mask_token))
    with torch.no_grad():
        logits, attention = pre.model.forward_with_attention(torch.tensor([ids]))
    z, w, _ = _rows(at)
    expected = token_attributions(pre.model, ids, int(logits[0, spot].argmax()), position=spot).values
    assert np.abs(expected).max() > 0
    np.testing.assert_allclose(z[0], expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(w[0], attention["encoder"][0][0, 0, spot].numpy(), rtol=1e-4, atol=1e-6)


def _lab_ids(at, family: str, text: str) -> list[int]:
    return list(lab_run.trained_input(at.session_state[state.TRAINED][family], text)[0].ids)


def test_a_trained_decoder_explains_its_next_character():
    at, model = _trained("causal_lm", "induction", "ABCAB")
    z, w, cells = _rows(at)
    assert cells[0] == list("ABCAB")
    ids = _lab_ids(at, "causal_lm", "ABCAB")
    with torch.no_grad():
        target = int(model(torch.tensor([ids]))[0, -1].argmax())
    expected = token_attributions(model, ids, target).values
    assert np.abs(expected).max() > 0
    np.testing.assert_allclose(z[0], expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(w[0].sum(), 1.0, rtol=1e-5)  # the last token sees every token: its row sums to 1


def test_a_trained_encoder_decoder_explains_an_output_token_over_source_and_target():
    at, model = _trained("seq2seq", "reverse", "31415")
    picker = at.selectbox(key=av.WHY_TARGET)
    assert picker.options[0].startswith("output token 1")
    picker.set_value(2).run()
    assert_no_exception(at)
    z, w, cells = _rows(at)
    assert z.shape[0] == 2 and [c for c in cells[0] if c] == list("31415")
    assert [c for c in cells[1] if c][0] == "<start>" and len([c for c in cells[1] if c]) == 3
    np.testing.assert_allclose(np.nansum(w[0]), 1.0, rtol=1e-5)  # cross-attention over the source
    np.testing.assert_allclose(np.nansum(w[1]), 1.0, rtol=1e-5)  # self-attention over the target so far
    src = _lab_ids(at, "seq2seq", "31415")
    from transformer_core.tasks.sequences import BOS, EOS
    answer = model.greedy_decode(torch.tensor([src]), bos_id=BOS, max_new_tokens=6, eos_id=EOS)[0, 1:].tolist()
    expected = token_attributions(model, (src, [BOS, *answer[:2]]), answer[2])
    np.testing.assert_allclose(z[0, :5], expected.source, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(z[1, :3], expected.target, rtol=1e-4, atol=1e-6)


def test_a_trained_regressor_explains_its_number():
    at, model = _trained("regression", "protein", "MKTAYIAKQR")
    z, w, cells = _rows(at)
    assert cells[0] == list("MKTAYIAKQR")
    expected = token_attributions(model, _lab_ids(at, "regression", "MKTAYIAKQR"), 0).values
    assert np.abs(expected).max() > 0
    np.testing.assert_allclose(z[0], expected, rtol=1e-4, atol=1e-6)
    assert "every token, averaged" in " ".join(c.value for c in at.caption)


def test_a_written_token_of_watch_it_write_is_explained_over_the_text_before_it(models):
    from tests.app.test_attention_writing import _write
    from ui.attention import generation as gen

    at = _pretrained("tiny-gpt2", "the cat sat")
    writing = _write(at, 4)
    at.slider(key=gen.STEP).set_value(3).run()
    at.toggle(key=gen.WHY).set_value(True).run()
    assert_no_exception(at)
    token = writing.written[2]
    pre = load_pretrained(models / "tiny-gpt2")
    before = writing.ids[:token.position]
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                 if c.proto.id and "attn.gen.why" in c.proto.id)
    z, w = _z(chart["data"][0]), _z(chart["data"][1])
    np.testing.assert_allclose(z[0], token_attributions(pre.model, before, token.token_id).values, rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(w[0], token.attention[0, 0], rtol=1e-5)
    assert len(z[0]) == token.position
