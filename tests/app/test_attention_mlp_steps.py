"""The step-by-step view goes on past W_O through the MLP half, on every kind of model the Lab shows: its last table
is the layer's output, equal to the model's own block (or transformers' hidden state) on the same text."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.lab.internals import lab_stack, trained_stack
from explorer.lab.subjects import random_lab
from tests.app.conftest import app_at, assert_no_exception
from tests.app.test_switch_combinations import _pretrained, _trained
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder, mark_special_tokens
from transformer_core.pretrained import load_pretrained
from ui.attention import controls, lab_run
from ui.attention import keys as av
from ui.common import state

PAGE = "pages/attention.py"


@pytest.fixture(scope="module", name="hf")
def hf_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    models = {"tiny-gpt2": gpt2_folder(root / "tiny-gpt2", layers=2, heads=2),
              "tiny-llama": llama_folder(root / "tiny-llama", layers=2, heads=6, kv_heads=2, width=48),
              "tiny-bert": bert_folder(root / "tiny-bert", layers=2, heads=2)}
    mark_special_tokens(root / "tiny-bert")
    return root, models


@pytest.fixture(name="folders")
def folders_fixture(hf, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(hf[0]))
    return hf


def _steps(at) -> tuple[list[str], np.ndarray]:
    """The step titles drawn, and the numbers panel's table of the last step (the layer's output)."""
    assert_no_exception(at)
    titles = [m.value for m in at.markdown if m.value.startswith("**") and ". " in m.value[:6]]
    panel = at.selectbox(key=av.NUMBERS)
    panel.set_value(panel.options[-1]).run()
    assert panel.options[-1].endswith("h_out")
    return titles, at.dataframe[0].value.to_numpy(dtype=float)


def _block_output(stack, layer: int = 0) -> np.ndarray:
    x = stack.x
    with torch.no_grad():
        for block in stack.blocks[:layer + 1]:
            x, _ = block(x, mask=stack.mask, is_causal=stack.is_causal, positions=stack.positions)
    return x[0].numpy()


def test_random_weights_go_on_through_the_mlp() -> None:
    at = app_at(PAGE)
    titles, out = _steps(at)
    assert titles[9:] == ["**10. Residual add**", "**11. Norm (LN)**", "**12. Up projection**",
                          "**13. Activation (ReLU)**", "**14. Down projection**",
                          "**15. Residual add: the layer's output**"]
    s = controls.settings()
    lab, _, model = random_lab(s.text, s.kind, d_model=s.d_model, heads=s.heads, layers=s.layers, mask=s.mask,
                               seed=s.seed)
    expected = _block_output(lab_stack(model, lab.ids, lab.tokens, s.mask, lab.valid))
    np.testing.assert_allclose(out, expected, atol=2e-3)  # the tables are rounded to 3 decimals
    at.selectbox(key=av.NUMBERS).set_value("13. N").run()
    n = at.dataframe[0].value.to_numpy(dtype=float)
    assert n.min() >= 0 and (n == 0).any()  # ReLU


@pytest.mark.parametrize(("family", "task", "text"), [("causal_lm", "char_lm", "the cat sat"),
                                                      ("seq2seq", "reverse", "31415"),
                                                      ("regression", "protein", "MKTAYIAK")])
def test_trained_models_go_on_through_the_mlp(family: str, task: str, text: str) -> None:
    at = _trained(family, task, text)
    titles, out = _steps(at)
    entry = at.session_state[state.TRAINED][family]
    model = entry.model
    lab, _, _ = lab_run.trained_input(entry, text)
    stack = trained_stack(model, lab.ids, lab.tokens)
    np.testing.assert_allclose(out, _block_output(stack), atol=2e-3)
    post = not model.config.pre_norm
    assert ("Residual add & norm" in titles[9]) == post


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama", "tiny-bert"])
def test_pretrained_models_go_on_through_the_mlp(folders, name: str) -> None:
    at = _pretrained(name, "the cat sat on the mat")
    at.radio(key=av.VIEW).set_value("steps").run()
    titles, out = _steps(at)
    ids = load_pretrained(folders[0] / name).tokenizer.encode("the cat sat on the mat").ids
    with torch.no_grad():
        states = folders[1][name](torch.tensor([list(ids)]), output_hidden_states=True).hidden_states
    np.testing.assert_allclose(out, states[1][0].numpy(), atol=2e-3)  # layer 1 of 2: no final norm yet
    expected = {"tiny-gpt2": ("Activation (GELU (tanh))", "Norm (LN)"),
                "tiny-llama": ("Activation (SiLU)", "Norm (RMSNorm)"),
                "tiny-bert": ("Activation (GELU)", "Residual add & norm (LN)")}[name]
    assert all(any(e in t for t in titles) for e in expected), titles
    if name == "tiny-llama":
        assert "**12. Gate and up projections**" in titles
        panel = at.selectbox(key=av.NUMBERS)
        assert {"12. G", "12. U", "13. N"} <= set(panel.options)
