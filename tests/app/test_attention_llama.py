"""The Attention Lab on a random-initialised local Llama-family model: subword tokens, every view, next tokens,
shared K/V heads in the picker, grid and head switches, the logit lens through the final RMSNorm, Find the heads."""

from __future__ import annotations

import pytest
import torch

from tests.app.conftest import app_at, assert_no_exception
from tests.app.test_attention_lab import _z
from tests.app.test_switch_combinations import _chart_spec
from tests.pretrained.hf_folders import llama_folder
from transformer_core.interventions import ablate_heads, attention_stacks
from transformer_core.pretrained import load_pretrained
from ui.attention import keys as lab
from ui.attention.keys import VIEWS

PAGE = "pages/attention.py"
TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    hf = llama_folder(root / "tiny-llama", layers=2, heads=6, kv_heads=2, width=48, positions=64, tied=True)
    return root, hf


@pytest.fixture(autouse=True)
def _models_dir(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models[0]))


def _llama(view: str = "grid"):
    at = app_at(PAGE)
    at.radio(key=lab.SOURCE).set_value("pretrained").run()
    menu = at.selectbox(key=lab.PRETRAINED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith("tiny-llama "))).run()
    at.text_input(key=lab.TEXT).set_value(TEXT).run()
    at.radio(key=lab.VIEW).set_value(view).run()
    assert_no_exception(at)
    return at


def _ids(models) -> list[int]:
    return load_pretrained(models[0] / "tiny-llama").tokenizer.encode(TEXT).ids


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_the_lab_shows_its_tokens_shape_and_next_token_table(models):
    at = _llama()
    assert "␣" in next(m.value for m in at.markdown if m.value.startswith("**Tokens"))
    text = _captions(at)
    assert "Weights of **tiny-llama** (LlamaForCausalLM)" in text
    assert "6 query heads sharing 2 K/V heads" in text and "RMSNorm, SwiGLU feed-forward, rotary positions" in text
    table = next(d.value for d in at.dataframe if list(d.value.columns) == ["token", "probability"])
    with torch.no_grad():
        probs = models[1](torch.tensor([_ids(models)])).logits[0, -1].softmax(-1)
    assert table["probability"].iloc[0] == pytest.approx(float(probs.max()), abs=1e-5)


def test_every_view_draws_and_names_the_shared_kv_heads(models):
    at = _llama()
    assert "K/V 1 → H1–H3; K/V 2 → H4–H6" in _captions(at)
    titles = [a["text"] for a in _chart_spec(at, "attn.grid")["layout"]["annotations"]]
    assert "H4 · KV2" in titles
    assert at.radio(key=lab.HEAD).format_func(4) == "4 · K/V 2"
    for view in VIEWS:
        at.radio(key=lab.VIEW).set_value(view).run()
        assert_no_exception(at)
    at.radio(key=lab.VIEW).set_value("steps").run()
    at.radio(key=lab.HEAD).set_value(5).run()
    assert "K and V come from K/V head 2, which H4–H6 share" in " ".join(m.value for m in at.markdown) + _captions(at)


def test_a_kv_head_switched_off_switches_its_whole_group_off(models):
    at = _llama()
    at.button_group(key=f"{lab.OFF_KV}0").set_value([1]).run()
    assert_no_exception(at)
    assert at.button_group(key=f"{lab.OFF_PICK}0").value == [3, 4, 5]
    assert "K/V heads off: L1 K/V 2 (H4–H6)" in _captions(at)
    after = [d.value for d in at.dataframe if list(d.value.columns) == ["token", "probability"]][-1]
    pre = load_pretrained(models[0] / "tiny-llama")
    stack = next(iter(attention_stacks(pre.model)))
    with ablate_heads(pre.model, [(stack, 0, h) for h in (3, 4, 5)]), torch.no_grad():
        probs = pre.model(torch.tensor([_ids(models)]))[0, -1].softmax(-1)
    assert after["probability"].iloc[0] == pytest.approx(float(probs.max()), abs=1e-5)
    at.button_group(key=f"{lab.OFF_KV}0").set_value([]).run()
    assert at.button_group(key=f"{lab.OFF_PICK}0").value == []


def test_the_logit_lens_ends_at_the_models_own_prediction(models):
    at = _llama()
    at.toggle(key=lab.LENS).set_value(True).run()
    assert_no_exception(at)
    z = _z(_chart_spec(at, "attn.lens_chart")["data"][0])
    with torch.no_grad():
        probs = models[1](torch.tensor([_ids(models)])).logits[0].softmax(-1)  # (T, V)
    assert z.shape == (2, len(_ids(models)))
    assert z[-1] == pytest.approx(probs.max(-1).values.numpy(), abs=1e-5)


def test_find_the_heads_scores_every_query_head(models):
    at = _llama()
    assert any(s.value == "Find the heads" for s in at.subheader)
    spec = _chart_spec(at, "attn.find_heads")
    assert all(_z(trace).shape == (2, 6) for trace in spec["data"])


def test_more_models_lists_the_curated_modern_models_with_their_sizes(models):
    at = _llama()
    rows = " ".join(m.value for m in at.markdown)
    assert "**HuggingFaceTB/SmolLM2-135M**: 134.5M parameters, 273 MB download" in rows
    assert "**Qwen/Qwen2.5-0.5B**: 494.0M parameters" in rows


@pytest.mark.slow
def test_find_the_heads_tells_two_models_of_one_name_apart(models, tmp_path, monkeypatch):
    """Another folder's ``tiny-llama`` with 4 heads, opened after this one in the same server: its own scores."""
    _chart_spec(_llama(), "attn.find_heads")  # this folder's model, scored and cached first
    llama_folder(tmp_path / "tiny-llama", layers=2, heads=4, kv_heads=2, width=48, positions=64, tied=True)
    monkeypatch.setenv("TE_MODELS_DIR", str(tmp_path))
    spec = _chart_spec(_llama(), "attn.find_heads")
    assert all(_z(trace).shape == (2, 4) for trace in spec["data"])
