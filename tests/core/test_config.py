"""Configuration validation: every bad value raises a ValueError whose message says how to fix it."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
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
        ("norm_position", "middle", "norm_position='middle' is not one of 'pre', 'post'"),
            ("norm_type", "batchnorm", "norm_type='batchnorm' is not one of 'layernorm', 'rmsnorm'"),
        ("positional", "fourier", "positional='fourier' is not one of"),
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


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("vocab_size", "32", "vocab_size must be a whole number, got '32'."),
        ("d_model", None, "d_model must be a whole number, got None."),
        ("d_model", 64.5, "d_model must be a whole number, got 64.5."),
        ("max_len", 2.5, "max_len must be a whole number, got 2.5."),
        ("d_ff", 100.5, "d_ff must be a whole number, got 100.5."),
        ("n_layers", 1.5, "n_layers must be a whole number, got 1.5."),
        ("n_heads", 4.0, "n_heads must be a whole number, got 4.0."),
        ("n_layers", True, "n_layers must be a whole number, got True."),
        ("n_decoder_layers", "2", "n_decoder_layers must be a whole number, got '2'."),
        ("pad_id", 0.0, "pad_id must be a whole number, got 0.0."),
        ("dropout", "0.1", "dropout must be a number, got '0.1'."),
        ("dropout", False, "dropout must be a number, got False."),
        ("pos_base", float("nan"), "pos_base must be a finite number, got nan."),
        ("layer_norm_eps", None, "layer_norm_eps must be a number, got None."),
        ("bias", "no", "bias must be True or False, got 'no'."),
        ("tie_weights", 1, "tie_weights must be True or False, got 1."),
    ],
)
def test_wrong_types_raise_value_errors_that_name_the_field(field, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        TransformerConfig(**{field: value})


def test_vit_sizes_must_be_whole_numbers():
    with pytest.raises(ValueError, match=re.escape("image_size must be a whole number, got 30.0.")):
        ViTConfig(image_size=30.0, patch_size=3.0)
    with pytest.raises(ValueError, match=re.escape("patch_size must be a whole number, got 3.0.")):
        ViTConfig(image_size=30, patch_size=3.0)
    with pytest.raises(ValueError, match=re.escape("dropout must be a number, got '0'.")):
        ViTConfig(dropout="0")


@pytest.mark.parametrize("cls", [TransformerConfig, ViTConfig])
def test_every_field_has_its_type_checked(cls):
    wrong = {"int": 2.5, "int | None": 2.5, "float": "1", "bool": "yes", "bool | None": "yes", "str": 3,
             "RopeScaling": "linear"}
    for field in dataclasses.fields(cls):
        with pytest.raises(ValueError, match=re.escape(field.name)):
            cls(**{field.name: wrong[field.type]})


def test_numpy_numbers_are_accepted_and_stored_as_plain_python_numbers():
    config = TransformerConfig(vocab_size=np.int64(40), d_model=np.int32(32), n_heads=np.int64(4),
                               pad_id=np.int64(0), dropout=np.float32(0.25), pos_base=500)
    assert config == TransformerConfig(vocab_size=40, d_model=32, n_heads=4, pad_id=0, dropout=0.25, pos_base=500.0)
    assert type(config.d_model) is int and type(config.pad_id) is int
    assert type(config.dropout) is float and type(config.pos_base) is float
    json.dumps(dataclasses.asdict(config))  # checkpoints store the config as JSON, which refuses numpy numbers
    vit = ViTConfig(image_size=np.int64(30), patch_size=np.int64(3))
    assert (type(vit.image_size), vit.num_patches) == (int, 100)
