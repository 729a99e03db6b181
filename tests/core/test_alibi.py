"""ALiBi (Press et al. 2022) against the paper's formula, the official slope rule and the app's promises."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from transformer_core import CausalLM, MultiHeadAttention, Seq2SeqTransformer, SequenceRegressor, TransformerConfig
from transformer_core.checkpoint import load_checkpoint, save_checkpoint
from transformer_core.masks import combine_masks, padding_mask
from transformer_core.positional import attention_positions, get
from transformer_core.positional.alibi import ALiBi, alibi_slopes
from transformer_core.tasks import get_task
from transformer_core.training import TrainConfig, Trainer

C, H, T = 16, 4, 6
SMALL = TransformerConfig(vocab_size=13, max_len=16, d_model=16, n_heads=4, n_layers=2, d_ff=32, positional="alibi")


def _paper_bias(n_heads: int, t: int) -> np.ndarray:
    """-m_h (i - j) with m_h = 2^(-8h/H) for keys behind; keys ahead get the mirror head's slope m_(H+1-h)."""
    out = np.zeros((n_heads, t, t))
    for h in range(1, n_heads + 1):
        behind, ahead = 2.0 ** (-8.0 * h / n_heads), 2.0 ** (-8.0 * (n_heads + 1 - h) / n_heads)
        for i in range(t):
            for j in range(t):
                out[h - 1, i, j] = -behind * (i - j) if j <= i else -ahead * (j - i)
    return out


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_slopes_for_eight_heads_are_the_papers():
    expected = torch.tensor([1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256])
    torch.testing.assert_close(alibi_slopes(8), expected)


@pytest.mark.parametrize(("n_heads", "exponents"), [
    # Official rule: the slopes of the largest power of two below H, then every other slope of twice that many.
    (6, [-2, -4, -6, -8, -1, -3]),
    (12, [-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5]),
    (1, [-8]),
    (3, [-4, -8, -2]),
])
def test_slopes_for_other_head_counts_follow_the_official_rule(n_heads, exponents):
    torch.testing.assert_close(alibi_slopes(n_heads), torch.tensor([2.0**e for e in exponents]))


def _zero_qk_attention() -> MultiHeadAttention:
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H).eval()
    with torch.no_grad():  # every score Q Kᵀ is 0, so the weights are the softmax of the bias alone
        for proj in (mha.q_proj, mha.k_proj):
            proj.weight.zero_()
            proj.bias.zero_()
    return mha


@pytest.mark.parametrize("causal", [True, False])
def test_weights_are_the_softmax_of_the_papers_bias_when_scores_are_zero(causal):
    mha, x = _zero_qk_attention(), torch.randn(1, T, C)
    _, weights = mha(x, x, x, need_weights=True, is_causal=causal, positions=ALiBi(H))
    logits = _paper_bias(H, T)
    if causal:
        logits = np.where(np.tril(np.ones((T, T), dtype=bool)), logits, -np.inf)
    np.testing.assert_allclose(weights[0].detach().numpy(), _softmax(logits), atol=1e-6)


@pytest.mark.parametrize("masking", ["none", "causal", "padding", "causal+padding"])
def test_fused_path_equals_explicit_path(masking):
    torch.manual_seed(1)
    mha, x = MultiHeadAttention(C, H).eval(), torch.randn(3, T, C)
    valid = torch.arange(T)[None, :] < torch.tensor([[T], [4], [2]])
    mask = padding_mask(valid) if "padding" in masking else None
    causal = masking.startswith("causal")
    fused, none = mha(x, x, x, mask=mask, is_causal=causal, positions=ALiBi(H))
    explicit, _ = mha(x, x, x, mask=mask, need_weights=True, is_causal=causal, positions=ALiBi(H))
    assert none is None
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    plain, _ = mha(x, x, x, mask=mask, is_causal=causal)
    assert not torch.allclose(fused, plain, atol=1e-3)  # the bias really reaches the fused kernel


def test_fully_masked_rows_are_zeros_not_nan_in_both_paths():
    torch.manual_seed(2)
    mha, x = MultiHeadAttention(C, H).eval(), torch.randn(2, T, C)
    mask = combine_masks(padding_mask(torch.tensor([[True] * T, [False] * T])))
    fused, _ = mha(x, x, x, mask=mask, positions=ALiBi(H))
    explicit, weights = mha(x, x, x, mask=mask, need_weights=True, positions=ALiBi(H))
    assert torch.isfinite(fused).all() and torch.isfinite(explicit).all() and torch.isfinite(weights).all()
    assert weights[1].abs().sum() == 0
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)


def test_bias_with_fewer_queries_is_the_last_rows():
    full = ALiBi(H).score_bias(T, T, device=torch.device("cpu"), dtype=torch.float32)
    tail = ALiBi(H).score_bias(2, T, device=torch.device("cpu"), dtype=torch.float32)
    torch.testing.assert_close(tail, full[:, -2:])


def test_registry_entry_acts_on_the_scores_only():
    spec = get("alibi")
    assert spec.acts == "bias" and spec.table is None and spec.head_ok(3)
    assert isinstance(attention_positions("alibi", 3, 5, 16), ALiBi)
    TransformerConfig(d_model=15, n_heads=5, positional="alibi")  # odd head sizes are fine, unlike RoPE


@pytest.mark.parametrize("make", [
    lambda c: CausalLM(c), lambda c: Seq2SeqTransformer(c), lambda c: SequenceRegressor(c, pool="cls"),
])
def test_a_model_built_for_16_positions_runs_on_32(make):
    torch.manual_seed(0)
    model = make(SMALL).eval()
    ids = torch.randint(1, SMALL.vocab_size, (2, 32))
    run = (lambda m, x: m(x, x)) if isinstance(model, Seq2SeqTransformer) else (lambda m, x: m(x))
    assert torch.isfinite(run(model, ids)).all()
    with pytest.raises(ValueError, match="max_len=16"):  # a table-based model cannot
        run(make(dataclasses.replace(SMALL, positional="sinusoidal")), ids[:, :17])


def test_a_saved_alibi_model_loads_back_and_computes_the_same():
    torch.manual_seed(0)
    model = CausalLM(SMALL).eval()
    loaded = load_checkpoint(save_checkpoint(model, SMALL, task_name="demo"), expected_task="demo")
    assert loaded.config.positional == "alibi"
    ids = torch.randint(0, SMALL.vocab_size, (2, 20))
    torch.testing.assert_close(loaded.model(ids), model(ids))


@pytest.mark.slow
def test_an_encoder_decoder_with_alibi_learns_to_reverse():
    # 8 heads: the paper's slopes run from 1/2 to 1/256; with 2 heads (1/16, 1/256) five tokens look almost alike.
    task = get_task("reverse", seq_len=5)
    config = dataclasses.replace(task.default_model_config(), d_model=32, n_heads=8, n_layers=2, d_ff=64,
                                 positional="alibi")
    trainer = Trainer(task, config, TrainConfig(steps=400, batch_size=32, lr=3e-3, eval_every=400,
                                                snapshot_every=400))
    for _ in trainer.steps():
        pass
    first, last = trainer.history[0], trainer.history[-1]
    assert last["loss"] < 0.6 * first["loss"]
    assert last["accuracy"] > 0.3  # exact matches of 5-token reversals; without positions it stays near 0.08


def test_the_positional_page_finds_alibi_running_past_max_len():
    from explorer.lab.positional import run_past_max_len, score_bias

    runs = {r.kind: r for r in run_past_max_len(8, 16, extra=8)}
    assert runs["alibi"].error == "" and runs["alibi"].finite and runs["sinusoidal"].error
    bias = score_bias("alibi", 8, 16)  # (H, L, L): the diagonal is 0 and row 15 costs 15 · m_h at key 0
    torch.testing.assert_close(bias[:, 15, 0], -15 * alibi_slopes(8))
    assert bias.diagonal(dim1=-2, dim2=-1).abs().max() == 0
