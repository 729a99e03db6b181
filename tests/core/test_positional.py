"""Positional encodings against the papers' formulas, computed independently with numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from transformer_core import MultiHeadAttention, PositionalEncoding, RotaryEmbedding, causal_mask, sinusoidal_encoding


def _paper_table(max_len: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / base^(2i/d)), PE(pos, 2i+1) = cos(pos / base^(2i/d)), one entry at a time."""
    table = np.zeros((max_len, d_model))
    for pos in range(max_len):
        for col in range(d_model):
            two_i = col - col % 2
            angle = pos / base ** (two_i / d_model)
            table[pos, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return table


@pytest.mark.parametrize(("max_len", "d_model", "base"), [(50, 16, 10000.0), (7, 9, 10000.0), (20, 6, 100.0)])
def test_sinusoidal_table_matches_the_paper_formula(max_len, d_model, base):
    table = sinusoidal_encoding(max_len, d_model, base)
    assert table.shape == (max_len, d_model) and table.dtype == torch.float32
    np.testing.assert_allclose(table.numpy(), _paper_table(max_len, d_model, base), atol=1e-6)


def test_sinusoidal_columns_alternate_sin_and_cos():
    table = sinusoidal_encoding(10, 8)
    np.testing.assert_array_equal(table[0].numpy(), [0, 1, 0, 1, 0, 1, 0, 1])  # sin(0) = 0, cos(0) = 1
    np.testing.assert_allclose(table[:, 0].numpy(), np.sin(np.arange(10)), atol=1e-6)  # fastest frequency
    np.testing.assert_allclose(table[:, 1].numpy(), np.cos(np.arange(10)), atol=1e-6)
    torch.testing.assert_close(table[:, 0::2] ** 2 + table[:, 1::2] ** 2, torch.ones(10, 4))
    with pytest.raises(ValueError, match="must be positive"):
        sinusoidal_encoding(0, 8)


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "rope", "none"])
def test_positional_encoding_adds_its_table(kind):
    torch.manual_seed(0)
    module = PositionalEncoding(kind, max_len=12, d_model=8)
    x = torch.randn(2, 5, 8)
    table = module.encoding()
    if kind in ("rope", "none"):
        assert table is None and list(module.parameters()) == []
        torch.testing.assert_close(module(x), x)
        return
    expected_table = sinusoidal_encoding(12, 8) if kind == "sinusoidal" else module.table
    torch.testing.assert_close(table, expected_table)
    torch.testing.assert_close(module(x), x + table[:5])
    torch.testing.assert_close(module(x, offset=3), x + table[3:8])
    assert [p.shape for p in module.parameters()] == ([torch.Size([12, 8])] if kind == "learned" else [])
    assert "pe" not in module.state_dict()  # the fixed table is rebuilt, not saved
    with pytest.raises(ValueError, match="max_len=12"):
        module(torch.randn(1, 13, 8))


def test_unknown_positional_kind():
    with pytest.raises(ValueError, match="positional='fourier'"):
        PositionalEncoding("fourier", 8, 8)


def _numpy_rotary(x: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """Rotate each pair (x[j], x[j + D/2]) of position ``pos`` by ``pos * base^(-2j/D)`` as a complex number."""
    n, d = x.shape
    half = d // 2
    out = np.empty_like(x)
    for pos in range(n):
        for j in range(half):
            z = complex(x[pos, j], x[pos, j + half]) * np.exp(1j * pos * base ** (-2 * j / d))
            out[pos, j], out[pos, j + half] = z.real, z.imag
    return out


def test_rotary_matches_complex_rotation_and_keeps_lengths():
    rope = RotaryEmbedding(head_dim=8, max_len=16)
    x = torch.randn(2, 3, 10, 8, dtype=torch.float64)  # (B, H, N, D)
    rotated = rope.rotate(x)
    np.testing.assert_allclose(rotated[1, 2].numpy(), _numpy_rotary(x[1, 2].numpy()), atol=1e-5)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rotated[..., 0, :], x[..., 0, :])  # position 0 is not rotated
    q, k = rope(x, x)
    torch.testing.assert_close(q, rotated)


def test_rotary_scores_depend_only_on_the_offset():
    rope = RotaryEmbedding(head_dim=8, max_len=32)
    q, k = torch.randn(2, 8).unbind(0)
    qs = rope.rotate(q.expand(32, 8))  # the same query vector at every position
    ks = rope.rotate(k.expand(32, 8))
    scores = qs @ ks.T  # (32, 32): scores[m, n] depends on m - n only
    for shift in (1, 5, 17):
        torch.testing.assert_close(scores[shift:, shift:], scores[:-shift, :-shift])
    assert not torch.allclose(scores[0, 0], scores[5, 0])


def test_rotary_errors():
    with pytest.raises(ValueError, match="even head size"):
        RotaryEmbedding(head_dim=5, max_len=8)
    with pytest.raises(ValueError, match="max_len=8"):
        RotaryEmbedding(head_dim=4, max_len=8).rotate(torch.randn(9, 4))


def test_rotary_places_fewer_queries_at_the_last_key_positions():
    """Cached decoding asks with the newest T tokens only: they sit at positions S-T..S-1, as causal_mask says."""
    rope = RotaryEmbedding(head_dim=8, max_len=16)
    x = torch.randn(1, 2, 10, 8, dtype=torch.float64)  # (B, H, S, D)
    q_all, k_all = rope.rotate_qk(x, x)
    q_last, k = rope.rotate_qk(x[..., 7:, :], x)  # the last 3 queries against all 10 keys
    torch.testing.assert_close(k, k_all)
    torch.testing.assert_close(q_last, q_all[..., 7:, :])
    np.testing.assert_allclose(q_last[0, 1].numpy(), _numpy_rotary(x[0, 1].numpy())[7:], atol=1e-5)


def test_causal_attention_of_the_newest_tokens_equals_the_full_pass_with_rotary_positions():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2).eval()
    rope = RotaryEmbedding(head_dim=8, max_len=16)
    x = torch.randn(1, 9, 16)
    full, _ = mha(x, x, x, mask=causal_mask(9), positions=rope)
    last, _ = mha(x[:, 6:], x, x, mask=causal_mask(3, 9), positions=rope)
    torch.testing.assert_close(last, full[:, 6:])
