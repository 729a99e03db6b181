"""Switching heads off in a live run's model: checked against an ablation written out here with forward hooks."""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest
import torch

from explorer.runs.heads_off import (
    HeadProbe,
    all_head_keys,
    head_key,
    head_label,
    parse_head_key,
    probe_for,
    refs_from_keys,
    stacked_rows,
)
from transformer_core.tasks import get_task
from transformer_core.training import EVAL_SEED, Trainer, default_train_config


@pytest.fixture(scope="module")
def trainer() -> Trainer:
    """A small reverse model trained far enough that its heads matter (2 layers x 2 heads)."""
    task = get_task("reverse", seq_len=4, min_len=4, eval_size=256)
    config = task.default_model_config()
    config = dataclasses.replace(config, n_layers=2, n_heads=2, d_model=32, d_ff=64)
    trainer = Trainer(task, config, default_train_config(task, steps=60, batch_size=32, eval_every=0,
                                                         snapshot_every=0))
    trainer.run()
    return trainer


def attention_of(model, stack: str, layer: int):
    """The attention module of ``stack`` (the library's names) in layer ``layer``, found by hand."""
    if not hasattr(model, "encoder"):
        return model.blocks[layer].self_attn
    blocks = model.encoder if stack == "encoder" else model.decoder
    return blocks[layer].cross_attn if stack == "cross" else blocks[layer].self_attn


@contextlib.contextmanager
def zeroed_by_hook(model, stack: str, layer: int, head: int):
    """Zero one head's slice of the input of W_O with a forward pre-hook (the reference, not the library's way)."""
    attention = attention_of(model, stack, layer)
    size = attention.head_dim

    def zero(_module, args):
        x = args[0].clone()
        x[..., head * size:(head + 1) * size] = 0  # (B, T, C): the heads' outputs side by side
        return (x,)

    handle = attention.out_proj.register_forward_pre_hook(zero)
    try:
        yield
    finally:
        handle.remove()


def test_head_keys_round_trip_and_bad_keys_are_explained():
    assert head_key(("cross", 0, 2)) == "cross.1.3" and parse_head_key("cross.1.3") == ("cross", 0, 2)
    assert head_label(("decoder", 1, 0)) == "decoder L2 H1"
    keys = all_head_keys(2, 3)
    assert len(keys) == 3 * 2 * 3 and "encoder.2.3" in keys and "encoder.3.1" not in keys
    for bad in ("cross.0.1", "cross.1", "attn.1.1", "cross.one.1"):
        with pytest.raises(ValueError, match="does not name a head"):
            parse_head_key(bad)
    assert refs_from_keys(["cross.1.1", "nonsense", "decoder.2.2"]) == [("cross", 0, 0), ("decoder", 1, 1)]


def test_all_heads_on_is_the_trainers_own_evaluation(trainer):
    probe = HeadProbe(trainer.task, trainer.model, trainer.step)
    outcome = probe.outcome()
    assert outcome.metrics == pytest.approx(trainer.evaluate())
    assert outcome.heads == () and len(outcome.samples) == 6


def test_a_head_off_matches_the_hook_reference_and_leaves_the_model_alone(trainer):
    probe = HeadProbe(trainer.task, trainer.model, trainer.step)
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    outcome = probe.outcome([("cross", 0, 1), ("no such stack", 0, 0), ("cross", 5, 0)])  # unknown heads ignored
    assert outcome.heads == (("cross", 0, 1),)
    with zeroed_by_hook(trainer.model, "cross", 0, 1):
        reference = trainer.task.evaluate(trainer.model, seed=EVAL_SEED)
    assert outcome.metrics == pytest.approx(reference, abs=1e-6)
    assert outcome.metrics["loss"] != pytest.approx(probe.outcome().metrics["loss"])  # the head did something
    assert all(torch.equal(v, before[k]) for k, v in trainer.model.state_dict().items())
    assert probe.outcome([("cross", 0, 1)]) is outcome  # remembered


def test_importance_is_the_accuracy_each_head_alone_costs(trainer):
    probe = HeadProbe(trainer.task, trainer.model, trainer.step)
    importance = probe.importance()
    base = trainer.task.evaluate(trainer.model, seed=EVAL_SEED)["accuracy"]
    assert set(importance.drop) == {"encoder", "decoder", "cross"} and importance.base == pytest.approx(base)
    assert base > 0.1 and max(float(np.nanmax(z)) for z in importance.drop.values()) > 0.03  # heads that matter
    for stack, z in importance.drop.items():
        assert z.shape == (2, 2)
        for layer, head in np.ndindex(z.shape):
            with zeroed_by_hook(trainer.model, stack, layer, head):
                off = trainer.task.evaluate(trainer.model, seed=EVAL_SEED)["accuracy"]
            assert z[layer, head] == pytest.approx(base - off, abs=1e-6)
    top, cost = importance.top()
    assert cost == max(float(np.nanmax(z)) for z in importance.drop.values()) == importance.of(top)
    assert probe.importance() is importance


def test_a_loss_metric_counts_a_rise_as_the_cost():
    task = get_task("char_lm")
    assert not task.higher_is_better
    trainer = Trainer(task, None, default_train_config(task, steps=5, eval_every=0, snapshot_every=0))
    trainer.run()
    probe = HeadProbe(task, trainer.model, trainer.step)
    importance = probe.importance()
    base = task.evaluate(trainer.model, seed=EVAL_SEED)[task.metric_name]
    with zeroed_by_hook(trainer.model, "decoder", 0, 0):
        off = task.evaluate(trainer.model, seed=EVAL_SEED)[task.metric_name]
    assert importance.drop["decoder"][0, 0] == pytest.approx(off - base, abs=1e-5)


def test_a_probe_is_kept_per_lane_until_its_model_trains_on(trainer):
    task = trainer.task
    other = Trainer(task, trainer.model_config, default_train_config(task, steps=3, eval_every=0, snapshot_every=0))
    store: dict = {}
    first = probe_for(store, 0, other)
    assert probe_for(store, 0, other) is first
    assert probe_for(store, 1, other) is not first  # each lane its own
    other.train_step()
    again = probe_for(store, 0, other)
    assert again is not first and again.step == 1
    assert probe_for(store, 0, trainer) is not again  # another run
    assert probe_for(store, 0, trainer, sampling={"temperature": 0.5}).sampling == {"temperature": 0.5}


def test_stacked_rows_puts_stacks_in_order_and_pads_with_nan():
    z, rows = stacked_rows({"cross": np.ones((1, 2)), "encoder": np.zeros((2, 3))})
    assert rows == ["encoder L1", "encoder L2", "cross L1"]
    assert z.shape == (3, 3) and np.isnan(z[2, 2]) and z[2, :2].tolist() == [1.0, 1.0]
