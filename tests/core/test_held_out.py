"""Held-out evaluation data: a fixed rule on each sequence's content keeps evaluation sequences out of training."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest
import torch

from transformer_core.tasks import get_task
from transformer_core.tasks.base import HELD_OUT_BUCKETS, generator_for, held_out_mask

# Settings with few enough possible sequences that, without a split, training batches repeat evaluation ones.
SMALL = {
    "copy": {"seq_len": 4, "min_len": 1},
    "reverse": {"seq_len": 4, "min_len": 2},
    "sort": {"seq_len": 4, "min_len": 1},
    "induction": {"seq_len": 3, "num_symbols": 10},
    "protein": {"min_len": 1, "max_len": 3},
}
CONTENT = {"seq2seq": "src", "causal_lm": "idx", "regression": "tokens"}  # the input that identifies an example
TINY = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}


def examples(task, batch) -> set[tuple[int, ...]]:
    return {tuple(row.tolist()) for row in batch[CONTENT[task.family]]}


def training_examples(task, batches: int = 100) -> set[tuple[int, ...]]:
    return set().union(*(examples(task, task.sample_batch(64, generator_for(seed))) for seed in range(batches)))


@pytest.mark.parametrize("name", SMALL)
def test_no_training_example_ever_equals_an_evaluation_example(name):
    task = get_task(name, **SMALL[name])
    assert task.held_out_split and task.notice is None
    held_out = set().union(*(examples(task, task.sample_batch(512, generator_for(10**6 + s), held_out=True))
                             for s in range(3)))
    assert len(held_out) > 50  # evaluation has plenty of different sequences to draw
    assert training_examples(task).isdisjoint(held_out)
    task.held_out_split = False  # the same draws without the split do repeat evaluation sequences
    assert not training_examples(task, batches=20).isdisjoint(held_out)


@pytest.mark.parametrize("name", SMALL)
def test_evaluation_and_samples_draw_only_held_out_sequences(name, monkeypatch):
    task = get_task(name, **SMALL[name])
    model = task.build_model(dataclasses.replace(task.default_model_config(), **TINY))
    calls = []
    real = task.sample_batch

    def spy(*args, **kwargs):
        calls.append(kwargs.get("held_out", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(task, "sample_batch", spy)
    task.evaluate(model, seed=0)
    task.samples(model, 4, seed=0)
    assert calls == [True, True]


def test_about_one_sequence_in_ten_is_held_out_at_every_length():
    for length in (2, 3, 4):
        digits = torch.tensor(list(itertools.product(range(10), repeat=length)))  # every sequence of this length
        padded = torch.cat([digits, torch.zeros(len(digits), 2, dtype=torch.long)], dim=1)  # padding is ignored
        mask = held_out_mask(padded, torch.full((len(digits),), length))
        assert torch.equal(mask, held_out_mask(digits, torch.full((len(digits),), length)))
        assert abs(float(mask.float().mean()) - 1 / HELD_OUT_BUCKETS) < 0.02


def test_the_rule_depends_on_the_digits_only():
    digits = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 9], [0, 0, 0, 0]])
    lengths = torch.tensor([3, 3, 3])
    mask = held_out_mask(digits, lengths)
    assert mask[0] == mask[1]  # the digit past the length does not count
    assert torch.equal(mask, held_out_mask(digits.flip(0), lengths).flip(0))  # nor does the row's place


def test_too_small_a_space_keeps_no_split_and_says_so():
    task = get_task("copy", seq_len=2, num_digits=2)
    assert not task.held_out_split and "Only 6 different sequences" in task.notice
    model = task.build_model(dataclasses.replace(task.default_model_config(), **TINY))
    assert 0.0 <= task.evaluate(model)["accuracy"] <= 1.0  # still evaluates (on sequences it trains on)
    assert get_task("reverse").held_out_split and get_task("reverse").notice is None


def test_the_docs_state_how_many_char_lm_validation_sentences_occur_in_training():
    """char_lm has no split: count its validation sentences that also occur in the training text, as stated."""
    task = get_task("char_lm")
    sentences = [line for line in task.val_text.split("\n") if line]
    training = set(task.train_text.split("\n"))
    shared = sum(line in training for line in sentences)
    performance = (Path(__file__).resolve().parents[2] / "docs" / "performance.md").read_text(encoding="utf-8")
    stated = f"{shared} of the {len(sentences)} ({100 * shared / len(sentences):.1f} %)"
    assert 0 < shared < len(sentences) and stated in performance
