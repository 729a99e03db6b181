"""The "Many heads, one pattern" lesson tells the truth: its real run is measured with the pattern scores."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons.experiments import REVERSE_STEPS, output_labels, train_reverse_lesson
from transformer_core.patterns import diagonal_target, mask_score
from transformer_core.tasks import get_task

UNIFORM = 1 / 8  # the anti-diagonal share of attention spread evenly over 8 input digits


@pytest.fixture(scope="module")
def lesson_run():
    """The lesson's own configuration: reverse 8 digits, 2 layers x 4 heads, REVERSE_STEPS steps, seed 0."""
    return train_reverse_lesson(["sinusoidal"])["sinusoidal"]


@pytest.mark.slow
def test_every_head_starts_flat_and_ends_on_the_same_anti_diagonal(lesson_run):
    scores = np.stack([s["cross:anti_diagonal"] for s in lesson_run.scores])  # (snapshots, L, H)
    assert lesson_run.snapshot_steps[-1] == REVERSE_STEPS and scores.shape[1:] == (2, 4)
    assert lesson_run.final_metric > 0.95  # the task is solved...
    assert np.all(np.abs(scores[0] - UNIFORM) < 0.06)  # ...from heads that started spread evenly
    assert scores[-1].min() > 3 * UNIFORM  # every one of the 8 heads ends on the anti-diagonal...
    cross = lesson_run.snapshots[-1]["cross"].astype(float)  # (L, H, T, S)
    peaks = cross[:, :, :8].argmax(axis=-1)  # (L, H, 8): the input digit each output digit reads most
    same = (peaks == np.arange(7, -1, -1)).mean(axis=-1)  # (L, H): rows whose peak is on the anti-diagonal
    assert same.min() >= 5 / 8  # ...and in every head most output digits read their mirror input digit most


@pytest.mark.slow
def test_scores_match_an_independent_anti_diagonal_count(lesson_run):
    cross = lesson_run.snapshots[-1]["cross"].astype(float)  # (L, H, T, S)
    by_hand = np.mean([cross[:, :, i, 7 - i] for i in range(8)], axis=0)  # (L, H)
    np.testing.assert_allclose(lesson_run.scores[-1]["cross:anti_diagonal"], by_hand, atol=1e-3)  # float16 snapshots
    target = diagonal_target(cross.shape[2], cross.shape[3], 8, anti=True)
    np.testing.assert_allclose(mask_score(cross, target), by_hand, atol=1e-3)  # float16 snapshots


def test_rows_are_named_by_the_digit_each_position_writes():
    task = get_task("reverse", min_len=8)
    example = task.attention_example()
    rows, source = example["labels"]["cross"]
    written = output_labels(rows)
    assert rows[0] == "BOS" and len(written) == len(rows)
    assert written[:-1] == source[::-1]  # reversing: output digit i is input digit 8 - i
    assert written[-1] == "end"


def test_unknown_lesson_variant_is_refused():
    with pytest.raises(ValueError, match="Unknown lesson variant"):
        train_reverse_lesson(["rotary"])
