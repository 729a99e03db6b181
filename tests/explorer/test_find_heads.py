"""Find the heads: the scores of every head, against loops over transformers' attention (the reference)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.pretrained.find_heads import head_scores, repeated_sequence
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, mark_special_tokens
from transformer_core.pretrained import load_pretrained


@pytest.fixture(scope="module", name="gpt2")
def gpt2_fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2")
    return gpt2_folder(folder, layers=3, heads=2, positions=32), load_pretrained(folder)


def _reference(attentions, length: int, offset: int) -> dict[str, np.ndarray]:
    """The scores written out as loops over query rows."""
    out = {k: np.zeros((len(attentions), attentions[0].shape[1])) for k in ("previous_token", "first_token",
                                                                            "induction")}
    for layer, w in enumerate(attentions):
        w = w[0].detach().double().numpy()  # (H, T, T)
        t = w.shape[-1]
        out["previous_token"][layer] = np.mean([w[:, i, i - 1] for i in range(offset + 1, t)], axis=0)
        out["first_token"][layer] = np.mean([w[:, i, 0] for i in range(1, t)], axis=0)
        second = range(offset + length, offset + 2 * length)  # each token of the second copy ...
        out["induction"][layer] = np.mean([w[:, i, i - length + 1] for i in second], axis=0)  # ... -> its successor
    return out


def test_gpt2_scores_match_the_loops_over_the_reference_attention(gpt2):
    hf, pre = gpt2
    result = head_scores(pre, length=12, seed=3)
    ids = list(result.ids)
    assert ids[:12] == ids[12:] and len(set(ids[:12])) == 12  # distinct tokens: one induction cell per query
    ref = _reference(hf(torch.tensor([ids]), output_attentions=True).attentions, 12, 0)
    for name, expected in ref.items():
        np.testing.assert_allclose(result.scores[name], expected, atol=1e-5)
    layer, head, score = result.best("induction")
    assert score == pytest.approx(result.scores["induction"].max())


def test_bert_keeps_cls_and_sep_around_the_repeated_part(tmp_path):
    bert_folder(tmp_path, positions=24)
    mark_special_tokens(tmp_path)
    pre = load_pretrained(tmp_path)
    ids, offset = repeated_sequence(pre, 5, seed=0)
    tokens = [pre.tokenizer.id_to_token(i) for i in ids]
    assert offset == 1 and tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert ids[1:6] == ids[6:11]
    assert not any(pre.tokenizer.id_to_token(i).startswith("[") for i in ids[1:-1])
    scores = head_scores(pre, length=5)
    assert all(s.shape == (2, 2) and ((s >= 0) & (s <= 1)).all() for s in scores.scores.values())


def test_a_sequence_too_long_for_the_model_is_refused(gpt2):
    _, pre = gpt2
    with pytest.raises(ValueError, match="must have 2 to 16 tokens"):
        repeated_sequence(pre, 17, seed=0)
