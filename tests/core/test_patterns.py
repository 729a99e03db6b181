"""Pattern scores checked on hand-built attention maps whose answers are known exactly."""

import numpy as np
import pytest
import torch

from transformer_core import patterns


def _one_hot_rows(cols: list[int], s: int) -> np.ndarray:
    w = np.zeros((len(cols), s), dtype=np.float32)
    w[np.arange(len(cols)), cols] = 1.0
    return w


def test_perfect_anti_diagonal_scores_one_and_uniform_scores_chance():
    n = 6
    perfect = _one_hot_rows([n - 1 - i for i in range(n)], n)
    uniform = np.full((n, n), 1.0 / n, dtype=np.float32)
    target = patterns.diagonal_target(n, n, n, anti=True)
    weights = np.stack([np.stack([perfect, uniform])])  # (L=1, H=2, T, S)
    scores = patterns.mask_score(weights, target)
    assert scores.shape == (1, 2)
    np.testing.assert_allclose(scores, [[1.0, 1.0 / n]], rtol=1e-6)


def test_rows_without_target_are_left_out_of_the_mean():
    # Row 2 (e.g. the query that writes EOS) has no expected source; its attention must not count.
    target = patterns.alignment_target(3, 2, [(0, 0), (1, 1)])
    weights = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    assert patterns.mask_score(weights, target) == pytest.approx(1.0)


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="does not match"):
        patterns.mask_score(np.ones((2, 3, 3)), np.ones((4, 4), dtype=bool))


def test_previous_token_target_and_score():
    t = 5
    target = patterns.previous_token_target(t)
    assert target.sum() == t - 1 and target[3, 2] and not target[0].any()
    prev = _one_hot_rows([0, 0, 1, 2, 3], t)
    assert patterns.mask_score(prev, target) == pytest.approx(1.0)
    assert patterns.mask_score(np.eye(t), target) == pytest.approx(0.0)


def test_induction_target_points_after_the_earlier_copy():
    tokens = [9, 1, 2, 3, 1, 2, 3]  # BOS A B C A B C
    target = patterns.induction_target(tokens)
    # The second A (index 4) should look at the token after the first A: B at index 2.
    assert target[4, 2] and target[5, 3] and target[6, 4]
    assert target[:4].sum() == 0
    assert target.sum() == 3


def test_object_score_ignores_cls_self_attention():
    mask = np.array([True, False, False, True])  # patches 0 and 3 hold the object
    w = np.zeros((5, 5), dtype=np.float32)
    w[0] = [0.5, 0.25, 0.0, 0.0, 0.25]  # half on itself, the rest on the object
    assert patterns.object_score(w, mask) == pytest.approx(1.0)
    w[0] = [0.0, 0.25, 0.25, 0.25, 0.25]
    assert patterns.object_score(w, mask) == pytest.approx(0.5)


def test_as_array_stacks_per_layer_tensors():
    layers = [torch.rand(2, 3, 4), torch.rand(2, 3, 4)]
    assert patterns.as_array(layers).shape == (2, 2, 3, 4)


def test_description_counts_from_one():
    scores = np.array([[0.1, 0.2], [0.3, 0.93]])
    assert patterns.best_head(scores) == (1, 1, pytest.approx(0.93))
    assert patterns.describe_best_head("cross:anti_diagonal", scores) == (
        "head 2.2 (cross attention) is 93% anti-diagonal"
    )
