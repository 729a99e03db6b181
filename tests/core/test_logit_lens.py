"""The logit lens against a hand computation: each block's output through the final norm and the unembedding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.core.intervention_models import build
from transformer_core.interventions import ablate_heads, logit_lens


def _hand_lens(model, idx):
    """Softmax of lm_head(final_norm(x_l)) for the residual stream x_l after every block, ``(L, T, V)``."""
    x, probs = model.embed(idx[None]), []
    for block in model.blocks:
        x = block(x, is_causal=True, positions=model.attn_positions)[0]
        probs.append(torch.softmax(model.lm_head(model.final_norm(x))[0], dim=-1))
    return torch.stack(probs)


@pytest.mark.parametrize("name", ["causal_lm", "gpt2"])
def test_lens_is_the_final_norm_and_unembedding_of_each_layer(name):
    model, _ = build(name)
    idx = torch.tensor([3, 1, 4, 1, 5, 9])
    lens = logit_lens(model, idx, top_k=3)
    with torch.no_grad():
        probs = _hand_lens(model, idx)  # (L, T, V)
        own = torch.softmax(model(idx[None])[0], dim=-1)  # (T, V)
    assert lens.n_layers == len(model.blocks) and lens.top_ids.shape == (len(model.blocks), 6, 3)
    expected = probs.topk(3, dim=-1)
    np.testing.assert_allclose(lens.top_probs, expected.values.numpy(), atol=1e-6)
    np.testing.assert_array_equal(lens.top_ids[..., 0], expected.indices[..., 0].numpy())
    np.testing.assert_array_equal(lens.final_ids, own.argmax(dim=-1).numpy())  # the last layer is the model
    np.testing.assert_allclose(lens.top_probs[-1, :, 0], own.max(dim=-1).values.numpy(), atol=1e-6)
    final = probs.gather(-1, own.argmax(dim=-1)[None, :, None].expand(len(model.blocks), -1, 1))[..., 0]
    np.testing.assert_allclose(lens.final_probs, final.numpy(), atol=1e-6)
    np.testing.assert_array_equal(lens.tokens, idx.numpy())


def test_lens_sees_switched_off_heads():
    model, _ = build("causal_lm")
    idx = [2, 7, 1, 8, 2, 8]
    plain = logit_lens(model, idx)
    with ablate_heads(model, [("decoder", 0, h) for h in range(4)]):
        ablated = logit_lens(model, idx)
    assert not np.allclose(plain.top_probs[0], ablated.top_probs[0])
    np.testing.assert_array_equal(logit_lens(model, idx).top_probs, plain.top_probs)


@pytest.mark.parametrize(("tokens", "top_k", "message"), [
    ([], 5, "non-empty"),
    (list(range(9)), 5, "at most 8"),
    ([1, 2, 11], 5, "must lie in 0..10"),
    ([[1, 2], [3, 4]], 5, "one non-empty text"),
    ([1, 2], 0, "top_k=0"),
    ([1, 2], 12, "top_k=12"),
])
def test_bad_input_is_refused_clearly(tokens, top_k, message):
    model, _ = build("causal_lm")
    with pytest.raises(ValueError, match=message):
        logit_lens(model, tokens, top_k=top_k)


@pytest.mark.parametrize("name", ["seq2seq", "bert", "vit", "regressor"])
def test_lens_is_for_decoder_only_models(name):
    model, _ = build(name)
    with pytest.raises(ValueError, match="decoder-only"):
        logit_lens(model, [1, 2, 3])
