"""The Lab's analyses on a Llama-style decoder (RMSNorm, SwiGLU, RoPE, shared K/V heads) of the library's own config:
the replayed attention equals the model's, K/V heads repeat across their group, the lens ends at the model's
prediction, and a Llama block counts as the Builder's comparison says."""

from __future__ import annotations

import pytest
import torch

from explorer.lab.block_compare import block_fields, llama_block
from explorer.lab.internals import attention_walkthrough, trained_stack, walk_stack
from explorer.lab.kv_groups import kv_groups, kv_heads_of
from transformer_core.config import TransformerConfig
from transformer_core.lens import logit_lens
from transformer_core.models import CausalLM
from transformer_core.seeding import seeded
from transformer_core.sizing import kv_cache_bytes_per_token

IDS = [3, 1, 4, 1, 5, 9, 2, 6]


def _model(kv: int = 2, heads: int = 6, qkv_bias: bool | None = None) -> CausalLM:
    config = TransformerConfig(vocab_size=16, max_len=32, d_model=48, n_heads=heads, n_layers=2, d_ff=40,
                               qkv_bias=qkv_bias, **block_fields("llama", kv))
    with seeded(0):
        return CausalLM(config).eval()


@pytest.mark.parametrize(("kv", "qkv_bias"), [(1, None), (2, None), (3, None), (6, None), (2, True)])
def test_the_replayed_attention_is_the_models_own(kv, qkv_bias):
    model = _model(kv, qkv_bias=qkv_bias)
    if qkv_bias:  # Qwen2: biases on Q, K and V only, made non-zero so that they count
        with torch.no_grad():
            for block in model.blocks:
                for proj in (block.self_attn.q_proj, block.self_attn.k_proj, block.self_attn.v_proj):
                    proj.bias.normal_(0.0, 0.5)
        assert model.blocks[0].self_attn.out_proj.bias is None
    stack = trained_stack(model, IDS, [str(i) for i in IDS])
    steps = walk_stack(stack)
    with torch.no_grad():
        _, attention = model.forward_with_attention(torch.tensor([IDS]))
    layers = next(iter(attention.values()))
    for step, weights in zip(steps, layers, strict=True):
        assert step.weights.shape == (6, len(IDS), len(IDS))
        torch.testing.assert_close(step.weights, weights[0], atol=1e-6, rtol=0)


def test_heads_of_one_group_read_the_same_keys_and_values_and_the_output_is_the_modules():
    model = _model(kv=2)
    block = model.blocks[0]
    assert kv_heads_of(model.config) == 2 == block.self_attn.n_kv_heads
    x = block.norm1(model.embed(torch.tensor([IDS])))
    steps = attention_walkthrough(block.self_attn, x, is_causal=True, positions=model.attn_positions)
    for group in kv_groups(6, 2):
        for h in group:
            assert block.self_attn.kv_group(h) == group[0] // 3
            torch.testing.assert_close(steps.k[h], steps.k[group[0]])
            torch.testing.assert_close(steps.w_v[h], steps.w_v[group[0]])
    assert not torch.equal(steps.k[0], steps.k[3])
    with torch.no_grad():
        out, _ = block.self_attn(x, x, x, is_causal=True, positions=model.attn_positions)
    torch.testing.assert_close(steps.output, out[0], atol=1e-6, rtol=0)


def test_the_logit_lens_reads_through_the_final_rmsnorm_to_the_models_prediction():
    model = _model()
    lens = logit_lens(model, IDS, top_k=3)
    with torch.no_grad():
        probs = model(torch.tensor([IDS]))[0].softmax(-1)
    assert lens.final_ids.tolist() == probs.argmax(-1).tolist()
    torch.testing.assert_close(torch.as_tensor(lens.final_probs[-1]), probs.max(-1).values, atol=1e-6, rtol=0)


@pytest.mark.parametrize("kv", [1, 3])
def test_a_llama_block_of_the_library_counts_what_the_builder_says(kv):
    model = _model(kv=kv)
    block = model.blocks[0]
    counted = llama_block(48, 6, kv, 40, context=8)
    assert sum(p.numel() for p in block.parameters()) == counted.parameters
    assert sum(p.numel() for p in block.self_attn.parameters()) == counted.attention
    assert kv_cache_bytes_per_token(model.config) == model.config.n_layers * counted.kv_bytes_per_token
