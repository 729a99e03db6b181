"""The Attention Lab's *Switch heads off* section: head buttons, before → after, share links and the logit lens."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.app.conftest import app_at, assert_no_exception, link_notices, opened_from_link
from tests.app.test_attention_lab import _z
from tests.core.intervention_models import value_edited
from tests.pretrained.hf_folders import gpt2_folder
from transformer_core.tasks import get_task
from ui.attention import keys as lab_keys
from ui.common import state

PAGE = "pages/attention.py"


def _summary(at) -> list[str]:
    return [m.value[2:] for m in at.markdown if m.value.startswith("- ")]


def _guess_tables(at) -> list:
    return [d.value for d in at.dataframe if list(d.value.columns) == ["token", "probability"]]


def _chart(at, key: str) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id)


def test_random_model_switches_a_head_off_and_the_link_keeps_it() -> None:
    at = app_at(PAGE)
    assert _summary(at) == ["Every head is on: pick heads to switch them off."]
    pills = at.button_group(key=lab_keys.OFF_PICK + "1")
    assert pills.help and at.radio(key=lab_keys.OFF_MODE).help
    pills.set_value([1]).run()
    assert_no_exception(at)
    (moved,) = _summary(at)
    assert moved.startswith("The final token vectors moved by") and "%" in moved
    assert at.query_params[lab_keys.OFF] == "2.2"
    at.radio(key=lab_keys.OFF_MODE).set_value("mean").run()
    assert at.query_params[lab_keys.OFF_MODE] == "mean" and _summary(at)[0] != moved  # another replacement
    next(b for b in at.button if b.label == "Switch every head back on").click().run()
    assert _summary(at) == ["Every head is on: pick heads to switch them off."]
    assert lab_keys.OFF not in at.query_params


def test_a_link_switches_heads_off_and_names_those_this_model_lacks() -> None:
    at = opened_from_link(PAGE, {lab_keys.OFF: "1.2,9.9,2.1"})
    assert at.button_group(key=lab_keys.OFF_PICK + "0").value == [1]
    assert at.button_group(key=lab_keys.OFF_PICK + "1").value == [0]
    assert any("'9.9' is not a head of this model (2 layers × 2 heads)" in n for n in link_notices(at))
    assert _summary(at)[0].startswith("The final token vectors moved")


def _induction_entry() -> state.TrainedModel:
    task = get_task("induction")
    torch.manual_seed(0)
    model = task.build_model(task.default_model_config()).eval()
    return state.TrainedModel("causal_lm", "induction", "Induction", model, model.config, step=7, task=task)


def test_trained_decoder_shows_next_characters_before_and_after_and_its_logit_lens() -> None:
    entry = _induction_entry()
    at = app_at(None)
    at.session_state[state.TRAINED] = {"causal_lm": entry}
    at.session_state[lab_keys.SOURCE] = "causal_lm"
    at.session_state[lab_keys.TEXT] = "ABCAB"
    at.switch_page(PAGE).run()
    at.button_group(key=lab_keys.OFF_PICK + "0").set_value([0, 2]).run()
    assert_no_exception(at)
    before, after = _guess_tables(at)
    vocab = entry.task.input_vocabulary()
    ids = torch.tensor([[vocab[c] for c in "ABCAB"]])
    with torch.no_grad():
        ref = value_edited(entry.model, {("decoder", 0, 0): None, ("decoder", 0, 2): None})(ids)[0, -1].softmax(-1)
    np.testing.assert_allclose(after["probability"].to_numpy(), ref.topk(5).values.numpy(), atol=1e-6)
    assert not np.allclose(before["probability"].to_numpy(), after["probability"].to_numpy())
    assert any(line.startswith("Held-out accuracy:") for line in _summary(at))
    toggle = at.toggle(key=lab_keys.LENS)
    assert toggle.help
    toggle.set_value(True).run()
    lens = _chart(at, "attn.lens_chart")["data"][0]
    assert _z(lens).shape == (entry.config.n_layers, 5)
    with torch.no_grad():
        last = value_edited(entry.model, {("decoder", 0, 0): None, ("decoder", 0, 2): None})(ids)[0].softmax(-1)
    np.testing.assert_allclose(_z(lens)[-1], last.max(-1).values.numpy(), atol=1e-5)  # the model's own guess


def test_trained_encoder_decoder_scores_its_held_out_data_with_heads_off() -> None:
    task = get_task("reverse", seq_len=6)
    torch.manual_seed(0)
    model = task.build_model(task.default_model_config()).eval()
    entry = state.TrainedModel("seq2seq", "reverse", "Reverse", model, model.config, step=3, task=task)
    at = app_at(None)
    at.session_state[state.TRAINED] = {"seq2seq": entry}
    at.session_state[lab_keys.SOURCE] = "seq2seq"
    at.session_state[lab_keys.TEXT] = "31415"
    at.switch_page(PAGE).run()
    at.button_group(key=lab_keys.OFF_PICK + "1").set_value([3]).run()
    assert_no_exception(at)
    summary = _summary(at)
    held_out = task.evaluate(value_edited(model, {("encoder", 1, 3): None}), seed=0)["accuracy"]
    assert any(line.startswith("Answer on your text:") for line in summary)
    assert any(line.endswith(f"→ {held_out * 100:.3g}%") and "Held-out accuracy" in line for line in summary)
    assert not [t for t in at.toggle if t.key == lab_keys.LENS]  # the logit lens is for decoder-only models


@pytest.fixture(name="gpt2_dir")
def gpt2_dir_fixture(tmp_path, monkeypatch):
    hf = gpt2_folder(tmp_path / "models" / "tiny-gpt2", layers=2, heads=2)
    monkeypatch.setenv("TE_MODELS_DIR", str(tmp_path / "models"))
    return hf


def test_pretrained_gpt2_next_tokens_change_when_heads_switch_off(gpt2_dir) -> None:
    at = app_at(PAGE)
    at.radio(key=lab_keys.SOURCE).set_value("pretrained").run()
    at.text_input(key=lab_keys.TEXT).set_value("the cat sat on the").run()
    (plain,) = _guess_tables(at)
    at.button_group(key=lab_keys.OFF_PICK + "1").set_value([0, 1]).run()
    assert_no_exception(at)
    _, before, after = _guess_tables(at)
    assert before.equals(plain) and not after.equals(before)
    assert _summary(at)[0].startswith("Next token after “") and " → " in _summary(at)[0]
    at.toggle(key=lab_keys.LENS).set_value(True).run()
    lens = _chart(at, "attn.lens_chart")["data"][0]
    tokens = next(m.value for m in at.markdown if m.value.startswith("**Tokens"))
    assert _z(lens).shape == (2, tokens.count("·"))


def test_pretrained_bert_fill_ins_before_and_after(tmp_path, monkeypatch) -> None:
    from tests.pretrained.hf_folders import bert_folder, mark_special_tokens

    bert_folder(tmp_path / "models" / "tiny-bert", layers=2, heads=2)
    mark_special_tokens(tmp_path / "models" / "tiny-bert")
    monkeypatch.setenv("TE_MODELS_DIR", str(tmp_path / "models"))
    at = app_at(PAGE)
    at.radio(key=lab_keys.SOURCE).set_value("pretrained").run()
    at.text_input(key=lab_keys.TEXT).set_value("the cat sat").run()
    at.button_group(key=lab_keys.OFF_PICK + "0").set_value([1]).run()
    assert_no_exception(at)
    assert any("put [MASK] in your text" in i.value for i in at.info)
    at.text_input(key=lab_keys.TEXT).set_value("the cat sat on the [MASK]").run()
    plain, before, after = _guess_tables(at)
    assert before.equals(plain) and not after.equals(before)
    assert _summary(at)[0].startswith("Fill-ins for position 6: top")
