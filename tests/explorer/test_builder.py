"""The Model Builder's engine: configs, meta-device sizes, safe timing decisions and real step timing."""

from __future__ import annotations

import time

import pytest
import torch

from explorer.lab.builder import (
    BuilderSettings,
    build,
    estimate,
    example_batch,
    matmul_rate,
    measure,
    measure_plan,
    training_loss,
)
from transformer_core import TransformerConfig, ViTConfig
from transformer_core.sizing import count_parameters

TINY = dict(n_layers=1, n_heads=2, d_model=16, d_ff=32, vocab_size=20, seq_len=6, image_size=8, patch_size=4,
            num_classes=3, batch_size=2)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "seq2seq", "vit"])
def test_meta_build_counts_like_a_real_build(kind):
    settings = BuilderSettings(kind=kind, **TINY)
    meta = build(settings)
    assert all(p.is_meta for p in meta.parameters())
    assert count_parameters(meta) == count_parameters(build(settings, "cpu"))
    assert estimate(settings).params == count_parameters(meta)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "seq2seq", "vit"])
def test_example_batch_trains(kind):
    settings = BuilderSettings(kind=kind, **TINY)
    model = build(settings, "cpu")
    loss = training_loss(model, example_batch(settings))
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_config_types_and_validation():
    assert isinstance(BuilderSettings(kind="vit").config(), ViTConfig)
    text = BuilderSettings(kind="seq2seq", norm="post", positional="rope").config()
    assert isinstance(text, TransformerConfig) and text.norm_position == "post" and text.max_len == 64
    with pytest.raises(ValueError, match="divisible"):
        BuilderSettings(d_model=48, n_heads=5).config()
    with pytest.raises(ValueError, match="kind"):
        BuilderSettings(kind="lstm")


def test_huge_config_is_estimated_without_allocating():
    huge = BuilderSettings(kind="decoder", d_model=4096, n_heads=32, n_layers=48, d_ff=16384, seq_len=10_000,
                           vocab_size=50_000, batch_size=8)
    start = time.perf_counter()
    est = estimate(huge)
    assert time.perf_counter() - start < 20
    assert est.params > 9e9 and est.total_bytes > 1e12
    plan = measure_plan(est, flops_per_second=1e11, memory_budget_bytes=2**30, time_budget_seconds=2.0)
    assert not plan.allowed and plan.reason.startswith("Too big to run here")


def test_measure_plan_budgets():
    est = estimate(BuilderSettings(**TINY))
    fast = measure_plan(est, flops_per_second=1e10, memory_budget_bytes=2**30, time_budget_seconds=2.0)
    assert fast.allowed and fast.reason == "" and fast.estimated_seconds < 0.01
    slow = measure_plan(est, flops_per_second=1.0, memory_budget_bytes=2**30, time_budget_seconds=2.0)
    assert not slow.allowed and "take about" in slow.reason
    small = measure_plan(est, flops_per_second=1e10, memory_budget_bytes=10, time_budget_seconds=2.0)
    assert not small.allowed and "memory" in small.reason


def test_measure_and_matmul_rate_are_positive():
    assert matmul_rate("cpu", size=64, repeats=2) > 0
    assert 0 < measure(BuilderSettings(kind="vit", **TINY), "cpu", repeats=1) < 10
