"""Greedy generation through the loaded models equals transformers' ``generate(do_sample=False)``, token for token."""

from __future__ import annotations

import pytest
import torch

from tests.pretrained.hf_folders import gpt2_folder
from transformer_core.generation import generate
from transformer_core.pretrained import load_pretrained


def _sharpen(hf, path) -> None:
    """Larger random weights, saved again: at transformers' init (std 0.02) the logits are so flat that greedy
    decoding repeats one token, which would compare almost nothing."""
    torch.manual_seed(0)
    with torch.no_grad():
        for p in hf.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.3)
    hf.save_pretrained(path)


def _theirs(hf, prompt: torch.Tensor, n: int) -> list[int]:
    out = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=n, min_new_tokens=n,
                      do_sample=False, eos_token_id=None, pad_token_id=0)
    assert out.shape == (1, prompt.size(1) + n)  # the oracle wrote every token
    return out[0, prompt.size(1):].tolist()


def _ours(model, prompt: torch.Tensor, n: int) -> list[int]:
    return [step.token_id for step in generate(model, prompt, n)]


@pytest.mark.parametrize("shape", [
    dict(layers=2, heads=2, width=16, vocab=40, positions=32),
    dict(layers=3, heads=4, width=32, vocab=50, positions=40, tied=False),
])
def test_gpt2_greedy_equals_transformers(tmp_path, shape):
    hf = gpt2_folder(tmp_path, **shape)
    _sharpen(hf, tmp_path)
    model = load_pretrained(tmp_path).model
    prompt = torch.randint(0, shape["vocab"], (1, 6), generator=torch.Generator().manual_seed(4))
    n = shape["positions"] - 6
    theirs = _theirs(hf, prompt, n)
    assert len(set(theirs)) > 1  # not a degenerate repetition of one token
    assert _ours(model, prompt, n) == theirs
