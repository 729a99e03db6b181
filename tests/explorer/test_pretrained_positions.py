"""The learned position tables of pretrained models: their values, similarity and principal components."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from explorer.pretrained.positions import position_tables, principal_components
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, vit_folder
from transformer_core.pretrained import load_pretrained


def test_pca_matches_the_eigenvectors_of_the_covariance_matrix():
    table = torch.randn(40, 12, generator=torch.Generator().manual_seed(3)) * torch.linspace(3, 0.1, 12)
    pca = principal_components(table, 3)
    x = table.double().numpy()
    centred = x - x.mean(axis=0)
    values, vectors = np.linalg.eigh(centred.T @ centred / (len(x) - 1))  # ascending eigenvalues
    order = np.argsort(values)[::-1][:3]
    for j, col in enumerate(order):
        expected = centred @ vectors[:, col]
        expected *= 1 if expected[-1] >= expected[0] else -1
        np.testing.assert_allclose(pca.scores[:, j].numpy(), expected, atol=1e-4)
        assert pca.explained[j].item() == pytest.approx(values[col] / values.sum(), rel=1e-4)


def test_pca_of_a_hand_built_circle_finds_the_circle():
    # Positions on a circle of radius 2 in dimensions 0 and 1, a small wobble in dimension 2, nothing elsewhere.
    angles = torch.arange(8) * (2 * math.pi / 8)
    table = torch.zeros(8, 5)
    table[:, 0], table[:, 1] = 2 * torch.cos(angles), 2 * torch.sin(angles)
    table[:, 2] = 0.1 * torch.tensor([1.0, -1] * 4)
    pca = principal_components(table, 3)
    radius = pca.scores[:, :2].norm(dim=1)
    torch.testing.assert_close(radius, torch.full((8,), 2.0), atol=1e-5, rtol=0)
    # Variance: 4 per position from the circle (2 + 2 along its two axes), 0.01 from the wobble.
    torch.testing.assert_close(pca.explained, torch.tensor([2 / 4.01, 2 / 4.01, 0.01 / 4.01]), atol=1e-5, rtol=0)
    assert pca.scores[:, 2].abs().max().item() == pytest.approx(0.1, abs=1e-5)


def test_pca_refuses_a_table_it_cannot_decompose():
    with pytest.raises(ValueError, match="at least two positions"):
        principal_components(torch.zeros(1, 4))
    with pytest.raises(ValueError, match="k must be"):
        principal_components(torch.zeros(5, 4), 6)


@pytest.mark.parametrize("make, hf_table", [
    (gpt2_folder, lambda hf: hf.transformer.wpe.weight),
    (bert_folder, lambda hf: hf.bert.embeddings.position_embeddings.weight),
])
def test_a_models_table_is_its_own_position_embedding(tmp_path, make, hf_table):
    hf = make(tmp_path, positions=24, width=16)
    tables = position_tables(load_pretrained(tmp_path), 10)
    torch.testing.assert_close(tables.table, hf_table(hf).detach(), atol=0, rtol=0)
    assert tables.shown.shape == (10, 16) and tables.sinusoidal.shape == (10, 16)
    cosine = torch.nn.functional.cosine_similarity(tables.shown[:, None], tables.shown[None], dim=-1)
    torch.testing.assert_close(tables.similarity, cosine, atol=1e-5, rtol=0)
    assert tables.sinusoidal[1, 0].item() == pytest.approx(math.sin(1.0))
    assert tables.pca.scores.shape == (24, 3)
    assert position_tables(load_pretrained(tmp_path), 500).shown.shape[0] == 24  # no more rows than the model has


def test_a_vit_has_no_text_positions(tmp_path):
    vit_folder(tmp_path)
    with pytest.raises(ValueError, match="GPT-2 or BERT"):
        position_tables(load_pretrained(tmp_path), 8)
