"""The experiments behind the lessons: causal attention, the √d_k demonstration and short comparison runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from explorer.lessons.experiments import causal_attention, scaling_demo, train_variants


def test_causal_attention_puts_no_weight_on_future_tokens():
    weights = causal_attention([5, 17, 3, 900, 42], n_heads=2, seed=1)
    assert weights.shape == (2, 5, 5)
    assert np.all(np.triu(weights, k=1) == 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(weights[:, 0, 0], 1.0)  # the first token can only read itself
    rows, cols = np.tril_indices(5)
    assert np.all(weights[:, rows, cols] > 0)  # every allowed key gets some weight


def test_causal_attention_depends_only_on_the_seed():
    np.testing.assert_array_equal(causal_attention([1, 2, 3], seed=7), causal_attention([1, 2, 3], seed=7))
    assert not np.allclose(causal_attention([1, 2, 3], seed=7), causal_attention([1, 2, 3], seed=8))


@pytest.mark.parametrize("ids", [[], [1, 2048], [-1]])
def test_causal_attention_rejects_bad_ids(ids):
    with pytest.raises(ValueError):
        causal_attention(ids, vocab_size=1024)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def test_scaling_demo_matches_the_formula():
    demo = scaling_demo(64, n_keys=8, seed=3)
    rng = np.random.default_rng(3)
    q, keys = rng.standard_normal(64), rng.standard_normal((8, 64))
    np.testing.assert_allclose(demo.scores, keys @ q)
    np.testing.assert_allclose(demo.weights_unscaled, _softmax(keys @ q))
    np.testing.assert_allclose(demo.weights_scaled, _softmax(keys @ q / math.sqrt(64)))
    assert np.argmax(demo.weights_scaled) == np.argmax(demo.weights_unscaled)


def test_unscaled_softmax_sharpens_as_d_k_grows():
    spreads = [np.mean([scaling_demo(d, seed=s).score_std for s in range(20)]) for d in (4, 64, 1024)]
    assert spreads[0] < spreads[1] < spreads[2]
    assert spreads[2] / spreads[0] == pytest.approx(math.sqrt(1024 / 4), rel=0.35)
    peak = np.mean([scaling_demo(1024, seed=s).weights_unscaled.max() for s in range(20)])
    scaled = np.mean([scaling_demo(1024, seed=s).weights_scaled.max() for s in range(20)])
    assert peak > 0.9 > 0.5 > scaled


def test_scaling_demo_rejects_bad_sizes():
    with pytest.raises(ValueError):
        scaling_demo(0)
    with pytest.raises(ValueError):
        scaling_demo(8, n_keys=1)


def test_train_variants_summarises_each_run():
    calls = []
    variants = {"sin": {"positional": "sinusoidal", "d_model": 16, "d_ff": 32, "n_heads": 2},
                "none": {"positional": "none", "d_model": 16, "d_ff": 32, "n_heads": 2}}
    runs = train_variants("reverse", variants, steps=4, task_options={"seq_len": 4},
                          progress=lambda label, step, steps: calls.append((label, step, steps)))
    assert calls == [(label, step, 4) for label in variants for step in range(1, 5)]
    for label, run in runs.items():
        assert run.label == label and run.steps == [1, 2, 3, 4] and len(run.losses) == 4
        assert all(0.0 <= m <= 1.0 for m in run.metric) and run.final_metric == run.metric[-1]
        assert run.snapshot_steps == [0, 1, 2, 3, 4]
        assert run.snapshots[-1]["cross"].shape == (2, 2, 5, 4)  # (L, H, T, S): BOS + 4 digits x 4 digits
        assert run.scores[-1]["cross:anti_diagonal"].shape == (2, 2)
        assert len(run.labels["cross"][1]) == 4


def test_train_variants_is_reproducible():
    variants = {"sin": {"d_model": 16, "d_ff": 32, "n_heads": 2}}
    first = train_variants("reverse", variants, steps=3, seed=5, task_options={"seq_len": 4})
    second = train_variants("reverse", variants, steps=3, seed=5, task_options={"seq_len": 4})
    assert first["sin"].losses == second["sin"].losses
