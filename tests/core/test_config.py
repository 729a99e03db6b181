"""Configuration validation: every bad value raises a ValueError whose message says how to fix it."""

from __future__ import annotations

import dataclasses
import re

import pytest

from transformer_core import TransformerConfig, ViTConfig, divisors


def test_defaults_are_valid_and_derived_sizes_follow():
    config = TransformerConfig()
    assert config.head_dim == config.d_model // config.n_heads
    assert config.decoder_layers == config.n_layers
    assert TransformerConfig(n_layers=2, n_decoder_layers=3).decoder_layers == 3
    vit = ViTConfig(image_size=32, patch_size=8)
    assert (vit.grid_size, vit.num_patches, vit.head_dim) == (4, 16, vit.d_model // vit.n_heads)


def test_divisors():
    assert divisors(1) == [1]
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(64) == [1, 2, 4, 8, 16, 32, 64]


def test_heads_must_divide_d_model_and_message_lists_valid_counts():
    expected = (
        "d_model=100 is not divisible by n_heads=8; valid head counts for 100 are 1, 2, 4, 5, 10, 20, 25, 50, 100"
    )
    with pytest.raises(ValueError, match=re.escape(expected)):
        TransformerConfig(d_model=100, n_heads=8)
    with pytest.raises(ValueError, match=re.escape("valid head counts for 48 are 1, 2, 3, 4, 6, 8, 12, 16, 24, 48")):
        ViTConfig(d_model=48, n_heads=5)


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("norm", "middle", "norm='middle' is not one of 'pre', 'post'"),
        ("positional", "alibi", "positional='alibi' is not one of"),
        ("activation", "tanh", "activation='tanh' is not one of 'relu', 'gelu'"),
        ("dropout", 1.0, "dropout=1.0 must be at least 0 and below 1"),
        ("dropout", -0.1, "dropout=-0.1"),
        ("vocab_size", 0, "vocab_size=0 must be a positive number"),
        ("d_ff", -4, "d_ff=-4 must be a positive number"),
        ("n_decoder_layers", 0, "n_decoder_layers=0 must be a positive number"),
        ("pad_id", 32, "pad_id=32 must be a token id below vocab_size=32"),
    ],
)
def test_invalid_text_config_values(field, value, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        TransformerConfig(**{field: value})


def test_rope_needs_an_even_head_size():
    with pytest.raises(ValueError, match=re.escape("d_model/n_heads = 12/4 = 3")):
        TransformerConfig(d_model=12, n_heads=4, positional="rope")
    assert TransformerConfig(d_model=12, n_heads=3, positional="rope").head_dim == 4
    assert TransformerConfig(d_model=12, n_heads=4, positional="sinusoidal").head_dim == 3


def test_vit_patch_size_must_divide_image_size():
    message = "patch_size=5 does not divide image_size=32; valid patch sizes for 32 are 1, 2, 4, 8, 16, 32"
    with pytest.raises(ValueError, match=re.escape(message)):
        ViTConfig(image_size=32, patch_size=5)
    with pytest.raises(ValueError, match="in_channels=0"):
        ViTConfig(in_channels=0)
    with pytest.raises(ValueError, match="dropout"):
        ViTConfig(dropout=1.5)


def test_configs_are_frozen_and_replace_revalidates():
    config = TransformerConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 128
    assert dataclasses.replace(config, d_model=128).d_model == 128
    with pytest.raises(ValueError, match="not divisible"):
        dataclasses.replace(config, n_heads=7)
    assert dataclasses.asdict(ViTConfig())["patch_size"] == 8
