"""Numbers the explorer pages show, computed in the core: each checked against an independent computation.

head_summary (Attention Lab, per-head summary), shifted_dot_product and shuffle_permutation (Positional
Encodings), num_patches with attention_scores (ViT Patching).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from explorer.lab.internals import head_summary
from explorer.lab.positional import shifted_dot_product, shuffle_permutation
from explorer.lab.vit_walkthrough import attention_scores, num_patches, random_vit, walk_through
from transformer_core import ViTConfig, patchify, sinusoidal_encoding


def test_head_summary_matches_loops_over_every_row() -> None:
    rng = np.random.default_rng(0)
    weights = rng.random((2, 3, 4, 5))
    weights /= weights.sum(-1, keepdims=True)
    weights[1, 2, 3] = 0.0  # a fully masked query row
    weights[0, 1, 0] = [1.0, 0, 0, 0, 0]  # a query that looks at one key only
    summary = head_summary(weights)
    assert summary.entropy.shape == summary.self_weight.shape == (2, 3)
    for layer in range(2):
        for head in range(3):
            rows = weights[layer, head]
            entropies = [-sum(w * math.log(w) for w in row if w > 0) for row in rows]
            assert summary.entropy[layer, head].item() == pytest.approx(sum(entropies) / len(rows), abs=1e-9)
            diagonal = [rows[i, i] for i in range(min(rows.shape))]
            assert summary.self_weight[layer, head].item() == pytest.approx(sum(diagonal) / len(diagonal))
    assert summary.entropy[0, 1].item() < summary.entropy[0, 0].item()
    uniform = head_summary(torch.full((1, 1, 3, 8), 1 / 8))
    assert uniform.entropy.item() == pytest.approx(math.log(8))
    with pytest.raises(ValueError, match="shape"):
        head_summary(weights[0])


@pytest.mark.parametrize("d_model, base", [(8, 10000.0), (32, 10000.0), (64, 100.0)])
@pytest.mark.parametrize("k", [1, 3, 17])
def test_shifted_dot_product_is_the_tables_dot_product_at_every_position(d_model: int, base: float, k: int) -> None:
    table = sinusoidal_encoding(40, d_model, base).double()
    for p in (0, 5, 40 - 1 - k):
        assert shifted_dot_product(d_model, k, base) == pytest.approx(float(table[p] @ table[p + k]), abs=1e-4)
    assert shifted_dot_product(d_model, 0, base) == pytest.approx(d_model / 2)  # |PE(p)|² = one per pair


def test_shuffle_permutation_always_moves_something_and_repeats_with_its_seed() -> None:
    state = torch.random.get_rng_state()
    for n in range(2, 9):
        for seed in range(40):
            perm = shuffle_permutation(n, seed)
            assert sorted(perm) == list(range(n)) and perm != list(range(n))
            assert shuffle_permutation(n, seed) == perm
    assert shuffle_permutation(1, 0) == [0]
    assert len({tuple(shuffle_permutation(6, seed)) for seed in range(20)}) > 10  # the seed matters
    assert torch.equal(torch.random.get_rng_state(), state)  # the global random state was not used


@pytest.mark.parametrize("image_size, patch_size", [(32, 8), (64, 16), (48, 4), (32, 32)])
def test_num_patches_and_attention_scores_match_a_real_vit(image_size: int, patch_size: int) -> None:
    n = num_patches(image_size, patch_size)
    assert n == patchify(torch.zeros(1, 3, image_size, image_size), patch_size).shape[1]
    config = ViTConfig(image_size=image_size, patch_size=patch_size, d_model=16, n_heads=2, n_layers=1, d_ff=32)
    walk = walk_through(random_vit(config), torch.rand(3, image_size, image_size))
    assert attention_scores(n) == walk.attention[0][0].numel()  # one head's (N+1) x (N+1) scores
    with pytest.raises(ValueError, match="divide"):
        num_patches(image_size, patch_size + 1)
