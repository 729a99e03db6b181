"""Pretrained models on transformer_core give transformers' logits and attention weights."""

from __future__ import annotations

import pytest
import torch

from tests.pretrained.hf_folders import bert_folder, gpt2_folder, vit_folder
from transformer_core.pretrained import load_pretrained

LOGITS_ATOL, ATTN_ATOL = 1e-4, 1e-5


def _compare(ours, theirs_logits, theirs_attn, key, valid=None):
    logits, attention = ours
    if valid is not None:  # padded positions' outputs are not defined by either model
        logits, theirs_logits = logits[valid], theirs_logits[valid]
    torch.testing.assert_close(logits, theirs_logits, atol=LOGITS_ATOL, rtol=0)
    assert list(attention) == [key]
    assert len(attention[key]) == len(theirs_attn)
    for mine, ref in zip(attention[key], theirs_attn, strict=True):
        assert mine.shape == ref.shape
        torch.testing.assert_close(mine, ref, atol=ATTN_ATOL, rtol=0)


@pytest.mark.parametrize("shape", [
    dict(layers=1, heads=1, width=8, vocab=30, positions=16),
    dict(layers=2, heads=2, width=16, vocab=40, positions=24),
    dict(layers=3, heads=4, width=32, vocab=50, positions=40, tied=False),
])
def test_gpt2_matches_transformers(tmp_path, shape):
    hf = gpt2_folder(tmp_path, **shape)
    pre = load_pretrained(tmp_path)
    assert pre.family == "gpt2" and pre.n_params == hf.num_parameters()
    ids = torch.randint(0, shape["vocab"], (2, shape["positions"] - 3), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf(ids, output_attentions=True)
        _compare(pre.model.forward_with_attention(ids), ref.logits, ref.attentions, "decoder")


def test_gpt2_padding_matches_transformers(tmp_path):
    hf = gpt2_folder(tmp_path, layers=2, heads=2, width=16)
    pre = load_pretrained(tmp_path)
    ids = torch.randint(0, 40, (2, 9), generator=torch.Generator().manual_seed(2))
    valid = torch.ones(2, 9, dtype=torch.bool)
    valid[1, 6:] = False  # the second text is shorter: padded on the right
    with torch.no_grad():
        ref = hf(ids, attention_mask=valid.long(), output_attentions=True)
        logits, attention = pre.model.forward_with_attention(ids, valid=valid)
    torch.testing.assert_close(logits[valid], ref.logits[valid], atol=LOGITS_ATOL, rtol=0)
    for mine, theirs in zip(attention["decoder"], ref.attentions, strict=True):
        torch.testing.assert_close(mine[:, :, :, valid[1]][1], theirs[:, :, :, valid[1]][1], atol=ATTN_ATOL, rtol=0)
        torch.testing.assert_close(mine[0], theirs[0], atol=ATTN_ATOL, rtol=0)


@pytest.mark.parametrize("shape", [
    dict(layers=1, heads=1, width=8, ff=16, positions=16, segments=1),
    dict(layers=2, heads=2, width=16, ff=48, positions=24),
    dict(layers=3, heads=4, width=32, ff=64, positions=40, segments=3),
])
def test_bert_mlm_matches_transformers_with_padding_and_segments(tmp_path, shape):
    hf = bert_folder(tmp_path, **shape)
    pre = load_pretrained(tmp_path)
    assert pre.family == "bert" and pre.n_params == hf.num_parameters()
    gen = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 20, (2, 11), generator=gen)
    segments = torch.randint(0, shape.get("segments", 2), (2, 11), generator=gen)
    valid = torch.ones(2, 11, dtype=torch.bool)
    valid[0, 8:] = False
    with torch.no_grad():
        ref = hf(ids, token_type_ids=segments, attention_mask=valid.long(), output_attentions=True)
        ours = pre.model.forward_with_attention(ids, token_type_ids=segments, valid=valid)
    _compare(ours, ref.logits, ref.attentions, "encoder", valid=valid)


def test_bert_model_layout_gives_hidden_states(tmp_path):
    hf = bert_folder(tmp_path, mlm=False)
    pre = load_pretrained(tmp_path)
    assert pre.architecture == "BertModel" and pre.model.head is None
    ids = torch.randint(0, 20, (1, 7), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        ref = hf(ids, output_attentions=True)
        ours = pre.model.forward_with_attention(ids)
    assert pre.n_params == hf.num_parameters() - sum(p.numel() for p in hf.pooler.parameters())
    _compare(ours, ref.last_hidden_state, ref.attentions, "encoder")


@pytest.mark.parametrize("shape", [
    dict(layers=1, heads=1, width=8, ff=16, image=16, patch=8, classes=3),
    dict(layers=2, heads=2, width=16, ff=32, image=32, patch=8, classes=5),
    dict(layers=3, heads=4, width=32, ff=64, image=48, patch=16, classes=10),
])
def test_vit_matches_transformers(tmp_path, shape):
    hf = vit_folder(tmp_path, **shape)
    pre = load_pretrained(tmp_path)
    assert pre.family == "vit" and pre.n_params == hf.num_parameters() and pre.tokenizer is None
    assert pre.labels == tuple(hf.config.id2label[i] for i in range(shape["classes"]))
    images = torch.randn(2, 3, shape["image"], shape["image"], generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        ref = hf(images, output_attentions=True)
        _compare(pre.model.forward_with_attention(images), ref.logits, ref.attentions, "encoder")


def test_loaded_models_are_frozen_and_in_eval_mode(tmp_path):
    gpt2_folder(tmp_path)
    model = load_pretrained(tmp_path).model
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    assert model.lm_head.weight is model.embed.tokens.weight  # the head stays tied to the embedding


def test_old_bert_files_without_model_type_and_with_gamma_beta_names_load(tmp_path):
    import json

    from safetensors.torch import load_file, save_file

    hf = bert_folder(tmp_path)
    path = tmp_path / "model.safetensors"
    renamed = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
               for k, v in load_file(path).items()}
    save_file(renamed, path)
    raw = json.loads((tmp_path / "config.json").read_text())
    del raw["model_type"], raw["architectures"]  # as in the original small Google BERTs
    (tmp_path / "config.json").write_text(json.dumps(raw))
    pre = load_pretrained(tmp_path)
    assert pre.family == "bert" and pre.model.head is not None  # the stored head decides
    ids = torch.randint(0, 20, (1, 9), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        ref = hf(ids, output_attentions=True)
        _compare(pre.model.forward_with_attention(ids), ref.logits, ref.attentions, "encoder")
