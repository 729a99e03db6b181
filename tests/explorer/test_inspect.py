"""The step-by-step attention replay must equal the real forward pass, step for step."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from explorer.lab.internals import (
    attention_walkthrough,
    build_lab_encoder,
    lab_stack,
    trained_stack,
    walk_stack,
)
from transformer_core import (
    CausalLM,
    MultiHeadAttention,
    Seq2SeqTransformer,
    SequenceRegressor,
    TransformerConfig,
    families,
)
from transformer_core.masks import padding_mask
from transformer_core.positional import RotaryEmbedding

ATOL = 1e-5


@pytest.fixture
def mha(rng_seed: int) -> MultiHeadAttention:
    return MultiHeadAttention(16, 4).eval()


def _torch_reference(mha: MultiHeadAttention, x: torch.Tensor, key_padding: torch.Tensor | None = None,
                     causal: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.nn.MultiheadAttention with the same weights (its masks use True = *not* allowed)."""
    ref = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias]))
        ref.out_proj.weight.copy_(mha.out_proj.weight)
        ref.out_proj.bias.copy_(mha.out_proj.bias)
    t = x.size(1)
    attn_mask = torch.ones(t, t, dtype=torch.bool).triu(1) if causal else None
    kpm = None if key_padding is None else ~key_padding
    with torch.no_grad():
        return ref(x, x, x, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=True,
                   average_attn_weights=False)


def test_walkthrough_matches_forward_and_torch_reference(mha: MultiHeadAttention) -> None:
    x = torch.randn(1, 5, 16)
    steps = attention_walkthrough(mha, x)
    out, weights = mha(x, x, x, need_weights=True)
    fused, _ = mha(x, x, x)
    ref_out, ref_w = _torch_reference(mha, x)
    assert torch.allclose(steps.output, out[0], atol=ATOL)
    assert torch.allclose(steps.output, fused[0], atol=ATOL)
    assert torch.allclose(steps.weights, weights[0], atol=ATOL)
    assert torch.allclose(steps.output, ref_out[0], atol=ATOL)
    assert torch.allclose(steps.weights, ref_w[0], atol=ATOL)


def test_each_step_follows_its_formula(mha: MultiHeadAttention) -> None:
    x = torch.randn(6, 16)
    s = attention_walkthrough(mha, x)
    d = s.head_dim
    assert d == 4
    for h in range(4):
        assert torch.allclose(s.q[h], x @ s.w_q[h] + s.b_q[h], atol=ATOL)
        assert torch.allclose(s.k[h], x @ s.w_k[h] + s.b_k[h], atol=ATOL)
        assert torch.allclose(s.v[h], x @ s.w_v[h] + s.b_v[h], atol=ATOL)
        assert torch.allclose(s.scores[h], s.q[h] @ s.k[h].T, atol=ATOL)
    assert torch.allclose(s.scaled, s.scores / math.sqrt(d))
    assert torch.equal(s.masked, s.scaled) and s.mask is None
    assert torch.allclose(s.weights, torch.softmax(s.scaled, dim=-1))
    assert torch.allclose(s.head_out, s.weights @ s.v)
    assert torch.allclose(s.concat[:, 4:8], s.head_out[1])  # head 2 occupies columns 4..7
    assert torch.allclose(s.output, s.concat @ s.w_o + s.b_o, atol=ATOL)


def test_causal_and_padding_masks(mha: MultiHeadAttention) -> None:
    x = torch.randn(1, 6, 16)
    causal = attention_walkthrough(mha, x, is_causal=True)
    ref_out, ref_w = _torch_reference(mha, x, causal=True)
    assert torch.allclose(causal.output, ref_out[0], atol=ATOL)
    assert torch.allclose(causal.weights, ref_w[0], atol=ATOL)
    assert torch.isinf(causal.masked[:, 0, 1:]).all() and causal.mask[0, 0].tolist() == [True] + [False] * 5

    valid = torch.tensor([[True, True, True, True, False, False]])
    padded = attention_walkthrough(mha, x, padding_mask(valid))
    ref_out, ref_w = _torch_reference(mha, x, key_padding=valid)
    assert torch.allclose(padded.weights, ref_w[0], atol=ATOL)
    assert torch.allclose(padded.output, ref_out[0], atol=ATOL)
    assert padded.weights[..., 4:].abs().max() == 0


def test_fully_masked_rows_are_zero_not_nan(mha: MultiHeadAttention) -> None:
    x = torch.randn(1, 3, 16)
    mask = torch.tensor([[False, False, False], [True, True, False], [True, True, True]])
    s = attention_walkthrough(mha, x, mask)
    out, weights = mha(x, x, x, mask=mask, need_weights=True)
    assert not torch.isnan(s.weights).any()
    assert s.weights[:, 0].abs().max() == 0
    assert torch.allclose(s.weights, weights[0], atol=ATOL)
    assert torch.allclose(s.output, out[0], atol=ATOL)


def test_rotary_positions_match_forward(mha: MultiHeadAttention) -> None:
    x = torch.randn(1, 5, 16)
    rope = RotaryEmbedding(4, 16)
    s = attention_walkthrough(mha, x, positions=rope)
    out, weights = mha(x, x, x, need_weights=True, positions=rope)
    assert s.rotary
    assert torch.allclose(s.output, out[0], atol=ATOL)
    assert torch.allclose(s.weights, weights[0], atol=ATOL)


@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding"])
def test_lab_stack_replays_every_layer(mask_kind: str) -> None:
    config = TransformerConfig(vocab_size=20, max_len=16, d_model=16, n_heads=2, n_layers=3, d_ff=32, pad_id=0)
    model = build_lab_encoder(config, seed=3)
    ids, valid = [5, 6, 7, 8, 0, 0], [True] * 4 + [False] * 2
    stack = lab_stack(model, ids, [str(i) for i in ids], mask_kind, valid)
    steps = walk_stack(stack)
    x = stack.x
    for block, step in zip(model.blocks, steps, strict=True):
        x, weights = block(x, mask=stack.mask, need_weights=True, is_causal=stack.is_causal)
        assert torch.allclose(step.weights, weights[0], atol=ATOL)
    mask = padding_mask(torch.tensor([valid])) if mask_kind == "padding" else None
    assert (stack.mask is None) == (mask is None) and (mask is None or torch.equal(stack.mask, mask))
    final = stack.run()
    assert torch.allclose(x, final, atol=ATOL)
    if mask_kind == "padding":  # the encoder-only model's own forward hides its padding the same way
        _, att = model.forward_with_attention(torch.tensor([ids]))
        for step, weights in zip(steps, att["encoder"], strict=True):
            assert torch.allclose(step.weights, weights[0], atol=ATOL)


def test_same_seed_same_weights() -> None:
    config = TransformerConfig(vocab_size=20, max_len=8, d_model=8, n_heads=2, n_layers=1, d_ff=16)
    a, b, c = build_lab_encoder(config, 1), build_lab_encoder(config, 1), build_lab_encoder(config, 2)
    assert torch.equal(a.embed.tokens.weight, b.embed.tokens.weight)
    assert not torch.equal(a.embed.tokens.weight, c.embed.tokens.weight)


def _check_trained(model: nn.Module, stack: families.SelfAttentionStack, expected: list[torch.Tensor]) -> None:
    steps = walk_stack(stack)
    assert len(steps) == len(expected)
    for step, w in zip(steps, expected, strict=True):
        assert torch.allclose(step.weights, w[0], atol=ATOL)


def test_trained_stack_matches_each_model_family(rng_seed: int) -> None:
    ids = [3, 4, 5, 6, 7]
    base = dict(vocab_size=13, max_len=8, d_model=16, n_heads=2, n_layers=2, d_ff=32)
    lm = CausalLM(TransformerConfig(**base, positional="rope")).eval()
    _, att = lm.forward_with_attention(torch.tensor([ids]))
    _check_trained(lm, trained_stack(lm, ids, list("abcde")), att["decoder"])

    s2s = Seq2SeqTransformer(TransformerConfig(**base, pad_id=0)).eval()
    _, att = s2s.forward_with_attention(torch.tensor([ids]), torch.tensor([[1, 3]]))
    _check_trained(s2s, trained_stack(s2s, ids, list("abcde")), att["encoder"])

    reg = SequenceRegressor(TransformerConfig(**base, norm_position="post"), pool="cls").eval()
    _, att = reg.forward_with_attention(torch.tensor([ids]))
    stack = trained_stack(reg, ids, list("abcde"))
    assert stack.labels == ("CLS", "a", "b", "c", "d", "e")
    _check_trained(reg, stack, att["encoder"])


def test_lab_stack_rejects_bad_masks() -> None:
    config = TransformerConfig(vocab_size=20, max_len=8, d_model=8, n_heads=2, n_layers=1, d_ff=16)
    model = build_lab_encoder(config, 0)
    with pytest.raises(ValueError, match="mask"):
        lab_stack(model, [1, 2], ["a", "b"], "diagonal")
    with pytest.raises(ValueError, match="valid"):
        lab_stack(model, [1, 2], ["a", "b"], "padding")
    with pytest.raises(ValueError, match="Attention Lab"):
        trained_stack(nn.Linear(2, 2), [1], ["a"])


class PrefixLM(nn.Module):
    """A model of no built-in family: a causal LM that reads a fixed start token before the text."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.lm = CausalLM(config)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm(self._with_start(ids))

    def forward_with_attention(self, ids: torch.Tensor) -> tuple[torch.Tensor, dict[str, list[torch.Tensor]]]:
        return self.lm.forward_with_attention(self._with_start(ids))

    @staticmethod
    def _with_start(ids: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.zeros_like(ids[:, :1]), ids], dim=1)  # (B, 1 + T)


def _prefix_stack(model: PrefixLM, idx: torch.Tensor) -> families.SelfAttentionStack:
    idx = torch.cat([torch.zeros_like(idx[:, :1]), idx], dim=1)  # (1, 1 + T)
    return families.SelfAttentionStack(model.lm.embed(idx), list(model.lm.blocks), None, True, None, ("<s>",))


def test_a_new_family_is_taken_apart_through_its_entry_alone(monkeypatch) -> None:
    entry = families.ModelFamily(name="prefix_lm", kind="prefix", title="Prefix LM", short="prefix",
                                 config_class=TransformerConfig, model_class=PrefixLM, attention=("decoder",),
                                 attention_titles=("Self-attention after <s>",), self_attention=_prefix_stack,
                                 attention_modules=lambda m: {"decoder": [b.self_attn for b in m.lm.blocks]},
                                 mask_title="causal (after a start token)")
    model = PrefixLM(TransformerConfig(vocab_size=13, max_len=8, d_model=16, n_heads=2, n_layers=2, d_ff=32)).eval()
    with pytest.raises(ValueError, match="Attention Lab cannot take apart a PrefixLM"):
        trained_stack(model, [3, 4], ["a", "b"])
    monkeypatch.setattr(families, "FAMILIES", (*families.FAMILIES, entry))
    _, att = model.forward_with_attention(torch.tensor([[3, 4, 5]]))
    stack = trained_stack(model, [3, 4, 5], list("abc"))
    assert stack.labels == ("<s>", "a", "b", "c") and stack.is_causal
    _check_trained(model, stack, att["decoder"])
    assert families.family("prefix_lm").attention_title("decoder") == "Self-attention after <s>"
