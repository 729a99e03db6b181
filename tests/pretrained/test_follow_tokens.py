"""``follow_tokens`` (the logit lens of chosen tokens) equals transformers' own GPT-2 and Llama (6 query heads
sharing 2 key/value heads) read with hooks: each block's output through the final norm and the unembedding, with
random weights; ranks counted over the whole vocabulary."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.pretrained.hf_folders import gpt2_folder, llama_folder
from tests.pretrained.hf_probes import PARTS, check_oracle, hooked, keep
from transformer_core.lens import follow_tokens, logit_lens
from transformer_core.pretrained import load_pretrained

TEXT = [5, 9, 13, 7, 21, 11]
TARGETS = [17, 8, 30]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """family -> (transformers model, our model)."""
    root = tmp_path_factory.mktemp("follow")
    made = {"gpt2": gpt2_folder(root / "gpt2", layers=3, heads=3, width=24),
            "llama": llama_folder(root / "llama", layers=3, heads=6, kv_heads=2, width=36, ff=40)}
    return {family: (hf, load_pretrained(str(root / family)).model) for family, hf in made.items()}


def _oracle(hf, family: str, position: int) -> torch.Tensor:
    """(L, V) probabilities: each block's output of transformers' model, hooked, through its final norm and head."""
    parts, store = PARTS[family], {}
    layers = parts.layers(hf)
    with torch.no_grad(), hooked(post={block: keep(store, i) for i, block in enumerate(layers)}):
        hf(input_ids=torch.tensor([TEXT]))
        rows = [parts.unembed(hf)(parts.final_norm(hf)(store[i]))[0, position] for i in range(len(layers))]
    probs = torch.stack(rows).double().softmax(dim=-1)
    check_oracle(probs)
    return probs


@pytest.mark.parametrize("family", ["gpt2", "llama"])
@pytest.mark.parametrize("position", [-1, 2])
def test_probabilities_and_ranks_match_transformers(pair, family, position):
    hf, ours = pair[family]
    probs = _oracle(hf, family, position)  # (L, V)
    paths = follow_tokens(ours, TEXT, TARGETS, position=position)
    expected = probs[:, TARGETS]  # (L, K)
    np.testing.assert_allclose(paths.probs, expected.numpy(), rtol=1e-4, atol=1e-7)
    ranks = 1 + (probs[:, None, :] > expected[:, :, None]).sum(dim=-1)  # (L, K)
    assert len(set(ranks.flatten().tolist())) > 2, "the ranks should differ, or they test nothing"
    np.testing.assert_array_equal(paths.ranks, ranks.numpy())
    assert paths.position == position % len(TEXT)
    with torch.no_grad():  # the model itself
        last = hf(input_ids=torch.tensor([TEXT])).logits[0, position].double().softmax(dim=-1)
    np.testing.assert_allclose(paths.probs[-1], last[TARGETS].numpy(), rtol=1e-4, atol=1e-7)


def test_the_top_token_has_rank_one_and_agrees_with_the_lens(pair):
    _, ours = pair["gpt2"]
    lens = logit_lens(ours, TEXT, top_k=1)
    tops = [int(i) for i in lens.top_ids[:, -1, 0]]
    paths = follow_tokens(ours, TEXT, tops)
    assert [int(paths.ranks[layer, layer]) for layer in range(len(tops))] == [1] * len(tops)
    np.testing.assert_allclose(np.diag(paths.probs), lens.top_probs[:, -1, 0], rtol=1e-5)


@pytest.mark.parametrize(("targets", "position", "message"), [
    ([], -1, "at least one"), ([40], -1, "0..39"), ([-1], -1, "0..39"), ([3], 6, "outside"), ([3], -7, "outside"),
])
def test_bad_requests_are_refused(pair, targets, position, message):
    with pytest.raises(ValueError, match=message):
        follow_tokens(pair["gpt2"][1], TEXT, targets, position=position)
