"""*Score every head* in the Attention Lab: a pretrained GPT-2's loss on the text with each head switched off alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.lab.head_switch import text_loss
from tests.app.conftest import app_at, assert_no_exception
from tests.app.test_attention_lab import _z
from tests.app.test_switch_combinations import _chart_spec
from tests.pretrained.hf_folders import gpt2_folder
from transformer_core.interventions import ablate_heads, attention_stacks
from transformer_core.pretrained import load_pretrained
from ui.attention import keys as av

PAGE = "pages/attention.py"
TEXT = "the cat sat on the mat"


@pytest.fixture(name="gpt2")
def gpt2_fixture(tmp_path, monkeypatch):
    hf = gpt2_folder(tmp_path / "models" / "tiny-gpt2", layers=2, heads=2)
    monkeypatch.setenv("TE_MODELS_DIR", str(tmp_path / "models"))
    return hf, load_pretrained(tmp_path / "models" / "tiny-gpt2")


def test_text_loss_is_transformers_loss(gpt2) -> None:
    hf, pre = gpt2
    ids = pre.tokenizer.encode(TEXT).ids
    with torch.no_grad():
        expected = hf(torch.tensor([ids]), labels=torch.tensor([ids])).loss.item()
    assert text_loss(pre.model, ids) == pytest.approx(expected, abs=1e-5)


def test_score_every_head_maps_the_loss_each_head_adds(gpt2) -> None:
    _, pre = gpt2
    at = app_at(PAGE)
    at.radio(key=av.SOURCE).set_value("pretrained").run()
    at.text_input(key=av.TEXT).set_value(TEXT).run()
    button = next(b for b in at.button if b.label == "Score every head")
    assert button.help
    button.click().run()
    assert_no_exception(at)
    spec = _chart_spec(at, "attn.head_scores_chart")
    scores = _z(spec["data"][0])
    ids = pre.tokenizer.encode(TEXT).ids
    base = text_loss(pre.model, ids)
    stack = next(iter(attention_stacks(pre.model)))
    with ablate_heads(pre.model, [(stack, 1, 0)]):
        assert scores[1, 0] == pytest.approx(text_loss(pre.model, ids) - base, abs=1e-6)
    assert scores.shape == (2, 2) and np.isfinite(scores).all()
    assert any("Most needed here: L" in c.value for c in at.caption)
    at.radio(key=av.OFF_MODE).set_value("mean").run()  # another mode: the old map is not shown for it
    assert not [c for c in at.get("plotly_chart") if c.proto.id and "attn.head_scores_chart" in c.proto.id]
