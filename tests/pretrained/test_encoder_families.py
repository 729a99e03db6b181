"""DistilBERT and RoBERTa on transformer_core give transformers' outputs and every layer's attention, in
several shapes, with and without the masked-LM head, with padding."""

from __future__ import annotations

import pytest
import torch
import transformers

from transformer_core.pretrained import load_pretrained
from transformer_core.pretrained.loader import build_model, read_config

LOGITS_ATOL, ATTN_ATOL = 1e-4, 1e-5
SHAPES = [dict(layers=1, heads=1, width=8, ff=16, positions=16), dict(layers=2, heads=2, width=16, ff=48, positions=24),
          dict(layers=3, heads=4, width=32, ff=64, positions=40)]


def _distilbert(shape, head):
    config = transformers.DistilBertConfig(n_layers=shape["layers"], n_heads=shape["heads"], dim=shape["width"],
                                           hidden_dim=shape["ff"], vocab_size=60,
                                           max_position_embeddings=shape["positions"], attn_implementation="eager")
    return (transformers.DistilBertForMaskedLM if head else transformers.DistilBertModel)(config)


def _roberta(shape, head):
    config = transformers.RobertaConfig(num_hidden_layers=shape["layers"], num_attention_heads=shape["heads"],
                                        hidden_size=shape["width"], intermediate_size=shape["ff"], vocab_size=60,
                                        max_position_embeddings=shape["positions"] + 2, attn_implementation="eager")
    return (transformers.RobertaForMaskedLM if head else transformers.RobertaModel)(config)


@pytest.mark.parametrize("head", [True, False], ids=["masked-lm", "base-model"])
@pytest.mark.parametrize("shape", SHAPES, ids=["small", "medium", "deeper"])
@pytest.mark.parametrize("make", [_distilbert, _roberta], ids=["distilbert", "roberta"])
def test_matches_transformers(tmp_path, make, shape, head):
    torch.manual_seed(len(shape) + shape["layers"])
    hf = make(shape, head).eval()
    hf.save_pretrained(tmp_path)
    model = build_model(tmp_path, read_config(tmp_path))
    assert (model.head is not None) == head
    length = shape["positions"] - 2
    ids = torch.randint(3, 60, (2, length), generator=torch.Generator().manual_seed(7))
    valid = torch.ones(2, length, dtype=torch.bool)
    valid[0, length // 2:] = False
    ids[~valid] = hf.config.pad_token_id
    with torch.no_grad():
        ref = hf(ids, attention_mask=valid.long(), output_attentions=True)
        out, attention = model.forward_with_attention(ids, valid=valid)
    expected = ref.logits if head else ref.last_hidden_state
    torch.testing.assert_close(out[valid], expected[valid], atol=LOGITS_ATOL, rtol=0)
    assert len(attention["encoder"]) == shape["layers"]
    for mine, theirs in zip(attention["encoder"], ref.attentions, strict=True):
        torch.testing.assert_close(mine[1], theirs[1], atol=ATTN_ATOL, rtol=0)
        keys = valid[0]
        torch.testing.assert_close(mine[0][:, keys][:, :, keys], theirs[0][:, keys][:, :, keys], atol=ATTN_ATOL,
                                   rtol=0)


def test_roberta_reads_as_many_tokens_as_transformers(tmp_path):
    hf = _roberta(SHAPES[0], True).eval()
    hf.save_pretrained(tmp_path)
    spec = read_config(tmp_path)
    assert spec.config.max_len == hf.config.max_position_embeddings - hf.config.pad_token_id - 1
    ids = torch.randint(3, 60, (1, spec.config.max_len))
    model = build_model(tmp_path, spec)
    with torch.no_grad():
        torch.testing.assert_close(model(ids), hf(ids).logits, atol=LOGITS_ATOL, rtol=0)


@pytest.mark.parametrize("change, message", [
    ({"max_position_embeddings": 2}, "leaves no positions after padding_idx=1"),
    ({"hidden_act": "relu"}, "RoBERTa's masked-LM head always uses GELU"),
])
def test_impossible_roberta_configs_are_refused(tmp_path, change, message):
    import json

    _roberta(SHAPES[0], True).save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(ValueError, match=message):
        load_pretrained(tmp_path)
