"""GPT-2 block vs Llama block: parameters as transformers builds them, FLOPs and KV-cache bytes by their formulas."""

from __future__ import annotations

import os

import pytest

from explorer.lab.block_compare import compare_blocks, gpt2_block, llama_block, swiglu_width

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _params(module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize(("c", "h", "f"), [(64, 4, 256), (96, 6, 200), (768, 12, 3072)])
def test_gpt2_block_counts_what_transformers_builds(c, h, f):
    import transformers

    config = transformers.GPT2Config(n_embd=c, n_head=h, n_inner=f)
    block = gpt2_block(c, h, f, context=16)
    ref = transformers.models.gpt2.modeling_gpt2.GPT2Block(config)
    assert block.parameters == _params(ref)
    assert block.attention == _params(ref.attn) and block.feed_forward == _params(ref.mlp)


@pytest.mark.parametrize(("c", "h", "kv", "f"), [(64, 4, 4, 172), (96, 6, 2, 256), (576, 9, 3, 1536), (64, 4, 1, 64)])
def test_llama_block_counts_what_transformers_builds(c, h, kv, f):
    import transformers

    config = transformers.LlamaConfig(hidden_size=c, num_attention_heads=h, num_key_value_heads=kv,
                                      intermediate_size=f)
    ref = transformers.models.llama.modeling_llama.LlamaDecoderLayer(config, layer_idx=0)
    block = llama_block(c, h, kv, f, context=16)
    assert block.parameters == _params(ref)
    assert block.attention == _params(ref.self_attn) and block.feed_forward == _params(ref.mlp)


def test_flops_follow_the_matrix_shapes_and_grow_with_the_context():
    c, h, f, t = 64, 4, 256, 10
    g = gpt2_block(c, h, f, context=t)
    assert g.flops_per_token == 2 * (4 * c * c + 2 * c * f) + 2 * 2 * t * c
    lla = llama_block(c, h, 2, 172, context=t)
    assert lla.flops_per_token == 2 * (2 * c * c + 2 * c * 32 + 3 * c * 172) + 4 * t * c
    assert llama_block(c, h, 2, 172, context=2 * t).flops_per_token - lla.flops_per_token == 4 * t * c


def test_shared_kv_heads_shrink_the_cache_by_their_ratio():
    gpt2, llama = compare_blocks(576, 9, 2304, 3, context=64)
    assert gpt2.kv_bytes_per_token == 2 * 576 * 4
    assert llama.kv_bytes_per_token * 3 == gpt2.kv_bytes_per_token
    assert llama_block(576, 9, 1, 1536, context=1).kv_bytes_per_token == 2 * 64 * 4  # multi-query: one K/V head
    assert llama_block(576, 9, 3, 1536, context=1, bytes_per_value=2).kv_bytes_per_token == 2 * 192 * 2


def test_the_swiglu_width_keeps_the_feed_forward_parameters_close():
    assert swiglu_width(3072) == 2048 and swiglu_width(256) == 176
    gpt2, llama = compare_blocks(768, 12, 3072, 12, context=1)
    assert abs(llama.feed_forward - gpt2.feed_forward) / gpt2.feed_forward < 0.01


def test_bad_shapes_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="K/V heads must divide"):
        llama_block(64, 4, 3, 128, context=8)
    with pytest.raises(ValueError, match="heads must divide d_model"):
        gpt2_block(64, 5, 128, context=8)
