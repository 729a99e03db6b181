"""The embedding map and one word in several sentences, against NumPy's SVD, brute-force cosines and
transformers' own hidden states (random-initialised local folders, nothing downloaded)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.lab.embedding_map import embedding_map, nearest, pca_2d, token_table
from explorer.lab.internals import build_lab_encoder
from explorer.lab.word_uses import compare_uses, find_word, pretrained_reader, random_reader, word_token
from tests.pretrained.hf_folders import bert_folder, gpt2_folder
from transformer_core.config import TransformerConfig
from transformer_core.pretrained import load_pretrained


@pytest.fixture(scope="module", name="gpt2")
def gpt2_fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("m") / "gpt2"
    hf = gpt2_folder(folder, layers=3, heads=2, width=16, positions=32)
    return hf, load_pretrained(folder)


@pytest.fixture(scope="module", name="bert")
def bert_fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("m") / "bert"
    hf = bert_folder(folder, layers=2, heads=2, width=16, positions=24)
    return hf, load_pretrained(folder)


def test_pca_matches_numpys_svd_of_the_centred_rows():
    rows = torch.randn(9, 12, generator=torch.Generator().manual_seed(1)) * torch.linspace(3, 0.1, 12)
    plane = pca_2d(rows)
    x = rows.double().numpy() - rows.double().numpy().mean(axis=0)
    u, s, _ = np.linalg.svd(x, full_matrices=False)
    assert s[0] > s[1] > 0 and np.isfinite(u).all()  # the oracle is not degenerate
    reference = u[:, :2] * s[:2]
    for c in range(2):  # each direction's sign is a convention: compare up to it
        sign = np.sign(reference[:, c] @ plane.coords[:, c])
        np.testing.assert_allclose(plane.coords[:, c], sign * reference[:, c], atol=1e-9)
    np.testing.assert_allclose(plane.explained, s[:2] ** 2 / (s ** 2).sum())
    assert 0 < plane.explained[1] < plane.explained[0] < 1
    with pytest.raises(ValueError, match="at least three"):
        pca_2d(rows[:2])


def test_nearest_neighbours_equal_brute_force_cosines_and_leave_the_token_out():
    table = torch.randn(50, 8, generator=torch.Generator().manual_seed(2))
    ids = [3, 17, 41]
    near, cos = nearest(table, ids, k=5)
    w = table.double().numpy()
    unit = w / np.linalg.norm(w, axis=1, keepdims=True)
    for row, i in enumerate(ids):
        sims = unit @ unit[i]
        sims[i] = -np.inf
        order = np.argsort(-sims)[:5]
        assert list(near[row]) == list(order)
        np.testing.assert_allclose(cos[row], sims[order], atol=1e-6)
        assert i not in near[row]


def test_the_map_of_gpt2_reads_its_own_table(gpt2):
    hf, pre = gpt2
    reader = pretrained_reader(pre)
    ids = [word_token(reader, w)[0] for w in ("cat", "dog", "mat", "sat")]
    m = embedding_map(pre.model, ids, reader.label)
    wte = hf.transformer.wte.weight.detach()
    torch.testing.assert_close(token_table(pre.model).detach(), wte)
    assert m.labels[0].endswith("cat") and m.plane.coords.shape == (4, 2)
    assert 0 < m.plane.explained[1] <= m.plane.explained[0] and m.plane.explained.sum() <= 1 + 1e-9
    rows = m.rows()
    assert rows[1]["token"] == m.labels[1] and set(rows[0]) >= {"pc1", "pc2", "neighbour_5", "cosine_5"}
    with pytest.raises(ValueError, match="at least three"):
        embedding_map(pre.model, [ids[0], ids[0], ids[1]], reader.label)


def test_a_words_vectors_are_gpt2s_hidden_states_and_identical_tokens_start_identical(gpt2):
    hf, pre = gpt2
    reader = pretrained_reader(pre)
    sentences = ["the cat sat on the mat", "a dog ran far away from the cat", "the cat sat on the mat"]
    cmp = compare_uses(reader, "cat", sentences)
    assert cmp.vectors.shape == (3, 4, 16) and cmp.pairs == ((0, 1), (0, 2), (1, 2))
    for use, vectors in zip(cmp.uses, cmp.vectors, strict=True):
        out = hf(torch.tensor([list(use.ids)]), output_hidden_states=True).hidden_states
        assert use.tokens[use.index].endswith("cat") and use.pieces[-1] == use.tokens[use.index]
        np.testing.assert_allclose(vectors[0], hf.transformer.wte.weight[use.ids[use.index]].detach(), atol=1e-5)
        for layer in (1, 2):  # HF's last hidden state has the final norm applied: ours is the raw residual
            np.testing.assert_allclose(vectors[layer], out[layer][0, use.index].detach(), atol=1e-4)
    np.testing.assert_allclose(cmp.cosines[:, 1], 1.0, atol=1e-9)  # the same sentence twice
    first, second = cmp.uses[0], cmp.uses[1]
    if first.ids[first.index] == second.ids[second.index]:
        assert cmp.cosines[0, 0] == pytest.approx(1.0)
    assert cmp.cosines[1:, 0].max() < 0.999  # different contexts: the vectors part ways


def test_bert_reads_the_word_after_its_cls_token_and_equals_hidden_states(bert):
    hf, pre = bert
    reader = pretrained_reader(pre)
    cmp = compare_uses(reader, "dog", ["the dog sat", "a dog ran far away"])
    for use, vectors in zip(cmp.uses, cmp.vectors, strict=True):
        assert use.tokens[0] == "[CLS]" and use.tokens[use.index] == "dog"
        out = hf(torch.tensor([list(use.ids)]), output_hidden_states=True).hidden_states
        for layer in (1, 2):
            np.testing.assert_allclose(vectors[layer], out[layer][0, use.index].detach(), atol=1e-4)
    assert cmp.cosines[0, 0] == pytest.approx(1.0)


def test_split_words_missing_words_and_counts_are_told_plainly(gpt2):
    _, pre = gpt2
    reader = pretrained_reader(pre)
    use = find_word(reader, "attention", "all you need is attention")
    assert len(use.pieces) >= 1 and use.tokens[use.index] == use.pieces[-1]
    with pytest.raises(ValueError, match="is not in the sentence"):
        find_word(reader, "cat", "a dog ran")
    with pytest.raises(ValueError, match="2 to 4 sentences"):
        compare_uses(reader, "cat", ["the cat"])
    with pytest.raises(ValueError, match="2 to 4 sentences"):
        compare_uses(reader, "cat", ["the cat"] * 5)


def test_the_random_encoder_and_its_hashed_words():
    config = TransformerConfig(vocab_size=1024, max_len=64, d_model=16, n_heads=2, n_layers=2, d_ff=64, pad_id=0)
    model = build_lab_encoder(config, seed=0)
    reader = random_reader(model, "sentence", "none", known=["river bank money"])
    cmp = compare_uses(reader, "bank", ["the river bank", "the bank lends money"])
    assert cmp.cosines.shape == (3, 1) and cmp.cosines[0, 0] == pytest.approx(1.0)
    ids = [word_token(reader, w)[0] for w in ("river", "bank", "money")]
    m = embedding_map(model, ids, reader.label)
    assert m.labels == ("river", "bank", "money")
