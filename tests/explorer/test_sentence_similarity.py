"""A sentence-embedding encoder's line similarities, checked against transformers' model and pooling by hand."""

from __future__ import annotations

import json

import pytest
import torch

from explorer.pretrained.lab import mask_fills
from explorer.pretrained.similarity import EXAMPLE_LINES, MAX_LINES, embeds_sentences, sentence_similarity, split_lines
from tests.pretrained.tokenizer_folders import model_folder
from transformer_core.pretrained import load_pretrained


def _reference(hf, tokenizer, lines, mode):
    batch = tokenizer(list(lines), padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = hf(**batch).last_hidden_state  # (N, T, C)
    keep = batch["attention_mask"].unsqueeze(-1).float()
    pooled = hidden[:, 0] if mode == "cls" else (hidden * keep).sum(1) / keep.sum(1)
    vectors = torch.nn.functional.normalize(pooled, dim=-1)
    return vectors, vectors @ vectors.T


def _pooling(folder, **modes):
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 16, **modes}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))


@pytest.mark.parametrize("mode", ["mean", "cls"])
def test_cosine_matrix_equals_transformers_pooled_embeddings(tmp_path, mode):
    hf, tokenizer = model_folder("bert-model", "bert-json", tmp_path, layout="int-buffers")
    if mode == "cls":
        _pooling(tmp_path, pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    pre = load_pretrained(tmp_path)
    assert embeds_sentences(pre) and pre.pooling.mode == mode
    lines = list(EXAMPLE_LINES)
    result = sentence_similarity(pre, lines)
    vectors, cosine = _reference(hf, tokenizer, lines, mode)
    torch.testing.assert_close(result.embeddings, vectors, atol=1e-5, rtol=0)
    torch.testing.assert_close(result.cosine, cosine, atol=1e-5, rtol=0)
    assert result.n_tokens == tuple(len(tokenizer(line)["input_ids"]) for line in lines)
    torch.testing.assert_close(result.cosine.diagonal(), torch.ones(len(lines)), atol=1e-5, rtol=0)


def test_lines_are_capped_and_unsupported_pooling_falls_back_to_mean_with_a_note(tmp_path):
    model_folder("bert-model", "bert-json", tmp_path)
    _pooling(tmp_path, pooling_mode_weightedmean_tokens=True)
    pre = load_pretrained(tmp_path)
    result = sentence_similarity(pre, split_lines("\n".join(f"line {i}" for i in range(MAX_LINES + 2)) + "\n\n"))
    assert len(result.lines) == MAX_LINES and result.pooling.mode == "mean"
    assert any("first 8 are compared" in n for n in result.notices)
    assert any("own pooling (weightedmean_tokens) is not computed here" in n for n in result.notices)
    with pytest.raises(ValueError, match="Write a few lines"):
        sentence_similarity(pre, [])


def test_a_masked_lm_is_not_a_sentence_embedding_model_but_fills_its_mask(tmp_path):
    hf, tokenizer = model_folder("roberta", "roberta-files", tmp_path)
    pre = load_pretrained(tmp_path)
    assert not embeds_sentences(pre)
    with pytest.raises(ValueError, match="not a sentence-embedding model"):
        sentence_similarity(pre, ["a"])
    from explorer.pretrained.lab import encode
    inp = encode(pre, "The capital of France is <mask>.", 48)
    (position, guesses), = mask_fills(pre, inp, k=3)
    with torch.no_grad():
        logits = hf(torch.tensor([inp.ids])).logits[0, position]
    assert inp.ids == tuple(tokenizer("The capital of France is <mask>.")["input_ids"])
    assert [g.probability for g in guesses] == pytest.approx(torch.softmax(logits.double(), -1).topk(3).values.tolist(),
                                                             abs=1e-5)
