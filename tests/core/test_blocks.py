"""Blocks against torch.nn.TransformerEncoderLayer / TransformerDecoderLayer with copied weights."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_core import (
    BlockConfig,
    DecoderBlock,
    FeedForward,
    MultiHeadAttention,
    SelfAttentionBlock,
    causal_mask,
    padding_mask,
)

B, T, S, C, H, FF = 3, 6, 5, 16, 4, 32


def _block(**changes) -> BlockConfig:
    return BlockConfig(**{"d_model": C, "n_heads": H, "d_ff": FF, **changes})


def _copy_attention(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
    ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
    ref.out_proj.weight.copy_(ours.out_proj.weight)
    ref.out_proj.bias.copy_(ours.out_proj.bias)


def _copy_common(ours: nn.Module, ref: nn.Module, norms: int) -> None:
    _copy_attention(ours.self_attn, ref.self_attn)
    ref.linear1.load_state_dict(ours.ff.linear1.state_dict())
    ref.linear2.load_state_dict(ours.ff.linear2.state_dict())
    for i in range(1, norms + 1):
        getattr(ref, f"norm{i}").load_state_dict(getattr(ours, f"norm{i}").state_dict())


def _randomize_norms(module: nn.Module) -> None:
    # LayerNorms start as identity; random affine parameters make the comparison meaningful.
    for sub in module.modules():
        if isinstance(sub, nn.LayerNorm):
            nn.init.normal_(sub.weight, 1.0, 0.2)
            nn.init.normal_(sub.bias, 0.0, 0.2)


def _valid(batch: int, length: int) -> torch.Tensor:
    lengths = torch.tensor([length, length - 2, 2])[:batch]
    return torch.arange(length)[None, :] < lengths[:, None]  # (B, N), padding at the end


def _check_same(out: torch.Tensor, ref_out: torch.Tensor, x: torch.Tensor) -> None:
    torch.testing.assert_close(out, ref_out)
    (grad,) = torch.autograd.grad(out.square().sum(), x, retain_graph=True)
    (ref_grad,) = torch.autograd.grad(ref_out.square().sum(), x)
    torch.testing.assert_close(grad, ref_grad)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("causal", [False, True])
def test_encoder_block_matches_nn_encoder_layer(norm_first, activation, causal):
    torch.manual_seed(0)
    ours = SelfAttentionBlock(_block(norm_position="pre" if norm_first else "post", activation=activation))
    _randomize_norms(ours)
    ref = nn.TransformerEncoderLayer(C, H, FF, dropout=0.0, activation=activation, batch_first=True,
                                     norm_first=norm_first)
    with torch.no_grad():
        _copy_common(ours, ref, norms=2)
    x = torch.randn(B, T, C, requires_grad=True)
    valid = _valid(B, T)
    out, weights = ours(x, mask=padding_mask(valid), is_causal=causal)
    ref_mask = ~causal_mask(T) if causal else None  # nn: True = NOT allowed
    ref_out = ref(x, src_mask=ref_mask, src_key_padding_mask=~valid, is_causal=causal)
    assert weights is None
    _check_same(out, ref_out, x)
    explicit, weights = ours(x, mask=padding_mask(valid), need_weights=True, is_causal=causal)
    torch.testing.assert_close(explicit, out)
    assert weights.shape == (B, H, T, T)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_block_matches_nn_decoder_layer(norm_first, activation):
    torch.manual_seed(0)
    ours = DecoderBlock(_block(norm_position="pre" if norm_first else "post", activation=activation))
    _randomize_norms(ours)
    ref = nn.TransformerDecoderLayer(C, H, FF, dropout=0.0, activation=activation, batch_first=True,
                                     norm_first=norm_first)
    with torch.no_grad():
        _copy_common(ours, ref, norms=3)
        _copy_attention(ours.cross_attn, ref.multihead_attn)
    x = torch.randn(B, T, C, requires_grad=True)
    memory = torch.randn(B, S, C)
    tgt_valid, src_valid = _valid(B, T), _valid(B, S)
    out, self_w, cross_w = ours(x, memory, self_mask=padding_mask(tgt_valid), memory_mask=padding_mask(src_valid))
    ref_out = ref(x, memory, tgt_mask=~causal_mask(T), tgt_key_padding_mask=~tgt_valid,
                  memory_key_padding_mask=~src_valid, tgt_is_causal=True)
    assert self_w is None and cross_w is None
    _check_same(out, ref_out, x)
    explicit, self_w, cross_w = ours(x, memory, self_mask=padding_mask(tgt_valid),
                                     memory_mask=padding_mask(src_valid), need_weights=True)
    torch.testing.assert_close(explicit, out)
    assert self_w.shape == (B, H, T, T) and cross_w.shape == (B, H, T, S)
    assert torch.all(self_w.triu(diagonal=1) == 0)
    assert torch.all(cross_w[2, :, :, 2:] == 0)  # the third source has two real tokens


def test_feed_forward_is_two_linears_around_the_activation():
    torch.manual_seed(0)
    ff = FeedForward(C, FF, activation="gelu")
    x = torch.randn(B, T, C)
    expected = F.gelu(x @ ff.linear1.weight.T + ff.linear1.bias) @ ff.linear2.weight.T + ff.linear2.bias
    torch.testing.assert_close(ff(x), expected)


def test_blocks_without_bias_have_no_bias_parameters():
    block = DecoderBlock(_block(bias=False))
    assert not any(name.endswith("bias") for name, _ in block.named_parameters())
    out, _, _ = block(torch.randn(B, T, C), torch.randn(B, S, C))
    assert out.shape == (B, T, C)


def test_invalid_block_arguments():
    with pytest.raises(ValueError, match="activation='swish'"):
        FeedForward(C, FF, activation="swish")
    with pytest.raises(ValueError, match="norm_position='sandwich'"):
        _block(norm_position="sandwich")
    with pytest.raises(ValueError, match="norm_type='batchnorm'"):
        _block(norm_type="batchnorm")
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadAttention(C, 5)
