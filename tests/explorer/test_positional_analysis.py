"""Positional analysis against the formulas: rotations, similarity, extrapolation, encodings and the shuffle test."""

from __future__ import annotations

import math

import pytest
import torch

from explorer.lab.positional import (
    beyond_max_len,
    frequencies,
    learned_table,
    position_views,
    rotation_check,
    shuffle_test,
    similarity_matrix,
)
from transformer_core import CausalLM, TransformerConfig, VisionTransformer, ViTConfig
from transformer_core.positional import sinusoidal_encoding


def _is_toeplitz(m: torch.Tensor, atol: float = 1e-4) -> bool:
    return all(torch.allclose(torch.diagonal(m, k), torch.diagonal(m, k)[0].expand(m.size(0) - abs(k)), atol=atol)
               for k in range(-m.size(0) + 1, m.size(0)))


@pytest.mark.parametrize(("pos", "k"), [(0, 1), (5, 7), (20, -3)])
def test_shift_is_a_fixed_rotation(pos: int, k: int) -> None:
    check = rotation_check(32, 16, pos=pos, k=k)
    assert check.max_error < 1e-6
    for i in range(8):
        omega = 1.0 / 10000 ** (2 * i / 16)
        assert check.omegas[i].item() == pytest.approx(omega, rel=1e-6)
        c, s = math.cos(k * omega), math.sin(k * omega)
        assert check.rotations[i].flatten().tolist() == pytest.approx([c, s, -s, c], abs=1e-6)
        expected = (math.sin((pos + k) * omega), math.cos((pos + k) * omega))
        assert check.predicted[i].tolist() == pytest.approx(expected, abs=1e-5)
        assert check.pe_shifted[i].tolist() == pytest.approx(expected, abs=1e-5)


def test_rotation_check_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="even"):
        rotation_check(8, 7)
    with pytest.raises(ValueError, match="pos"):
        rotation_check(8, 8, pos=6, k=3)


def test_similarity_depends_on_distance_only() -> None:
    table = sinusoidal_encoding(24, 16)
    sim = similarity_matrix(table)
    assert _is_toeplitz(sim)
    # PE(a) · PE(a + k) = Σ_i cos(k ω_i)
    expected = torch.cos(5 * frequencies(16).double()).sum().item()
    assert sim[2, 7].item() == pytest.approx(expected, abs=1e-5)
    assert torch.allclose(similarity_matrix(table, cosine=True).diagonal(), torch.ones(24), atol=1e-6)


def test_beyond_max_len() -> None:
    info = beyond_max_len(16, 8, extra=4)
    assert torch.allclose(info.table, sinusoidal_encoding(20, 8))
    assert info.nearest_seen.shape == (4,) and (info.nearest_seen <= 1 + 1e-6).all()
    assert "max_len=16" in info.learned_error
    assert info.wavelengths[0].item() == pytest.approx(2 * math.pi)


def test_position_views() -> None:
    none_vec, none_sim = position_views("none", 10, 8)
    assert torch.allclose(none_sim, torch.ones(10, 10), atol=1e-6)
    assert torch.allclose(none_vec, none_vec[0].expand(10, 8))
    _, rope_sim = position_views("rope", 12, 8)
    assert _is_toeplitz(rope_sim) and rope_sim.min() < 0.99
    sin_vec, _ = position_views("sinusoidal", 10, 8)
    assert torch.allclose(sin_vec - none_vec, sinusoidal_encoding(10, 8), atol=1e-6)
    table = torch.randn(10, 8)
    learned_vec, _ = position_views("learned", 10, 8, learned_table=table)
    assert torch.allclose(learned_vec - none_vec, table, atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        position_views("learned", 12, 8, learned_table=table)
    with pytest.raises(ValueError, match="is not one of"):
        position_views("fourier", 12, 8)


def test_shuffle_test_without_positions_merely_permutes() -> None:
    ids, perm = [11, 12, 13, 14, 15, 16], [3, 0, 5, 1, 4, 2]
    blind = shuffle_test(ids, perm, positional="none")
    assert blind.max_diff < 1e-5
    assert torch.allclose(blind.shuffled_outputs, blind.outputs[perm], atol=1e-5)
    seeing = shuffle_test(ids, perm, positional="sinusoidal")
    assert seeing.max_diff > 1e-2
    with pytest.raises(ValueError, match="permutation"):
        shuffle_test(ids, [0, 0, 1, 2, 3, 4])


def test_learned_table_of_trained_models() -> None:
    lm = CausalLM(TransformerConfig(vocab_size=8, max_len=12, d_model=8, n_heads=2, n_layers=1, d_ff=16,
                                    positional="learned"))
    assert torch.equal(learned_table(lm), lm.embed.positions.table.detach())
    sinus = CausalLM(TransformerConfig(vocab_size=8, max_len=12, d_model=8, n_heads=2, n_layers=1, d_ff=16))
    assert learned_table(sinus) is None
    vit = VisionTransformer(ViTConfig(image_size=8, patch_size=4, d_model=8, n_heads=2, n_layers=1, d_ff=16))
    assert learned_table(vit).shape == (5, 8)


def test_run_past_max_len_asks_every_registered_encoding():
    from explorer.lab.positional import run_past_max_len, score_bias
    from transformer_core.positional import get, kinds

    runs = {r.kind: r for r in run_past_max_len(8, 16, extra=4)}
    assert tuple(runs) == kinds() and all(r.length == 12 for r in runs.values())
    for kind in ("sinusoidal", "learned", "rope"):
        assert "max_len=8" in runs[kind].error and not runs[kind].finite
    assert runs["none"].error == "" and runs["none"].finite
    for kind in kinds():
        bias = score_bias(kind, 4, 6)
        assert (bias is None) == (get(kind).acts != "bias")
