"""*Where does it decide?* in the Attention Lab: activation patching and direct logit attribution on small local
GPT-2, Llama and BERT folders and on models trained in the session, checked against the library's own results;
the refusals on models with no answer to compare, and the explanation of texts of unequal lengths."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.app.conftest import app_at, assert_no_exception, lab_with_trained
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder, mark_special_tokens
from transformer_core.patching import direct_logit_attribution, logit_difference, patch_heads, patch_residual
from transformer_core.pretrained import load_pretrained
from transformer_core.tasks import get_task
from ui.attention import keys as av
from ui.attention.beyond import decide as view

PAGE = "pages/attention.py"
CLEAN, CORRUPT = "the cat sat on the mat", "the far sat on the mat"  # one token each in the tiny BPE
UNEVEN = "the dog sat on the mat"  # "dog" is two tokens there


@pytest.fixture(scope="module", name="root")
def root_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2", layers=2, heads=2)
    llama_folder(root / "tiny-llama", layers=2, heads=4, kv_heads=2)
    bert_folder(root / "tiny-bert", layers=2, heads=2)
    mark_special_tokens(root / "tiny-bert")
    return root


@pytest.fixture(autouse=True)
def _models_dir(root, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(root))


def _open(name: str, clean: str = CLEAN, corrupt: str = CORRUPT, **query: str):
    at = app_at(PAGE, query={av.SOURCE: "pretrained", av.PRETRAINED_MODEL: name, av.BEYOND: "decide",
                             av.DECIDE_CLEAN: clean, av.DECIDE_CORRUPT: corrupt, **query})
    assert_no_exception(at)
    return at


def _trained(family: str, task_name: str, clean: str, corrupt: str, **options):
    at, model = lab_with_trained(family, task_name, {
        av.BEYOND: "decide", av.DECIDE_CLEAN: clean, av.DECIDE_CORRUPT: corrupt,
        av.TEXT: clean or "The cat",  # the page's own text, which the model must read
    }, **options)
    assert_no_exception(at)
    return at, model


def _figure(at, key: str) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id)


def _z(at, key: str) -> np.ndarray:
    z = _figure(at, key)["data"][0]["z"]
    if isinstance(z, dict):  # plotly's binary form
        import base64
        shape = [int(s) for s in str(z["shape"]).split(",")]
        z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
    return np.asarray(z, dtype=float)


def _patch(at, what: str = "residual"):
    at.radio(key=av.DECIDE_WHAT).set_value(what).run()
    at.button(key="attn.decide.patch").click().run()
    assert_no_exception(at)
    return at


def _ids(root, name: str, text: str) -> list[int]:
    return load_pretrained(root / name).tokenizer.encode(text).ids


def test_gpt2_patching_grids_and_attribution_equal_the_library(root):
    at = _open("tiny-gpt2")
    answer, other = at.session_state[view.ANSWER], at.session_state[view.OTHER]
    model = load_pretrained(root / "tiny-gpt2").model
    clean, corrupt = _ids(root, "tiny-gpt2", CLEAN), _ids(root, "tiny-gpt2", CORRUPT)
    with torch.no_grad():
        top = [int(model(torch.tensor([ids]))[0, -1].argmax()) for ids in (clean, corrupt)]
    assert answer == top[0] and (other == top[1] or top[0] == top[1])
    metric = logit_difference(answer, other)
    _patch(at)
    expected = patch_residual(model, clean, corrupt, metric).restored
    np.testing.assert_allclose(_z(at, "attn.decide.dl.residual.chart"), expected, rtol=1e-6, atol=1e-9)
    columns = _figure(at, "attn.decide.dl.residual.chart")["data"][0]["x"]
    assert sum("✱" in c for c in columns) == 1 and "cat" in next(c for c in columns if "✱" in c)
    _patch(at, "heads")
    expected = patch_heads(model, clean, corrupt, metric).restored
    np.testing.assert_allclose(_z(at, "attn.decide.dl.heads.chart"), expected, rtol=1e-6, atol=1e-9)
    dla = direct_logit_attribution(model, clean, answer, other)
    bars = _figure(at, "attn.decide.dla.chart")["data"]
    heads = [y for trace in bars if trace["name"] == "head" for y in trace["y"]]
    np.testing.assert_allclose(heads, dla.heads.ravel(), rtol=1e-6, atol=1e-9)
    assert f"{dla.total:+.3f}, the model's own logit difference" in " ".join(c.value for c in at.caption)
    at.selectbox(key=view.OTHER).select_index(2).run()  # a third candidate
    assert_no_exception(at)
    new_other = at.session_state[view.OTHER]
    assert new_other not in (answer, other)
    bars = _figure(at, "attn.decide.dla.chart")["data"]
    moved = direct_logit_attribution(model, clean, answer, new_other)
    np.testing.assert_allclose([y for t in bars if t["name"] == "MLP" for y in t["y"]], moved.mlps, rtol=1e-6)
    assert moved.total != pytest.approx(dla.total)
    assert any("Press **Patch**" in i.value for i in at.info)  # another answer: the grids are computed anew


def test_unequal_lengths_are_explained_with_both_token_lists(root):
    at = _open("tiny-gpt2", corrupt=UNEVEN)
    (warning,) = [w.value for w in at.warning if "tokens" in w.value]
    assert "The clean text has 14 tokens and the corrupt text 15" in warning
    table = next(d.value for d in at.dataframe if "corrupt text" in d.value.columns)
    assert list(table["corrupt text"])[3:5] == ["do", "g"] and list(table["clean text"])[3] == "cat"
    assert list(table["clean text"])[-1] == "—" and table["differs"].tolist()[2] == ""
    assert not at.get("plotly_chart") or not any("attn.decide" in (c.proto.id or "") for c in at.get("plotly_chart"))


def test_llama_heads_are_patched_per_query_head(root):
    at = _patch(_open("tiny-llama"), "heads")
    answer, other = at.session_state[view.ANSWER], at.session_state[view.OTHER]
    model = load_pretrained(root / "tiny-llama").model
    clean, corrupt = _ids(root, "tiny-llama", CLEAN), _ids(root, "tiny-llama", CORRUPT)
    expected = patch_heads(model, clean, corrupt, logit_difference(answer, other)).restored
    assert expected.shape == (2, 4)
    np.testing.assert_allclose(_z(at, "attn.decide.dl.heads.chart"), expected, rtol=1e-6, atol=1e-9)


def test_bert_reads_the_mask_and_has_no_attribution(root):
    at = _open("tiny-bert", "the cat sat on the [MASK]", "the dog sat on the [MASK]")
    _patch(at)
    answer, other = at.session_state[view.ANSWER], at.session_state[view.OTHER]
    pre = load_pretrained(root / "tiny-bert")
    clean, corrupt = (pre.tokenizer.encode(t).ids for t in ("the cat sat on the [MASK]", "the dog sat on the [MASK]"))
    spot = clean.index(pre.tokenizer.token_to_id("[MASK]"))
    expected = patch_residual(pre.model, clean, corrupt, logit_difference(answer, other), position=spot).restored
    np.testing.assert_allclose(_z(at, "attn.decide.dl.residual.chart"), expected, rtol=1e-6, atol=1e-9)
    assert any(f"at the first [MASK] (position {spot})" in c.value for c in at.caption)
    assert any("BERT reads its answer through a norm after each block" in i.value for i in at.info)
    at.text_input(key=av.DECIDE_CORRUPT).set_value("the dog sat on the mat").run()
    assert any("[MASK] must be at the same place" in w.value for w in at.warning)


def test_trained_character_model_offers_its_pairs_and_patches(root):
    at, model = _trained("causal_lm", "char_lm", "", "")
    picker = at.selectbox(key=view.EXAMPLE)
    assert picker.value == "agreement" and picker.options == ["Agreement: sing / sings", "a / an", "Your own texts"]
    assert (at.session_state[av.DECIDE_CLEAN], at.session_state[av.DECIDE_CORRUPT]) == ("The robot sing",
                                                                                        "The birds sing")
    _patch(at)
    answer, other = at.session_state[view.ANSWER], at.session_state[view.OTHER]
    stoi = get_task("char_lm").stoi
    clean, corrupt = [stoi[c] for c in "The robot sing"], [stoi[c] for c in "The birds sing"]
    expected = patch_residual(model, clean, corrupt, logit_difference(answer, other)).restored
    np.testing.assert_allclose(_z(at, "attn.decide.dl.residual.chart"), expected, rtol=1e-6, atol=1e-9)
    assert _figure(at, "attn.decide.dla.chart")  # a pre-norm decoder-only model: its parts are drawn


def test_encoder_decoder_patches_the_stack_it_says(root):
    at, model = _trained("seq2seq", "reverse", "31415926", "31475926")
    at.radio(key=av.DECIDE_STACK).set_value("cross").run()
    _patch(at, "heads")
    from explorer.lab.decide import Reading, prepare
    digits = {str(d): d + 3 for d in range(10)}
    setup = prepare(model, "seq2seq", Reading(tuple(digits[c] for c in "31415926"), tuple("31415926")),
                    Reading(tuple(digits[c] for c in "31475926"), tuple("31475926")), stack="cross")
    answer, other = at.session_state[view.ANSWER], at.session_state[view.OTHER]
    expected = patch_heads(model, setup.clean, setup.corrupt, logit_difference(answer, other), stack="cross")
    np.testing.assert_allclose(_z(at, "attn.decide.dl.heads.chart"), expected.restored, rtol=1e-6, atol=1e-9)
    assert "(cross-attention heads)" in _figure(at, "attn.decide.dl.heads.chart")["layout"]["title"]["text"]
    assert any("encoder–decoder's answer also depends" in i.value for i in at.info)


def test_models_without_two_answers_are_refused_with_a_reason(root):
    at = app_at(PAGE, query={av.BEYOND: "decide"})
    assert any(i.value.startswith("Random weights predict nothing") for i in at.info)
    at, _ = _trained("regression", "protein", "MKTAYIAKQR", "MKTAYIAKQK")
    assert any("outputs numbers, not a choice between answers" in i.value for i in at.info)


def test_a_stopped_run_says_so_and_keeps_nothing(root):
    at = _open("tiny-gpt2")
    at.session_state[view.RUNNING] = True  # what an interrupted run leaves behind
    at.run()
    assert any(i.value.startswith("Patching was stopped before it finished") for i in at.info)
    assert not any("attn.decide.dl." in (c.proto.id or "") for c in at.get("plotly_chart"))
