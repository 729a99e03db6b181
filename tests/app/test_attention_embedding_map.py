"""*Embedding map* in the Attention Lab's *Beyond attention* section, on every kind of model the Lab shows: local
GPT-2, Llama and BERT folders with random weights, a character model trained in this session, the random encoder."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from explorer.lab.embedding_map import embedding_map, pca_2d
from explorer.lab.word_uses import compare_uses, pretrained_reader, word_token
from tests.app.conftest import app_at, assert_no_exception, lab_with_trained
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder
from transformer_core.pretrained import load_pretrained
from ui.attention import keys as lab_keys
from ui.attention.beyond import embedding_map as view

PAGE = "pages/attention.py"


@pytest.fixture(scope="module", name="models")
def models_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2", layers=2, heads=2, positions=64)
    llama_folder(root / "tiny-llama", layers=2, heads=4, kv_heads=2)
    bert_folder(root / "tiny-bert", layers=2, heads=2)
    return root


@pytest.fixture(autouse=True)
def _models_dir(models, monkeypatch):
    monkeypatch.setenv("TE_MODELS_DIR", str(models))


def _map(at):
    at.session_state[lab_keys.BEYOND] = "map"
    at.run()
    assert_no_exception(at)
    return at


def _pretrained(model: str):
    at = app_at(PAGE)
    at.radio(key=lab_keys.SOURCE).set_value("pretrained").run()
    menu = at.selectbox(key=lab_keys.PRETRAINED_MODEL)
    menu.set_value(next(o for o in menu.options if o.startswith(model + " "))).run()
    return _map(at)


def _charts(at) -> dict[str, dict]:
    out = {}
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        out[json.dumps(spec["layout"].get("title", ""))] = spec
    return out


def _results(at) -> dict:
    return at.session_state[view.RESULTS]


def _held(at, what: str):
    return next(v for k, v in _results(at).items() if k[1] == what)


def test_gpt2_map_equals_the_library_and_changes_with_the_words(models):
    at = _pretrained("tiny-gpt2")
    at.text_input(key=lab_keys.MAP_WORDS).set_value("cat, dog, mat, sat, far").run()
    assert_no_exception(at)
    pre = load_pretrained(models / "tiny-gpt2")
    reader = pretrained_reader(pre)
    ids = [word_token(reader, w)[0] for w in ("cat", "dog", "mat", "sat", "far")]
    shown = _held(at, "map")
    expected = embedding_map(pre.model, ids, reader.label)
    assert shown.ids == expected.ids
    np.testing.assert_allclose(shown.plane.coords, expected.plane.coords, atol=1e-9)
    np.testing.assert_allclose(shown.cosines, expected.cosines, atol=1e-6)
    rows = list(csv.DictReader(io.StringIO(view.map_csv(shown))))
    assert [r["token"] for r in rows] == list(expected.labels)
    assert float(rows[2]["cosine_1"]) == pytest.approx(expected.cosines[2, 0])
    scatter = next(s for t, s in _charts(at).items() if "PCA" in t)
    assert "of the spread" in json.dumps(scatter["layout"]["xaxis"])
    assert any("spread" in c.value and "cosine" in c.value for c in at.caption)
    at.text_input(key=lab_keys.MAP_WORDS).set_value("cat, dog, mat").run()
    assert _held(at, "map").ids == tuple(ids[:3])
    at.text_input(key=lab_keys.MAP_WORDS).set_value("cat, cat").run()  # too few: said, page keeps working
    assert_no_exception(at)
    assert any("at least three" in i.value for i in at.info)


def test_gpt2_one_word_in_sentences_per_layer_and_bad_sentences(models):
    at = _pretrained("tiny-gpt2")
    at.text_input(key=lab_keys.MAP_WORD).set_value("cat").run()
    at.text_area(key=lab_keys.MAP_SENTENCES).set_value("the cat sat on the mat\na dog ran far away from the "
                                                            "cat").run()
    assert_no_exception(at)
    pre = load_pretrained(models / "tiny-gpt2")
    expected = compare_uses(pretrained_reader(pre), "cat", ["the cat sat on the mat", "a dog ran far away from the "
                                                                                       "cat"])
    shown = _held(at, "uses")
    np.testing.assert_allclose(shown.cosines, expected.cosines, atol=1e-9)
    assert shown.cosines.shape == (3, 1) and shown.cosines[0, 0] == pytest.approx(1.0)
    rows = list(csv.reader(io.StringIO(view.uses_csv(shown))))
    assert rows[0] == ["layer", "sentence 1 vs 2"] and len(rows) == 4
    assert any("Layer 0 is the word's embedding row" in c.value for c in at.caption)
    at.text_area(key=lab_keys.MAP_SENTENCES).set_value("the cat sat\na dog ran").run()
    assert_no_exception(at)
    assert any("is not in the sentence “a dog ran”" in i.value for i in at.info)


@pytest.mark.parametrize("model, word, sentences", [
    ("tiny-llama", "cat", "the cat sat on the mat\na cat ran far away"),
    ("tiny-bert", "dog", "the dog sat\na dog ran far away\nthe dog is all you need"),
])
def test_llama_and_bert(models, model, word, sentences):
    at = _pretrained(model)
    at.text_input(key=lab_keys.MAP_WORDS).set_value("cat, dog, mat, sat").run()
    at.text_input(key=lab_keys.MAP_WORD).set_value(word).run()
    at.text_area(key=lab_keys.MAP_SENTENCES).set_value(sentences).run()
    assert_no_exception(at)
    pre = load_pretrained(models / model)
    shown = _held(at, "uses")
    expected = compare_uses(pretrained_reader(pre), word, sentences.splitlines())
    np.testing.assert_allclose(shown.cosines, expected.cosines, atol=1e-9)
    assert shown.cosines.shape == (pre.model.config.n_layers + 1, len(shown.pairs))
    table = pre.model.embed.tokens.weight.detach()
    m = _held(at, "map")
    np.testing.assert_allclose(m.plane.coords, pca_2d(table[list(m.ids)]).coords, atol=1e-9)


def test_the_random_encoder_says_its_weights_are_random():
    at = _map(app_at(PAGE))
    assert any("weights are random" in i.value for i in at.info)
    m = _held(at, "map")
    assert set(m.labels) <= set(lab_keys.EXAMPLES["sentence"].split())  # the page's own words
    uses = _held(at, "uses")
    assert len(uses.uses) == 3 and np.allclose(uses.cosines[0], 1.0)  # "bank" is the same token every time
    assert {"PNG", "CSV"} <= {b.label for b in at.get("download_button")}


def test_a_character_model_maps_its_characters_and_reads_a_word_at_its_last_character():
    at, model = lab_with_trained("causal_lm", "char_lm")
    _map(at)
    m = _held(at, "map")
    assert len(m.ids) == min(40, model.config.vocab_size) and not any("random" in i.value for i in at.info)
    uses = _held(at, "uses")
    assert all(u.tokens[u.index] == "k" and len(u.pieces) == 4 for u in uses.uses)  # b·a·n·k: its last
    assert any("its last token is read" in c.value for c in at.caption)


def test_the_lens_its_words_and_sentences_travel_in_the_link():
    at = app_at(PAGE, query={"attn.beyond": "map", "attn.map.words": "river, bank, money, water",
                             "attn.map.word": "river", "attn.map.sentences": "the river bank\na river ran dry"})
    assert_no_exception(at)
    assert _held(at, "map").labels == ("river", "bank", "money", "water")
    uses = _held(at, "uses")
    assert uses.word == "river" and [u.sentence for u in uses.uses] == ["the river bank", "a river ran dry"]


def test_a_dots_label_is_left_to_its_hover_where_it_would_be_written_over_another():
    coords = np.array([[0.0, 0.0], [0.01, 0.005], [1.0, 1.0], [0.5, 0.0]])
    shown = view._placed(coords, ["finally", "come", "year", "the"])
    assert shown == ["finally", "", "year", "the"]  # "come" sat on "finally"; the others stand apart
