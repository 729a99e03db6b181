"""*Beyond attention → The MLP half* on every kind of model the Lab shows: the token × top-neuron heatmap equals the
library's neuron activations, a neuron's top sentences are the argmax of the library over the corpus, and models
that cannot read English sentences say so while still showing their neurons."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from explorer.lab import neuron_corpus
from explorer.lab.neuron_corpus import top_neurons
from explorer.lab.subjects import random_lab
from explorer.pretrained.lab import encode
from tests.app.conftest import app_at, assert_no_exception, vega_heatmaps
from tests.app.test_switch_combinations import _pretrained, _trained
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder, mark_special_tokens
from transformer_core.neurons import neuron_activations
from transformer_core.pretrained import load_pretrained
from ui.attention import controls, lab_run
from ui.attention import keys as av
from ui.attention.beyond import mlp_half
from ui.common import state

PAGE = "pages/attention.py"
VIEW = {av.BEYOND: "mlp"}
SCAN = "attn.mlp.scan"


@pytest.fixture(scope="module", name="hf")
def hf_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2", layers=2, heads=2)
    llama_folder(root / "tiny-llama", layers=2, heads=6, kv_heads=2, width=48)
    bert_folder(root / "tiny-bert", layers=2, heads=2)
    mark_special_tokens(root / "tiny-bert")
    return root


@pytest.fixture(name="folders")
def folders_fixture(hf, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(hf))
    return hf


@pytest.fixture(autouse=True)
def _small_corpus(monkeypatch):
    """The first 48 sentences of the corpus (three chunks), so that each scan and its oracle stay quick."""
    from explorer.lab import neuron_corpus

    small = neuron_corpus.corpus_sentences()[:48]
    monkeypatch.setattr(neuron_corpus, "corpus_sentences", lambda: small)
    monkeypatch.setattr(mlp_half, "corpus_sentences", lambda: small)
    mlp_half._shared.clear()
    yield
    mlp_half._shared.clear()


def _open(at):
    at.session_state[av.BEYOND] = "mlp"
    at.run()
    assert_no_exception(at)
    return at


def _map(at) -> np.ndarray:
    return next(m["z"] for m in vega_heatmaps(at) if m["spec"].get("title", {}) or True and
                m["z"].shape[1] == len(_columns(at)))


def _columns(at) -> list[int]:
    return [int(o) for o in at.get("button_group")[-1].options] if False else at.session_state["_tops"]


def _heatmap(at, rows: int) -> np.ndarray:
    """The last heatmap on the page with ``rows`` rows (the view's token × top-neuron map)."""
    return [m["z"] for m in vega_heatmaps(at) if m["z"].shape[0] == rows][-1]


def _listed(at) -> list[tuple[float, str]]:
    """The top sentences listed: (activation, the bold token)."""
    text = next(m.value for m in at.markdown if m.value.startswith("1. `"))
    return [(float(v), tok) for v, tok in re.findall(r"`(-?[\d.]+)` .*?\*\*\[(.+?)\]\*\*", text)]


def _check_heatmap(at, acts: torch.Tensor, layer: int = 0) -> list[int]:
    """The view's heatmap equals the library's activations of the layer at its top neurons; returns them."""
    here = acts[layer]
    tops = top_neurons(here, mlp_half.SHOWN)
    np.testing.assert_allclose(_heatmap(at, here.shape[0]), here[:, tops].numpy(), atol=1e-4)
    assert at.session_state[av.MLP_NEURON] == tops[0]
    return tops


def _check_top_sentences(at, model, read, layer: int, neuron: int) -> None:
    """The listed sentences' activations are the highest maxima over the corpus, by the library."""
    scores = []
    for text in neuron_corpus.corpus_sentences():
        got = read(text)
        if got:
            scores.append(float(neuron_activations(model, list(got))[layer, :, neuron].max()))
    expected = sorted(scores, reverse=True)[:mlp_half.EXAMPLES]
    assert [v for v, _ in _listed(at)] == pytest.approx(expected, abs=2e-3)


def test_random_weights_neurons_and_top_sentences() -> None:
    at = _open(app_at(PAGE))
    s = controls.LabSettings(**{**controls.settings().__dict__})
    lab, _, model = random_lab(s.text, s.kind, d_model=s.d_model, heads=s.heads, layers=s.layers, mask=s.mask,
                               seed=s.seed)
    acts = neuron_activations(model, list(lab.ids))
    tops = _check_heatmap(at, acts)
    at.button(key=SCAN).click().run()
    assert_no_exception(at)
    from explorer.lab.text_input import tokenize

    _check_top_sentences(at, model, lambda t: tokenize(t, "sentence").ids, 0, tops[0])
    first = _listed(at)
    at.number_input(key=av.MLP_NEURON).set_value(tops[1]).run()  # typed: another neuron, other sentences
    assert _listed(at) != first
    _check_top_sentences(at, model, lambda t: tokenize(t, "sentence").ids, 0, tops[1])
    assert "polysemantic" in " ".join(c.value for c in at.caption)


def test_random_weights_on_digits_say_the_corpus_cannot_apply() -> None:
    at = app_at(PAGE, query={**VIEW, av.KIND: "digits", av.TEXT: "31415"})
    assert_no_exception(at)
    assert any("not English sentences" in i.value for i in at.info)
    assert not any(b.key == SCAN for b in at.button)


def test_trained_character_model_reads_the_corpus() -> None:
    at = _open(_trained("causal_lm", "char_lm", "the cat sat"))
    entry = at.session_state[state.TRAINED]["causal_lm"]
    lab = lab_run.trained_input(entry, "the cat sat")[0]
    tops = _check_heatmap(at, neuron_activations(entry.model, list(lab.ids)))
    at.button(key=SCAN).click().run()
    assert_no_exception(at)
    _check_top_sentences(at, entry.model, lambda t: lab_run.trained_input(entry, t)[0].ids, 0, tops[0])


@pytest.mark.parametrize(("family", "task", "text"), [("seq2seq", "reverse", "31415"),
                                                      ("regression", "protein", "MKTAYIAK")])
def test_trained_task_models_show_neurons_and_refuse_the_corpus(family: str, task: str, text: str) -> None:
    at = _open(_trained(family, task, text))
    assert any("cannot read the corpus" in i.value for i in at.info)
    entry = at.session_state[state.TRAINED][family]
    ids = list(lab_run.trained_input(entry, text)[0].ids)
    acts = (neuron_activations(entry.model, (ids, [1]), stack="encoder") if family == "seq2seq" else
            neuron_activations(entry.model, ids))
    _check_heatmap(at, acts)


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama", "tiny-bert"])
@pytest.mark.slow
def test_pretrained_models(folders, name: str) -> None:
    at = _open(_pretrained(name, "the cat sat on the mat"))
    pre = load_pretrained(folders / name)
    ids = list(encode(pre, "the cat sat on the mat", 48).ids)
    tops = _check_heatmap(at, neuron_activations(pre.model, ids))
    at.button(key=SCAN).click().run()
    assert_no_exception(at)
    _check_top_sentences(at, pre.model, lambda t: list(encode(pre, t, 48).ids), 0, tops[0])
    again = _open(_pretrained(name, "a dog ran far away"))  # another session: the corpus is not read again
    assert not any(b.key == SCAN for b in again.button) and _listed(again)


def test_the_csv_of_top_sentences_holds_the_listed_values() -> None:
    from explorer.lab.neuron_corpus import Example

    csv = mlp_half._examples_csv([Example("The cat sat.", ("The", "cat", "sat", "."), 1, 2.5)], 0, 7)
    assert csv.splitlines()[1] == "1,7,1,2.5,cat,1,The cat sat."


def test_the_neuron_travels_in_the_link_and_a_bad_one_falls_back_to_the_top_neuron() -> None:
    at = app_at(PAGE, query={**VIEW, av.MLP_NEURON: "5"})
    assert_no_exception(at)
    assert at.number_input(key=av.MLP_NEURON).value == 5
    assert any(m.value.startswith("Neuron **5** of layer 1") for m in at.markdown)
    assert not any(av.MLP_NEURON in i.value for i in at.info)
    at = app_at(PAGE, query={**VIEW, av.MLP_NEURON: "99999"})  # beyond the layer's 64 neurons
    assert_no_exception(at)
    top = at.session_state[av.MLP_NEURON]
    assert 0 <= top < 64
    assert any(f"{av.MLP_NEURON}='99999' was changed to {top}: this layer's neurons are 0 to 63" in i.value
               for i in at.info)
