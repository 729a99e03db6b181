"""Attention against independent references: torch.nn.MultiheadAttention with copied weights and numpy."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_core import (
    MultiHeadAttention,
    RotaryEmbedding,
    TransformerConfig,
    causal_mask,
    combine_masks,
    padding_mask,
    scaled_dot_product_attention,
)

B, T, S, C, H = 3, 5, 7, 16, 4


def _pair(bias: bool = True) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    torch.manual_seed(0)
    ours = MultiHeadAttention(C, H, bias=bias).eval()
    ref = nn.MultiheadAttention(C, H, bias=bias, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
            ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ours, ref


def _valid(batch: int, length: int) -> torch.Tensor:
    lengths = torch.tensor([length, length - 2, 1])[:batch]
    return torch.arange(length)[None, :] < lengths[:, None]  # (B, S), padding at the end


@pytest.mark.parametrize("masking", ["none", "causal", "padding", "causal+padding"])
@pytest.mark.parametrize("bias", [True, False])
def test_self_attention_matches_nn_multihead_attention(masking, bias):
    ours, ref = _pair(bias)
    x = torch.randn(B, T, C)
    ours_mask, attn_mask, key_padding_mask = None, None, None
    if "causal" in masking:
        ours_mask, attn_mask = causal_mask(T), ~causal_mask(T)  # nn: True = NOT allowed
    if "padding" in masking:
        valid = _valid(B, T)
        ours_mask = combine_masks(ours_mask, padding_mask(valid))
        key_padding_mask = ~valid
    out, weights = ours(x, x, x, mask=ours_mask, need_weights=True)
    ref_out, ref_weights = ref(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                               need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(weights, ref_weights)
    _, ref_mean = ref(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=True)
    torch.testing.assert_close(weights.mean(dim=1), ref_mean)


@pytest.mark.parametrize("separate_value", [False, True])
def test_cross_attention_matches_nn_with_different_lengths(separate_value):
    ours, ref = _pair()
    query, memory = torch.randn(B, T, C), torch.randn(B, S, C)
    value = torch.randn(B, S, C) if separate_value else memory
    valid = _valid(B, S)
    out, weights = ours(query, memory, value, mask=padding_mask(valid), need_weights=True)
    ref_out, ref_weights = ref(query, memory, value, key_padding_mask=~valid, average_attn_weights=False)
    assert weights.shape == (B, H, T, S)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(weights, ref_weights)
    fused, none = ours(query, memory, value, mask=padding_mask(valid))
    assert none is None
    torch.testing.assert_close(fused, out)


@pytest.mark.parametrize("masking", ["none", "causal", "padding", "both", "is_causal", "is_causal+padding"])
def test_fused_path_equals_explicit_path(masking):
    ours, _ = _pair()
    x = torch.randn(B, T, C)
    mask = None
    if masking in ("causal", "both"):
        mask = causal_mask(T)
    if "padding" in masking or masking == "both":
        mask = combine_masks(mask, padding_mask(_valid(B, T)))
    is_causal = masking.startswith("is_causal")
    fused, _ = ours(x, x, x, mask=mask, is_causal=is_causal)
    explicit, weights = ours(x, x, x, mask=mask, need_weights=True, is_causal=is_causal)
    torch.testing.assert_close(fused, explicit)
    if is_causal:
        assert torch.all(weights.triu(diagonal=1) == 0)
        same, _ = ours(x, x, x, mask=combine_masks(mask, causal_mask(T)), need_weights=True)
        torch.testing.assert_close(explicit, same)


def test_is_causal_with_fewer_queries_than_keys_aligns_to_the_last_key():
    ours, _ = _pair()
    x = torch.randn(1, S, C)
    _, full = ours(x, x, x, need_weights=True, is_causal=True)
    fused_tail, _ = ours(x[:, -2:], x, x, is_causal=True)
    out_tail, tail = ours(x[:, -2:], x, x, need_weights=True, is_causal=True)
    torch.testing.assert_close(tail, full[:, :, -2:])
    torch.testing.assert_close(fused_tail, out_tail)


def test_causal_mask_with_fewer_queries_is_the_last_rows_of_the_square_one():
    square = causal_mask(S)
    assert square.dtype == torch.bool and bool(square[1, 0]) and not bool(square[0, 1])  # True = may attend
    torch.testing.assert_close(causal_mask(2, S), square[-2:])
    assert causal_mask(T, T).equal(square[:T, :T])


def test_fully_masked_rows_give_zeros_not_nan_in_both_paths():
    ours, _ = _pair()
    x = torch.randn(B, T, C, requires_grad=True)
    mask = torch.ones(B, 1, T, T, dtype=torch.bool)
    mask[:, :, 1] = False  # query 1 may attend to nothing
    mask[2] = False  # the whole third sequence sees nothing
    explicit, weights = ours(x, x, x, mask=mask, need_weights=True)
    fused, _ = ours(x, x, x, mask=mask)
    for out in (explicit, fused):
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out[:, 1], ours.out_proj.bias.expand(B, C))  # zero attention output
        torch.testing.assert_close(out[2], ours.out_proj.bias.expand(T, C))
    assert torch.all(weights[:, :, 1] == 0) and torch.all(weights[2] == 0)
    torch.testing.assert_close(weights[:2, :, [0, 2, 3, 4]].sum(-1), torch.ones(2, H, 4))
    torch.testing.assert_close(fused, explicit)
    (fused.sum() + explicit.sum()).backward()
    assert torch.isfinite(x.grad).all()


def test_dropout_only_acts_in_training():
    torch.manual_seed(0)
    attn = MultiHeadAttention(C, H, dropout=0.5)
    x = torch.randn(B, T, C)
    attn.eval()
    first, _ = attn(x, x, x, need_weights=True)
    second, _ = attn(x, x, x)
    torch.testing.assert_close(first, second)
    attn.train()
    _, dropped = attn(x, x, x, need_weights=True)
    assert (dropped == 0).any()


def _numpy_attention(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v, weights


def test_scaled_dot_product_attention_matches_numpy_and_torch():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((B, H, n, 8)) for n in (T, S, S))
    mask = rng.random((B, 1, T, S)) > 0.3
    mask[..., 0] = True  # every query keeps at least one key
    out, weights = scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), mask=torch.tensor(mask))
    ref_out, ref_weights = _numpy_attention(q, k, v, mask)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights.numpy(), ref_weights, rtol=1e-10, atol=1e-12)
    torch_out = F.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(mask))
    torch.testing.assert_close(out, torch_out)


def test_attention_rows_sum_to_one_and_causal_weights_are_exactly_zero_above_the_diagonal():
    q, k, v = torch.randn(3, B, H, T, 8).unbind(0)
    _, weights = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T))
    _, causal = scaled_dot_product_attention(q, k, v, mask=causal_mask(T))
    above = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    assert torch.all(causal[..., above] == 0)
    assert torch.all(causal[..., ~above] > 0)
    torch.testing.assert_close(causal.sum(-1), torch.ones(B, H, T))
    torch.testing.assert_close(causal[..., 0, 0], torch.ones(B, H))


def _pair_weight(attn, rotary, offset, distance, length=12):
    """Weight from the query at ``offset + distance`` to the key at ``offset`` when only those two are visible."""
    torch.manual_seed(1)
    x = torch.randn(1, length, C)
    a, b = torch.randn(2, C).unbind(0)
    x[0, offset], x[0, offset + distance] = a, b
    mask = torch.zeros(length, length, dtype=torch.bool)
    mask[offset + distance, [offset, offset + distance]] = True
    mask |= ~mask.any(dim=-1, keepdim=True)  # other rows attend anywhere; only one row is read
    _, weights = attn(x, x, x, mask=mask, need_weights=True, positions=rotary)
    return weights[0, :, offset + distance, offset]  # (H,)


def test_rotary_attention_depends_only_on_relative_position():
    torch.manual_seed(0)
    attn = MultiHeadAttention(C, H).eval()
    rotary = RotaryEmbedding(C // H, max_len=12)
    reference = _pair_weight(attn, rotary, offset=0, distance=3)
    for offset in (1, 4, 8):
        torch.testing.assert_close(_pair_weight(attn, rotary, offset, distance=3), reference)
    assert not torch.allclose(_pair_weight(attn, rotary, offset=0, distance=1), reference, atol=1e-3)
    # Without rotary the same pair of tokens gets the same weight at every distance: no sense of position.
    plain = _pair_weight(attn, None, offset=0, distance=3)
    torch.testing.assert_close(_pair_weight(attn, None, offset=0, distance=1), plain)


@pytest.mark.parametrize(("d_model", "n_heads"), [(16, 0), (100, 8), (16, -2), (16.0, 4), (16, 2.0)])
def test_invalid_head_counts_give_the_same_message_as_the_config(d_model, n_heads):
    with pytest.raises(ValueError) as from_config:
        TransformerConfig(d_model=d_model, n_heads=n_heads)
    with pytest.raises(ValueError, match=re.escape(str(from_config.value))):
        MultiHeadAttention(d_model, n_heads)


def test_zero_heads_and_non_divisible_widths_are_explained():
    with pytest.raises(ValueError, match=re.escape("n_heads=0 must be a positive number")):
        MultiHeadAttention(16, 0)
    with pytest.raises(ValueError, match=re.escape("valid head counts for 100 are 1, 2, 4, 5, 10, 20, 25, 50, 100")):
        MultiHeadAttention(100, 8)
