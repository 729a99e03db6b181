"""The lesson "Which head does the work?" tells the truth: its claims are measured on its own real run."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons.experiments import REVERSE_STEPS, train_reverse_lesson
from explorer.lessons.head_importance import PATTERN, findings, head_lesson_probe
from transformer_core.training import EVAL_SEED
from ui.lessons.trained_texts import IMPORTANCE


@pytest.fixture(scope="module")
def probe():
    """The lesson's own run: reverse 8 digits, 2 layers x 4 heads per stack, REVERSE_STEPS steps, seed 0."""
    return head_lesson_probe()


@pytest.mark.slow
def test_the_lesson_model_is_the_run_the_other_training_lessons_share(probe):
    shared = train_reverse_lesson(["sinusoidal"])["sinusoidal"]
    assert probe.step == REVERSE_STEPS
    assert probe.outcome().metrics["accuracy"] == pytest.approx(shared.final_metric)
    np.testing.assert_allclose(probe.pattern_scores()[PATTERN], shared.scores[-1][PATTERN], atol=2e-3)  # float16


@pytest.mark.slow
def test_the_clearest_anti_diagonal_is_not_the_head_the_model_needs(probe):
    found = findings(probe)
    assert found.accuracy > 0.95
    question = IMPORTANCE.question
    assert "hardly changes" in question.options[question.answer]
    assert found.clearest_cost < 0.03  # the answer: switching the clearest head off costs a few points at most
    assert found.clearest_score > 0.5  # ...and it really shows the anti-diagonal
    assert found.needed[1] == 0 and found.needed_cost >= 0.05  # the head the model needs most is in layer 1
    assert found.needed != found.clearest


@pytest.mark.slow
def test_redundant_heads_cost_more_together_than_one_at_a_time(probe):
    found = findings(probe)
    together = probe.outcome([("cross", 0, h) for h in range(4)]).metrics["accuracy"]
    assert together < 0.1  # layer 1's four cross-attention heads off: almost nothing is reversed
    assert found.first_layer_cost == pytest.approx(found.accuracy - together)
    assert found.first_layer_cost > 2 * found.first_layer_sum


@pytest.mark.slow
def test_every_head_of_the_map_is_one_real_evaluation(probe):
    importance = probe.importance()
    layer, head = 1, 2
    with_head_off = probe.outcome([("decoder", layer, head)]).metrics["accuracy"]
    assert importance.drop["decoder"][layer, head] == pytest.approx(importance.base - with_head_off)
    direct = probe.task.evaluate(probe.model, seed=EVAL_SEED)["accuracy"]
    assert importance.base == pytest.approx(direct)  # every head on again after measuring
