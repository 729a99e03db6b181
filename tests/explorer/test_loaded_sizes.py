"""A loaded pretrained model counted for the Model Builder, against transformers' own count and the formulas."""

from __future__ import annotations

import pytest

from explorer.pretrained.sizes import loaded_sizes
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, vit_folder
from transformer_core.pretrained import load_pretrained

BATCH = 4


@pytest.mark.parametrize("make", [gpt2_folder, bert_folder, vit_folder])
def test_the_count_is_the_loaded_models_own(tmp_path, make):
    hf = make(tmp_path, layers=3, heads=2, width=16)
    pre = load_pretrained(tmp_path)
    sizes = loaded_sizes(pre, batch_size=BATCH, where="models/x")
    assert sum(sizes.breakdown.values()) == pre.n_params == sizes.estimate.params
    assert pre.n_params == sum(p.numel() for p in hf.parameters())  # transformers counts tied weights once too
    assert sizes.shape["n_layers"] == 3 and sizes.shape["d_model"] == 16 and sizes.shape["n_heads"] == 2
    assert sizes.title == f"{pre.name} (loaded from models/x)"
    weights = 4 * pre.n_params  # float32
    assert sizes.estimate.weights_bytes == weights and sizes.estimate.optimizer_bytes == 2 * weights
    assert all(n > 0 for k, n in sizes.breakdown.items() if k in ("embeddings", "attention", "feed_forward", "norms"))


def test_gpt2_flops_follow_the_decoder_formula(tmp_path):
    gpt2_folder(tmp_path, layers=2, heads=2, width=16, vocab=40, positions=24)
    sizes = loaded_sizes(load_pretrained(tmp_path), batch_size=BATCH, where="models/x")
    c, f, t, v, layers = 16, 64, 24, 40, 2  # GPT-2's feed-forward is 4 x its width
    per_layer = t * (8 * c * c + 4 * c * f) + 4 * t * t * c  # projections, feed-forward, scores and mixing
    forward = layers * per_layer + 2 * t * c * v  # + the output head
    assert sizes.kind == "decoder" and sizes.shape["seq_len"] == t and sizes.shape["d_ff"] == f
    assert sizes.estimate.flops_per_token_forward == pytest.approx(forward / t)
    assert sizes.estimate.flops_per_step == 3 * BATCH * forward


def test_vit_counts_its_patches_and_cls_token(tmp_path):
    vit_folder(tmp_path, image=32, patch=8)
    sizes = loaded_sizes(load_pretrained(tmp_path), batch_size=BATCH, where="models/x")
    assert sizes.kind == "vit" and sizes.shape["seq_len"] == (32 // 8) ** 2 + 1
    assert sizes.estimate.tokens_per_step == BATCH * 17
