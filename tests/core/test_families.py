"""The registry of model families against the models themselves and every place that names them."""

from __future__ import annotations

import pytest
import torch

from explorer.lab.builder import KIND_TITLES, BuilderSettings, build
from transformer_core import checkpoint
from transformer_core.config import TransformerConfig, ViTConfig
from transformer_core.families import FAMILIES, KINDS, by_kind, family, of_model
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
    _, attention = model.forward_with_attention(*inputs)
    assert tuple(attention) == fam.attention
    assert tuple(fam.attention_modules(model)) == fam.attention
    assert family(fam.name) is fam and (not fam.trainable or by_kind(fam.kind) is fam)


def test_every_task_names_a_registered_family_and_the_other_names_agree():
    assert {get_task(name).family for name in TASK_NAMES} <= {f.name for f in FAMILIES}
    assert tuple(KIND_TITLES) == KINDS and set(checkpoint._MODELS.values()) == {
        f.model_class for f in FAMILIES if f.trainable}
    for kind in KINDS:
        assert type(build(BuilderSettings(kind=kind))) is by_kind(kind).model_class
    with pytest.raises(ValueError, match="family='audio' is not one of"):
        family("audio")


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_each_family_names_its_attention_and_says_how_its_text_stack_is_taken_apart(fam):
    assert len(fam.attention_titles) == len(fam.attention) and all(fam.attention_titles)
    assert fam.attention_title(fam.attention[0]) == fam.attention_titles[0]
    model = fam.model_class(VIT if fam.reads_images else TEXT)
    assert of_model(model) is fam
    if fam.reads_images:  # pictures, not token ids: nothing for the Attention Lab
        assert fam.self_attention is None and fam.config_class is ViTConfig
        return
    stack = fam.self_attention(model, torch.randint(0, 11, (1, 5)))
    assert stack.x.shape == (1, 5 + len(stack.labels), TEXT.d_model) and fam.mask_title
    assert stack.is_causal == (fam.attention == ("decoder",))  # decoder-only models are causal, the others not


def test_a_model_of_no_family_is_refused():
    with pytest.raises(ValueError, match="Linear is not the model of a registered family"):
        of_model(torch.nn.Linear(2, 2))
