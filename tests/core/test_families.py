"""The registry of model families against the models themselves and every place that names them."""

from __future__ import annotations

import pytest
import torch

from explorer.builder import KIND_TITLES, BuilderSettings, build
from transformer_core import checkpoint
from transformer_core.config import TransformerConfig, ViTConfig
from transformer_core.families import FAMILIES, KINDS, by_kind, family
from transformer_core.tasks import TASK_NAMES, get_task

TEXT = TransformerConfig(vocab_size=11, max_len=8, d_model=16, n_heads=2, n_layers=1, d_ff=32)
VIT = ViTConfig(image_size=16, patch_size=8, d_model=16, n_heads=2, n_layers=1, d_ff=32, num_classes=3)


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_each_family_builds_from_its_config_and_returns_the_attention_it_declares(fam):
    config = VIT if fam.config_class is ViTConfig else TEXT
    model = fam.model_class(config).eval()
    if fam.kind == "vit":
        inputs = (torch.rand(2, 3, 16, 16),)
    elif fam.kind == "seq2seq":
        inputs = (torch.randint(0, 11, (2, 5)), torch.randint(0, 11, (2, 4)))
    else:
        inputs = (torch.randint(0, 11, (2, 5)),)
    _, attention = model(*inputs, return_attention=True)
    assert tuple(attention) == fam.attention
    assert family(fam.name) is fam and by_kind(fam.kind) is fam


def test_every_task_names_a_registered_family_and_the_other_names_agree():
    assert {get_task(name).family for name in TASK_NAMES} <= {f.name for f in FAMILIES}
    assert tuple(KIND_TITLES) == KINDS and set(checkpoint._MODELS.values()) == {f.model_class for f in FAMILIES}
    for kind in KINDS:
        assert type(build(BuilderSettings(kind=kind))) is by_kind(kind).model_class
    with pytest.raises(ValueError, match="family='audio' is not one of"):
        family("audio")
