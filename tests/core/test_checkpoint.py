"""Checkpoints: safetensors round trips, and refusal of pickles, damaged files and mismatched weights."""

import dataclasses
import io
import json
import pickle
import re
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from tests.safetensors_header import read_metadata, rewrite_metadata
from transformer_core import checkpoint as ckpt
from transformer_core.checkpoint import (
    CheckpointError,
    WeightEntry,
    load_checkpoint,
    read_checkpoint_info,
    save_checkpoint,
)
from transformer_core.config import TransformerConfig, ViTConfig
from transformer_core.models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from transformer_core.positional import RopeScaling
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
    CausalLM(dataclasses.replace(SMALL, pad_id=None, tie_weights=True, norm_type="rmsnorm", feed_forward="swiglu",
                                 positional="rope", n_kv_heads=1, bias=False, qkv_bias=True,
                                 rope_scaling=RopeScaling("linear", factor=2.0))),
    SequenceRegressor(SMALL, num_outputs=2, pool="cls"),
    VisionTransformer(ViTConfig(image_size=16, patch_size=8, num_classes=3, d_model=16, n_heads=2, n_layers=1,
                                d_ff=32)),
], ids=["seq2seq", "causal-tied", "llama-block", "regressor-cls", "vit"])
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
    metadata = read_metadata(data)
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


def test_info_is_read_from_the_header_alone():
    model = SequenceRegressor(SMALL, num_outputs=2, pool="cls")
    data = save_checkpoint(model, SMALL, task_name="protein", extra={"step": 3})
    (size,) = struct.unpack("<Q", data[:8])
    info = read_checkpoint_info(data[: 8 + size])  # the weights are not even needed
    assert (info.model_class, info.config, info.task_name, info.extra) == ("SequenceRegressor", SMALL, "protein",
                                                                           {"step": 3})
    assert info.model_kwargs == {"num_outputs": 2, "pool": "cls"}
    state = model.state_dict()
    assert info.weights == {k: WeightEntry("F32", tuple(v.shape)) for k, v in state.items()}


def test_other_dtypes_are_refused_by_name():
    data = save_checkpoint(CausalLM(SMALL), SMALL, task_name="char_lm")

    def half(t):
        t["final_norm.weight"] = t["final_norm.weight"].half()

    with pytest.raises(CheckpointError, match=r"final_norm.weight \(F16, expected F32\).*float32"):
        load_checkpoint(_retensor(data, half))


def _forbid_real_models(monkeypatch) -> list[str]:
    """Make every model class of the checkpoint module fail if built anywhere but on the meta device."""
    built = []
    for name, cls in list(ckpt._MODELS.items()):
        def guarded(config, *args, _cls=cls, **kwargs):
            device = torch.get_default_device().type
            built.append(device)
            if device != "meta":
                raise AssertionError(f"a {_cls.__name__} was built for real")
            return _cls(config, *args, **kwargs)
        monkeypatch.setitem(ckpt._MODELS, name, guarded)
    return built


@pytest.mark.parametrize("change", [
    {"d_model": 4096, "n_heads": 32, "n_layers": 48, "d_ff": 16384},
    {"vocab_size": 10_000_000},
    {"max_len": 10_000_000, "positional": "learned"},
], ids=["4096x48", "10M-vocab", "10M-positions"])
def test_a_forged_huge_config_is_refused_without_building_it(monkeypatch, change):
    data = rewrite_metadata(save_checkpoint(CausalLM(SMALL), SMALL, task_name="char_lm"),
                          config=json.dumps({**dataclasses.asdict(SMALL), **change}))
    built = _forbid_real_models(monkeypatch)
    before = _peak_rss_mib()
    info = read_checkpoint_info(data)
    assert all(getattr(info.config, k) == v for k, v in change.items())
    with pytest.raises(CheckpointError, match="do not fit the model described"):
        load_checkpoint(data)
    assert set(built) <= {"meta"}  # judged from shapes only: a real model was never built
    assert _peak_rss_mib() - before < 100  # billions of weights were never allocated


def test_a_forged_layer_count_is_refused_before_even_the_shapes_are_built(monkeypatch):
    data = rewrite_metadata(save_checkpoint(CausalLM(SMALL), SMALL, task_name="char_lm"),
                          config=json.dumps({**dataclasses.asdict(SMALL), "n_layers": 10**9}))
    built = _forbid_real_models(monkeypatch)
    with pytest.raises(CheckpointError, match="describes 1,000,000,000 blocks"):
        load_checkpoint(data)
    assert built == []


def test_a_header_with_too_many_weights_is_refused():
    many = {f"w{i}": torch.zeros(1) for i in range(ckpt.MAX_WEIGHTS + 1)}
    metadata = {"format": ckpt.FORMAT, "model_class": "CausalLM", "config_class": "TransformerConfig",
                "config": json.dumps(dataclasses.asdict(SMALL)), "task": "char_lm"}
    with pytest.raises(CheckpointError, match="at most 4,096"):
        read_checkpoint_info(save_tensors(many, metadata=metadata))


def _peak_rss_mib() -> float:
    """This process's peak resident memory so far (VmHWM), in MiB; 0 where /proc is missing."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return 0.0
    return next((int(line.split()[1]) / 1024 for line in lines if line.startswith("VmHWM:")), 0.0)


@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
def test_a_forged_max_len_cannot_make_computed_tables_outgrow_the_file(monkeypatch, positional):
    config = dataclasses.replace(SMALL, positional=positional)
    data = rewrite_metadata(save_checkpoint(CausalLM(config), config, task_name="char_lm"),
                            config=json.dumps({**dataclasses.asdict(config), "max_len": 1_000_000}))
    assert len(data) < 20_000  # a small file: no position table is stored for these encodings
    built = _forbid_real_models(monkeypatch)
    before = _peak_rss_mib()
    with pytest.raises(CheckpointError, match=r"compute \d+ MB of position tables \(max_len=1,000,000\)"):
        load_checkpoint(data)
    assert set(built) <= {"meta"}
    assert _peak_rss_mib() - before < 100


def test_long_but_honest_position_tables_still_load():
    config = dataclasses.replace(SMALL, max_len=4096, positional="sinusoidal")  # 256 KB table, 20 KB file
    loaded = load_checkpoint(save_checkpoint(Seq2SeqTransformer(config), config, task_name="reverse"))
    assert loaded.config.max_len == 4096


def test_the_quick_check_counts_the_decoder_blocks_of_an_encoder_decoder(monkeypatch):
    data = save_checkpoint(Seq2SeqTransformer(SMALL), SMALL, task_name="reverse")
    n_weights = len(read_checkpoint_info(data).weights)
    layers = n_weights // ckpt.MIN_WEIGHTS_PER_BLOCK  # encoder blocks alone would pass; with the decoder's not
    forged = rewrite_metadata(data, config=json.dumps({**dataclasses.asdict(SMALL), "n_layers": layers}))
    built = _forbid_real_models(monkeypatch)
    with pytest.raises(CheckpointError, match=f"describes {2 * layers:,} blocks"):
        load_checkpoint(forged)
    assert built == []  # refused before even the shapes were built


# A configuration as checkpoints saved it before the norm fields were renamed and RoPE's scaling became one value.
_OLD_LAYOUT = {
    "vocab_size": 20, "max_len": 16, "d_model": 16, "n_heads": 4, "n_layers": 2, "n_decoder_layers": None,
    "d_ff": 32, "dropout": 0.0, "norm": "post", "positional": "rope", "activation": "relu", "bias": False,
    "pad_id": None, "tie_weights": True, "pos_base": 10000.0, "layer_norm_eps": 1e-5, "embed_scale": False,
    "norm_kind": "rmsnorm", "feed_forward": "swiglu", "n_kv_heads": 2, "qkv_bias": True,
    "rope_scaling": "llama3", "rope_factor": 8.0, "rope_low_freq_factor": 1.0, "rope_high_freq_factor": 4.0,
    "rope_original_max_len": 8,
}


def test_a_checkpoint_written_with_the_old_field_names_loads():
    config = TransformerConfig(
        vocab_size=20, max_len=16, d_model=16, n_heads=4, n_layers=2, d_ff=32, norm_position="post",
        positional="rope", bias=False, tie_weights=True, embed_scale=False, norm_type="rmsnorm",
        feed_forward="swiglu", n_kv_heads=2, qkv_bias=True,
        rope_scaling=RopeScaling("llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_len=8),
    )
    torch.manual_seed(3)
    model = CausalLM(config).eval()
    data = save_checkpoint(model, config, task_name="demo")
    # The header as the app wrote it before: the same weights, the config under its old names.
    old = rewrite_metadata(data, config=json.dumps(_OLD_LAYOUT))
    assert "norm_kind" in read_metadata(old)["config"] and "norm_position" not in read_metadata(old)["config"]
    loaded = load_checkpoint(old, expected_task="demo")
    assert loaded.config == config
    ids = torch.tensor([[1, 5, 7, 3, 2]])
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(ids), model(ids))


def test_old_and_new_names_together_are_refused():
    with pytest.raises(ValueError, match="both 'norm'"):
        TransformerConfig.from_dict({"norm": "pre", "norm_position": "post"})
    with pytest.raises(TypeError, match="norm_kind is now norm_type"):
        TransformerConfig(norm_kind="rmsnorm")
    saved = dataclasses.asdict(TransformerConfig(norm_type="rmsnorm", positional="rope",
                                                 rope_scaling=RopeScaling("linear", factor=2.0)))
    assert TransformerConfig.from_dict(json.loads(json.dumps(saved))).rope_scaling == RopeScaling("linear", 2.0)
