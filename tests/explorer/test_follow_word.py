"""*Follow a word*'s service: candidates, typed words read as their first token, where a candidate becomes the top
token, and the CSV, all from the library's logit lens."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
import torch

from explorer.lab import follow_word as fw
from transformer_core.config import TransformerConfig
from transformer_core.lens import follow_tokens
from transformer_core.models import CausalLM

IDS = [3, 1, 4, 1, 5]


@pytest.fixture(scope="module", name="model")
def model_fixture():
    torch.manual_seed(0)
    return CausalLM(TransformerConfig(vocab_size=12, max_len=8, d_model=16, n_heads=2, n_layers=3, d_ff=32)).eval()


def _label(i: int) -> str:
    return f"t{i}"


def test_top_candidates_are_the_models_own_likeliest(model):
    tops = fw.top_candidates(model, IDS, _label, k=4)
    with torch.no_grad():
        expected = model(torch.tensor([IDS]))[0, -1].topk(4).indices.tolist()
    assert [c.id for c in tops] == expected and tops[0].label == f"t{expected[0]}"


def test_paths_csv_and_first_top_follow_the_library(model):
    tops = fw.top_candidates(model, IDS, _label, k=3)
    paths = fw.follow_word(model, IDS, [*tops, tops[0]], position=-1)  # a repeat is followed once
    assert len(paths.candidates) == 3 and paths.position == len(IDS) - 1
    lib = follow_tokens(model, IDS, [c.id for c in tops])
    np.testing.assert_array_equal(paths.ranks, lib.ranks)
    rows = list(csv.DictReader(io.StringIO(paths.csv())))
    assert len(rows) == 3 * paths.n_layers
    assert float(rows[-1]["probability"]) == pytest.approx(float(lib.probs[-1, -1]), rel=1e-5)
    assert int(rows[0]["rank"]) == int(lib.ranks[0, 0]) and rows[0]["token"] == tops[0].label
    assert paths.ranks[-1, 0] == 1
    first = paths.first_top(0)
    assert first is not None and (paths.ranks[first - 1:, 0] == 1).all()
    assert first == 1 or paths.ranks[first - 2, 0] > 1
    assert paths.first_top(2) is None  # the third likeliest never ends on top


def test_typed_words_and_refusals():
    vocab = {"a": 1, "b": 2}
    encode = fw.char_encoder(vocab)
    assert encode("ba") == [2] and encode("xa") == [] and encode("") == []
    word = fw.typed_candidate("ba", encode, _label)
    assert word.id == 2 and "first token" in word.note
    with pytest.raises(ValueError, match="gives no token"):
        fw.typed_candidate("zz", encode, _label)


def test_a_typed_word_follows_the_text_as_a_new_word():
    merged = {"the": [10], "the ": [10, 14], "the cat": [10, 12], "cat": [13]}  # GPT-2: " cat" is one token
    assert fw.continuation_encoder(merged.__getitem__, "the")("cat") == [12]
    apart = {"the": [10], "the ": [10, 14], "the cat": [10, 14, 13], "the zz": [10, 14]}  # the space its own token
    assert fw.continuation_encoder(apart.__getitem__, "the")("cat") == [13]
    assert fw.continuation_encoder(apart.__getitem__, "the")("zz") == []


def test_too_many_or_no_candidates_are_refused(model):
    many = [fw.Candidate(i, _label(i)) for i in range(fw.MAX_CANDIDATES + 1)]
    with pytest.raises(ValueError, match="at most"):
        fw.follow_word(model, IDS, many)
    with pytest.raises(ValueError, match="at least one"):
        fw.follow_word(model, IDS, [])
