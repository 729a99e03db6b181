"""Checkpoints: safetensors round trips, and refusal of pickles, damaged files and mismatched weights."""

import dataclasses
import io
import json
import pickle
import re
import struct

import pytest
import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from transformer_core.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from transformer_core.config import TransformerConfig, ViTConfig
from transformer_core.models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from transformer_core.vit import VisionTransformer

SMALL = TransformerConfig(vocab_size=11, max_len=10, d_model=16, n_heads=2, n_layers=1, d_ff=32, pad_id=0)
PICKLE_LOADED = []


class Booby:
    """Unpickling this records that it happened (a real attack would run any code here)."""

    def __reduce__(self):
        return (PICKLE_LOADED.append, ("unpickled!",))


def _same_state(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("model", [
    Seq2SeqTransformer(SMALL),
    CausalLM(dataclasses.replace(SMALL, tie_weights=True, pad_id=None)),
    SequenceRegressor(SMALL, num_outputs=2, pool="cls"),
    VisionTransformer(ViTConfig(image_size=16, patch_size=8, num_classes=3, d_model=16, n_heads=2, n_layers=1,
                                d_ff=32)),
], ids=["seq2seq", "causal-tied", "regressor-cls", "vit"])
def test_round_trip_restores_weights_and_config(model):
    data = save_checkpoint(model, model.config, task_name="demo", extra={"step": 12, "vocab": "abc✓"})
    loaded = load_checkpoint(data, expected_task="demo")
    assert type(loaded.model) is type(model) and loaded.config == model.config
    assert loaded.task_name == "demo" and loaded.extra == {"step": 12, "vocab": "abc✓"}
    assert _same_state(loaded.model, model) and not loaded.model.training
    if isinstance(model, CausalLM):  # tying survives the round trip
        assert loaded.model.lm_head.weight is loaded.model.embed.tokens.weight
    if isinstance(model, SequenceRegressor):
        assert loaded.model.pool == "cls" and loaded.model.head.out_features == 2


def test_other_task_is_refused():
    data = save_checkpoint(CausalLM(SMALL), SMALL, task_name="char_lm")
    with pytest.raises(CheckpointError, match="'char_lm' task, not 'reverse'"):
        load_checkpoint(data, expected_task="reverse")


def test_pickles_are_refused_without_being_unpickled():
    model = Seq2SeqTransformer(SMALL)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)  # the usual .pt file: a zip of pickles
    old_style = pickle.dumps(Booby(), protocol=2)
    for data in (buffer.getvalue(), old_style, pickle.dumps(Booby(), protocol=5)):
        with pytest.raises(CheckpointError, match="pickle"):
            load_checkpoint(data)
    assert PICKLE_LOADED == []


@pytest.mark.parametrize("data, match", [
    (b"", "too short"),
    (b"\x00" * 7, "too short"),
    (b"\xff" * 64, "not a safetensors"),
    (b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}", "not readable"),
])
def test_damaged_bytes_are_refused(data, match):
    with pytest.raises(CheckpointError, match=match):
        load_checkpoint(data)


def test_truncated_checkpoint_is_refused():
    data = save_checkpoint(CausalLM(SMALL), SMALL, task_name="char_lm")
    with pytest.raises(CheckpointError):
        load_checkpoint(data[: len(data) // 2])


def test_safetensors_from_elsewhere_are_refused():
    data = save_tensors({"weight": torch.zeros(2, 2)})
    with pytest.raises(CheckpointError, match="not saved by Transformer Explorer"):
        load_checkpoint(data)


def _retensor(data: bytes, change) -> bytes:
    """Rewrite a checkpoint's tensors with ``change`` while keeping its description."""
    (size,) = struct.unpack("<Q", data[:8])
    metadata = json.loads(data[8 : 8 + size])["__metadata__"]
    tensors = load_tensors(data)
    change(tensors)
    return save_tensors(tensors, metadata=metadata)


def test_mismatched_shapes_and_keys_are_refused():
    data = save_checkpoint(CausalLM(SMALL), SMALL, task_name="char_lm")

    def wrong_shape(t):
        t["lm_head.weight"] = torch.zeros(5, 16)

    def missing(t):
        del t["final_norm.weight"]

    def extra(t):
        t["surprise.weight"] = torch.zeros(1)

    for change, match in ((wrong_shape, r"wrong shapes: lm_head.weight \(5, 16\) \(expected \(11, 16\)\)"),
                          (missing, "missing weights: final_norm.weight"),
                          (extra, "unexpected weights: surprise.weight")):
        with pytest.raises(CheckpointError, match=match):
            load_checkpoint(_retensor(data, change))


def test_invalid_config_in_a_checkpoint_is_refused():
    data = save_checkpoint(CausalLM(SMALL), SMALL, task_name="char_lm")
    bad = data.replace(b'\\"n_heads\\": 2', b'\\"n_heads\\": 3')
    assert bad != data
    with pytest.raises(CheckpointError, match="configuration is invalid"):
        load_checkpoint(bad)
    not_whole = data.replace(b'\\"d_ff\\": 32', b'\\"d_ff\\":3e1')  # same length, so the header size holds
    assert not_whole != data
    with pytest.raises(CheckpointError, match=re.escape("d_ff must be a whole number, got 30.0")):
        load_checkpoint(not_whole)
