"""The modern (Llama) block's parts against torch and the papers: RMSNorm, SwiGLU, grouped-query attention with
shared key/value heads, RoPE's theta and scalings, Q/K/V biases, and the config fields that choose them."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_core import CausalLM, TransformerConfig
from transformer_core.attention import MultiHeadAttention
from transformer_core.feed_forward import FEED_FORWARDS, SwiGLU, build_feed_forward
from transformer_core.generation import generate, kv_cache_bytes
from transformer_core.interventions import ablate_heads
from transformer_core.masks import causal_mask, combine_masks, padding_mask
from transformer_core.norms import NORM_KINDS, RMSNorm, build_norm
from transformer_core.positional import RopeScaling, RotaryEmbedding
from transformer_core.positional.alibi import ALiBi

LLAMA = TransformerConfig(vocab_size=29, max_len=24, d_model=24, n_heads=6, n_kv_heads=2, n_layers=2, d_ff=40,
                          norm_type="rmsnorm", feed_forward="swiglu", positional="rope", bias=False,
                          embed_scale=False, pos_base=500.0, layer_norm_eps=1e-6)


def test_rmsnorm_equals_torch_and_the_formula():
    torch.manual_seed(0)
    ours, ref = RMSNorm(10, eps=1e-6), nn.RMSNorm(10, eps=1e-6)
    with torch.no_grad():
        ours.weight.normal_()
        ref.weight.copy_(ours.weight)
    x = torch.randn(3, 5, 10) * 4 + 1  # a mean far from 0: LayerNorm would remove it, RMSNorm keeps it
    torch.testing.assert_close(ours(x), ref(x))
    by_hand = x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-6) * ours.weight
    torch.testing.assert_close(ours(x), by_hand)
    assert not torch.allclose(ours(x), F.layer_norm(x, (10,), ours.weight), atol=1e-2)
    assert ours.half()(x.half()).dtype == torch.float16  # computed in float32 inside, handed back in half
    assert [p.numel() for p in ours.parameters()] == [10]  # a scale only: no bias


def test_norm_registry_builds_each_kind():
    assert set(NORM_KINDS) == {"layernorm", "rmsnorm"}
    assert isinstance(build_norm("rmsnorm", 8, eps=1e-3), RMSNorm) and build_norm("rmsnorm", 8, eps=1e-3).eps == 1e-3
    assert isinstance(build_norm("layernorm", 8, bias=False), nn.LayerNorm)
    with pytest.raises(ValueError, match="norm_type='batchnorm'"):
        build_norm("batchnorm", 8)


def test_swiglu_is_down_of_silu_gate_times_up():
    torch.manual_seed(0)
    ff = build_feed_forward("swiglu", 12, 20, bias=False)
    assert isinstance(ff, SwiGLU) and FEED_FORWARDS["swiglu"].matrices == 3
    x = torch.randn(2, 4, 12)
    gate, up, down = ff.gate_proj.weight, ff.up_proj.weight, ff.down_proj.weight  # (F, C), (F, C), (C, F)
    a = x @ gate.T
    expected = ((a * torch.sigmoid(a)) * (x @ up.T)) @ down.T  # SiLU(a) = a·σ(a) (Shazeer 2020, eq. 6)
    torch.testing.assert_close(ff(x), expected)
    assert sum(p.numel() for p in ff.parameters()) == 3 * 12 * 20


def _grouped_and_full(n_heads: int, n_kv_heads: int, bias: bool = True):
    """A grouped attention and the same attention with every K/V head copied for each query head it serves."""
    torch.manual_seed(0)
    c = 24
    grouped = MultiHeadAttention(c, n_heads, bias=bias, n_kv_heads=n_kv_heads)
    full = MultiHeadAttention(c, n_heads, bias=bias)
    d, g = c // n_heads, n_heads // n_kv_heads
    with torch.no_grad():
        for name in ("q_proj", "out_proj"):
            getattr(full, name).load_state_dict(getattr(grouped, name).state_dict())
        for name in ("k_proj", "v_proj"):
            mine, theirs = getattr(grouped, name), getattr(full, name)
            theirs.weight.copy_(mine.weight.view(n_kv_heads, d, c).repeat_interleave(g, dim=0).reshape(c, c))
            if bias:
                theirs.bias.copy_(mine.bias.view(n_kv_heads, d).repeat_interleave(g, dim=0).reshape(c))
    return grouped, full


@pytest.mark.parametrize("n_kv_heads", [1, 2, 3, 6])
def test_grouped_query_attention_equals_attention_with_copied_kv_heads(n_kv_heads):
    grouped, full = _grouped_and_full(6, n_kv_heads)
    assert grouped.k_proj.weight.shape == (n_kv_heads * 4, 24)  # the smaller projections: fewer parameters
    assert [grouped.kv_group(h) for h in range(6)] == [h // (6 // n_kv_heads) for h in range(6)]
    x = torch.randn(2, 7, 24)
    out, weights = grouped(x, x, x, need_weights=True, is_causal=True)
    ref_out, ref_weights = full(x, x, x, need_weights=True, is_causal=True)
    assert weights.shape == (2, 6, 7, 7)  # per query head
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(weights, ref_weights)
    for h in range(6):  # heads of one group share keys but not queries: same group, different patterns
        torch.testing.assert_close(weights[:, h].sum(-1), torch.ones(2, 7))


@pytest.mark.parametrize("masking", ["none", "is_causal", "padding", "causal+padding"])
@pytest.mark.parametrize("positions", [None, "rope", "alibi"])
def test_grouped_fused_path_equals_explicit_path(masking, positions):
    grouped, _ = _grouped_and_full(6, 2)
    x = torch.randn(2, 7, 24)
    valid = torch.ones(2, 7, dtype=torch.bool)
    valid[1, 5:] = False
    mask = padding_mask(valid) if "padding" in masking else None
    if masking.startswith("causal"):
        mask = combine_masks(mask, causal_mask(7))
    inside = {None: None, "rope": RotaryEmbedding(4, 16), "alibi": ALiBi(6)}[positions]
    kwargs = dict(mask=mask, is_causal=masking == "is_causal", positions=inside)
    fused, _ = grouped(x, x, x, **kwargs)
    explicit, _ = grouped(x, x, x, need_weights=True, **kwargs)
    torch.testing.assert_close(fused, explicit)


def test_kv_group_refuses_heads_that_do_not_exist():
    with pytest.raises(ValueError, match="head=6"):
        MultiHeadAttention(24, 6, n_kv_heads=2).kv_group(6)


def test_qkv_bias_without_other_biases_as_qwen2_has_them():
    attn = MultiHeadAttention(24, 6, bias=False, n_kv_heads=2, qkv_bias=True)
    assert all(p.bias is not None for p in (attn.q_proj, attn.k_proj, attn.v_proj)) and attn.out_proj.bias is None
    lm = CausalLM(replace(LLAMA, qkv_bias=True))
    names = {n for n, _ in lm.named_parameters() if n.endswith("bias")}
    assert names == {f"blocks.{i}.self_attn.{p}.bias" for i in range(2) for p in ("q_proj", "k_proj", "v_proj")}


def _inv_freq(rope: RotaryEmbedding) -> torch.Tensor:
    # position 1 turns each pair by its frequency: the angle of (cos, sin) there, first half of the head
    half = rope.cos.size(1) // 2
    return torch.atan2(rope.sin[1, :half], rope.cos[1, :half])


def test_rope_theta_sets_the_frequencies():
    for theta in (10000.0, 100000.0, 500.0):
        rope = RotaryEmbedding(8, 4, base=theta)
        expected = torch.tensor([theta ** (-2 * i / 8) for i in range(4)])
        torch.testing.assert_close(_inv_freq(rope), expected, atol=1e-6, rtol=1e-4)


def test_linear_scaling_divides_every_frequency():
    plain, scaled = RotaryEmbedding(8, 40), RotaryEmbedding(8, 40, scaling=RopeScaling("linear", 4.0))
    # position interpolation: position 4p of the scaled model turns as far as position p of the plain one
    torch.testing.assert_close(scaled.cos[8], plain.cos[2])
    torch.testing.assert_close(scaled.sin[36], plain.sin[9])


def test_llama3_scaling_follows_its_published_rule():
    scaling = RopeScaling("llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_len=64)
    inv_freq = 1.0 / 500.0 ** (torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    got = scaling.apply(inv_freq.float()).double()
    for f, g in zip(inv_freq.tolist(), got.tolist(), strict=True):
        wavelen = 2 * math.pi / f
        if wavelen < 64 / 4.0:
            expected = f  # fast: kept
        elif wavelen > 64 / 1.0:
            expected = f / 8.0  # slow: scaled
        else:
            s = (64 / wavelen - 1.0) / (4.0 - 1.0)
            expected = (1 - s) * f / 8.0 + s * f
        assert g == pytest.approx(expected, rel=1e-5)
    kinds = {("kept" if g == pytest.approx(f) else "scaled" if g == pytest.approx(f / 8) else "blended")
             for f, g in zip(inv_freq.tolist(), got.tolist(), strict=True)}
    assert kinds == {"kept", "scaled", "blended"}  # the test covers all three bands


@pytest.mark.parametrize("changes, message", [
    (dict(n_kv_heads=4), "n_kv_heads=4 must divide n_heads=6"),
    (dict(n_kv_heads=0), "n_kv_heads=0"),
    (dict(norm_type="batchnorm"), "norm_type='batchnorm'"),
    (dict(feed_forward="moe"), "feed_forward='moe'"),
    (dict(rope_scaling={"kind": "yarn"}), "rope_scaling='yarn'"),
    (dict(rope_scaling="linear"), "rope_scaling must be a RopeScaling"),
    (dict(rope_scaling={"kind": "linear", "beta": 2}), "rope_scaling has an unknown setting"),
    (dict(rope_scaling=RopeScaling("linear", factor=2.0), positional="learned"), "needs positional='rope'"),
    (dict(rope_scaling={"kind": "linear", "factor": 0.0}), r"rope_scaling.factor=0.0"),
    (dict(rope_scaling={"kind": "linear", "factor": "2"}), r"rope_scaling.factor must be a finite number"),
    (dict(rope_scaling={"kind": "llama3", "low_freq_factor": 4.0, "high_freq_factor": 1.0}),
     r"rope_scaling.low_freq_factor=4.0"),
])
def test_bad_modern_settings_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        replace(LLAMA, **changes)


def test_a_llama_config_builds_the_modern_block():
    lm = CausalLM(LLAMA)
    block = lm.blocks[0]
    assert isinstance(block.norm1, RMSNorm) and isinstance(lm.final_norm, RMSNorm)
    assert isinstance(block.ff, SwiGLU)
    assert block.self_attn.n_kv_heads == 2 and block.self_attn.group_size == 3
    assert not any(n.endswith("bias") for n, _ in lm.named_parameters())
    assert LLAMA.kv_heads == 2 and TransformerConfig().kv_heads == 4


@pytest.mark.parametrize("changes", [{}, dict(n_kv_heads=1), dict(n_kv_heads=6, qkv_bias=True),
                                     dict(rope_scaling=RopeScaling("llama3", factor=4.0, original_max_len=16))])
def test_cached_generation_of_a_llama_model_equals_a_full_forward(changes):
    torch.manual_seed(0)
    lm = CausalLM(replace(LLAMA, **changes)).eval()
    prompt = torch.randint(0, 29, (1, 5), generator=torch.Generator().manual_seed(1))
    steps = list(generate(lm, prompt, 8, temperature=1.0, generator=torch.Generator().manual_seed(2)))
    sequence = torch.cat([prompt, torch.tensor([[s.token_id for s in steps]])], dim=1)
    with torch.no_grad():
        full, attention = lm.forward_with_attention(sequence[:, :-1])
        fused = lm(sequence[:, :-1])
    torch.testing.assert_close(fused, full)  # the fused path with shared K/V heads equals the explicit one
    for i, step in enumerate(steps):
        torch.testing.assert_close(step.logits, full[0, 4 + i], atol=1e-5, rtol=0)
        for row, weights in zip(step.attention, attention["decoder"], strict=True):
            assert row.shape == (6, 5 + i)  # the query heads, not the shared K/V heads
            torch.testing.assert_close(row, weights[0, :, 4 + i, : 5 + i], atol=1e-5, rtol=0)


def test_grouped_heads_shrink_the_cache():
    assert kv_cache_bytes(LLAMA, 10) == 2 * 2 * 2 * 4 * 10 * 4
    assert kv_cache_bytes(replace(LLAMA, n_kv_heads=None), 10) == 3 * kv_cache_bytes(LLAMA, 10)


def test_switching_off_one_query_head_of_a_group_leaves_its_group_mates_working():
    torch.manual_seed(0)
    lm = CausalLM(LLAMA).eval()
    ids = torch.randint(0, 29, (1, 9))
    d = LLAMA.head_dim
    cut = CausalLM(LLAMA).eval()
    cut.load_state_dict(lm.state_dict())
    with torch.no_grad():
        cut.blocks[0].self_attn.out_proj.weight[:, 1 * d:2 * d] = 0.0  # query head 1 (group 0) contributes nothing
        expected = cut(ids)
        with ablate_heads(lm, [("decoder", 0, 1)]):
            ablated = lm(ids)
            steps = list(generate(lm, ids, 3))
        plain = lm(ids)
    torch.testing.assert_close(ablated, expected)
    assert not torch.allclose(ablated, plain, atol=1e-4)  # head 1 mattered; heads 0 and 2 share its K/V and stay
    torch.testing.assert_close(steps[0].logits, expected[0, -1], atol=1e-5, rtol=0)  # the steps see the switch too
