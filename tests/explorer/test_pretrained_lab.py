"""Pretrained models in the Attention Lab, checked against transformers (the reference implementation)."""

from __future__ import annotations

import pytest
import torch

from explorer.pretrained.lab import attention_layers, encode, mask_fills, next_tokens


def test_gpt2_text_becomes_its_own_subword_tokens_with_visible_spaces(gpt2):
    _, pre = gpt2
    inp = encode(pre, "the cat sat", 48)
    assert list(inp.ids) == pre.tokenizer.encode("the cat sat").ids
    assert "␣" in inp.tokens and not any("Ġ" in t for t in inp.tokens)
    assert "".join(inp.tokens).replace("␣", " ") == "the cat sat"


def test_long_texts_are_cut_and_bert_keeps_its_sep(bert):
    _, pre = bert
    inp = encode(pre, "the cat sat on the mat " * 3, 8)
    assert len(inp.ids) == 8 and inp.tokens[0] == "[CLS]" and inp.tokens[-1] == "[SEP]"
    assert inp.notices and "first 8" in inp.notices[0]
    assert encode(pre, "   ", 8).empty


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_every_layers_weights_and_the_steps_equal_the_reference(family, gpt2, bert):
    hf, pre = gpt2 if family == "gpt2" else bert
    inp = encode(pre, "the cat sat on the mat", 48)
    ref = hf(torch.tensor([inp.ids]), output_attentions=True).attentions
    for layer in range(len(ref)):
        weights, steps = attention_layers(pre, inp, layer)
        for ours, theirs in zip(weights, ref, strict=True):
            torch.testing.assert_close(ours, theirs[0], atol=1e-5, rtol=0)
        torch.testing.assert_close(steps.weights, ref[layer][0], atol=1e-5, rtol=0)
        torch.testing.assert_close(steps.weights, torch.softmax(steps.masked, -1), atol=1e-6, rtol=0)


def test_gpt2_next_tokens_are_the_references_softmax_with_temperature(gpt2):
    hf, pre = gpt2
    inp = encode(pre, "the cat", 48)
    logits = hf(torch.tensor([inp.ids])).logits[0, -1].double()
    for temperature in (1.0, 0.5, 2.0):
        guesses = next_tokens(pre, inp, k=5, temperature=temperature)
        probs = torch.softmax(logits / temperature, -1)
        top = probs.topk(5)
        assert [g.probability for g in guesses] == pytest.approx(top.values.tolist(), abs=1e-5)
        assert [g.token for g in guesses] == [pre.tokenizer.id_to_token(int(i)).replace("Ġ", "␣")
                                              for i in top.indices]
    with pytest.raises(ValueError, match="must be positive"):
        next_tokens(pre, inp, temperature=0)


def test_bert_fills_each_mask_with_the_references_top_tokens(bert):
    hf, pre = bert
    inp = encode(pre, "the [MASK] sat on the [MASK]", 48)
    fills = mask_fills(pre, inp, k=3)
    assert [i for i, _ in fills] == [2, 6]
    logits = hf(torch.tensor([inp.ids])).logits[0]
    for position, guesses in fills:
        top = torch.softmax(logits[position].double(), -1).topk(3)
        assert [g.token for g in guesses] == [pre.tokenizer.id_to_token(int(i)) for i in top.indices]
        assert [g.probability for g in guesses] == pytest.approx(top.values.tolist(), abs=1e-5)
    assert mask_fills(pre, encode(pre, "the cat sat", 48)) == []
