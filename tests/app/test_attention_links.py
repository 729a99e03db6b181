"""Share links of the Attention Lab's Pretrained source: the model travels by name, a missing one falls back."""

from __future__ import annotations

import pytest

from tests.app.conftest import app_at, link_notices, opened_from_link
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, mark_special_tokens
from ui.attention import keys as lab_keys

PAGE = "pages/attention.py"


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    # Names of their own: the pages cache a model's runs by its name, and other tests' tiny models differ.
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "link-gpt2", layers=6, heads=4, width=16)
    bert_folder(root / "link-bert", layers=2, heads=2)
    mark_special_tokens(root / "link-bert")
    return root


@pytest.fixture(autouse=True)
def _models_dir(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models))


def _query(at) -> dict[str, str]:
    return {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}


def test_the_source_the_model_and_a_deep_layer_travel_in_the_link():
    at = app_at(PAGE)
    at.radio(key=lab_keys.SOURCE).set_value("pretrained").run()
    menu = at.selectbox(key=lab_keys.PRETRAINED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith("link-bert "))).run()
    at.radio(key=lab_keys.LAYER).set_value(2).run()
    query = _query(at)
    assert query[lab_keys.SOURCE] == "pretrained" and query[lab_keys.PRETRAINED_MODEL] == "link-bert"
    linked = opened_from_link(PAGE, {**query, lab_keys.LAYER: "6", lab_keys.HEAD: "3",
                                     lab_keys.PRETRAINED_MODEL: "link-gpt2"})
    assert not link_notices(linked)  # layer 6 and head 3 exist in the 6-layer, 4-head GPT-2
    assert linked.radio(key=lab_keys.SOURCE).value == "pretrained"
    assert linked.selectbox(key=lab_keys.PRETRAINED_MODEL).value == "link-gpt2"
    assert linked.radio(key=lab_keys.LAYER).value == 6
    assert linked.radio(key=lab_keys.HEAD).value == 3
    assert "Weights of **link-gpt2**" in " ".join(c.value for c in linked.caption)


def test_a_model_not_on_this_server_falls_back_with_a_notice():
    at = opened_from_link(PAGE, {lab_keys.SOURCE: "pretrained", lab_keys.PRETRAINED_MODEL: "gpt2-xl",
                                 lab_keys.LAYER: "40"})
    notices = link_notices(at)
    # The first model of the menu, GPT-2 before BERT.
    assert any("attn.pretrained='gpt2-xl' was changed to link-gpt2" in n and "no GPT-2, Llama-family or BERT model "
               "of that name is on this server" in n for n in notices), notices
    assert "The link's setting attn.layer='40' was changed to 6: the model has 6 layers." in notices
    assert at.selectbox(key=lab_keys.PRETRAINED_MODEL).value == "link-gpt2"


def test_a_link_beyond_the_largest_model_is_ignored_and_a_trained_source_falls_back_to_random():
    at = opened_from_link(PAGE, {lab_keys.LAYER: "49", lab_keys.SOURCE: "causal_lm"})
    notices = link_notices(at)
    assert any(n.startswith("The link's setting attn.layer='49' was ignored: it must be between 1 and 48") for n in
               notices), notices
    assert any("attn.source='causal_lm' was changed to random: no model of that kind was trained" in n
               for n in notices), notices
    assert at.radio(key=lab_keys.SOURCE).value == "random"


def test_without_models_a_pretrained_link_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(tmp_path))
    at = opened_from_link(PAGE, {lab_keys.SOURCE: "pretrained", lab_keys.PRETRAINED_MODEL: "gpt2"})
    assert "The link's setting attn.pretrained='gpt2' was ignored: no GPT-2, Llama-family or BERT model is on this " \
           "server yet." in link_notices(at)
    assert any("showing random weights instead" in w.value for w in at.warning)
