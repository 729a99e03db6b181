"""Sentence pooling as sentence-transformers computes it, read from the folder's own settings."""

from __future__ import annotations

import json

import pytest
import torch

from transformer_core.pretrained import Pooling, read_pooling


def _reference(hidden, valid, mode):
    # sentence-transformers' Pooling.forward, one mode at a time
    mask = valid.unsqueeze(-1).float()
    if mode == "cls":
        return hidden[:, 0]
    if mode == "max":
        return torch.where(mask.bool(), hidden, torch.full_like(hidden, -1e9)).max(1).values
    total, n = (hidden * mask).sum(1), mask.sum(1).clamp(min=1e-9)
    return total / (n.sqrt() if mode == "mean_sqrt_len" else n)


@pytest.mark.parametrize("mode", ["mean", "cls", "max", "mean_sqrt_len"])
def test_each_pooling_equals_sentence_transformers_formula(mode):
    hidden = torch.randn(3, 6, 5, generator=torch.Generator().manual_seed(0))
    valid = torch.tensor([[1] * 6, [1] * 3 + [0] * 3, [1] + [0] * 5], dtype=torch.bool)
    torch.testing.assert_close(Pooling(mode, "test")(hidden, valid), _reference(hidden, valid, mode))


def test_the_folders_pooling_is_found_through_modules_json(tmp_path):
    assert read_pooling(tmp_path) == Pooling("mean", "default")
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "pool", "type": "sentence_transformers.models.Pooling"}]))
    (tmp_path / "pool").mkdir()
    (tmp_path / "pool" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True,
                                                               "pooling_mode_mean_tokens": False}))
    assert read_pooling(tmp_path) == Pooling("max", "pool/config.json")
    (tmp_path / "pool" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True,
                                                               "pooling_mode_mean_tokens": True}))
    assert "(max_tokens + mean_tokens) is not computed here" in read_pooling(tmp_path).note
    (tmp_path / "pool" / "config.json").write_text("[1, 2")
    with pytest.raises(ValueError, match="config.json is not a readable JSON file"):
        read_pooling(tmp_path)
