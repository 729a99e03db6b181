"""Llama and Qwen2 on transformer_core equal transformers' LlamaForCausalLM and Qwen2ForCausalLM: logits, every
layer's attention, and greedy generation, in several shapes (GQA ratios 1, 3, 4, multi-query, 9 and 3 heads, tied
and untied embeddings, Llama 3's RoPE scaling)."""

from __future__ import annotations

import json

import pytest
import torch

from tests.pretrained.hf_folders import llama_folder
from transformer_core.generation import generate
from transformer_core.norms import RMSNorm
from transformer_core.positional import RopeScaling
from transformer_core.pretrained import load_pretrained
from transformer_core.pretrained.folders import inspect_folder
from transformer_core.pretrained.loader import read_spec

LOGITS_ATOL, ATTN_ATOL = 1e-4, 1e-5
LLAMA3 = {"rope_type": "llama3", "rope_theta": 500.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 16}

SHAPES = {
    "gqa1-untied": dict(heads=4, kv_heads=4, width=32),
    "gqa3-tied": dict(heads=6, kv_heads=2, width=36, tied=True),
    "gqa4-qwen2": dict(qwen2=True, heads=8, kv_heads=2, width=32, layers=3),
    "mqa-qwen2-tied": dict(qwen2=True, heads=4, kv_heads=1, width=32, tied=True),
    "9-heads-3-kv": dict(heads=9, kv_heads=3, width=36, ff=40),  # SmolLM2's head counts, an odd number of heads
    "llama3-rope": dict(heads=4, kv_heads=2, width=32, rope=LLAMA3),
}


def _oracle_ok(logits: torch.Tensor, attentions) -> None:
    assert logits.abs().sum() > 0 and torch.isfinite(logits).all()
    assert len(attentions) > 0
    for a in attentions:
        assert torch.isfinite(a).all() and a.abs().sum() > 0
        uniform = torch.tril(torch.ones_like(a[0, 0])) / torch.arange(1, a.size(-1) + 1)[:, None]
        assert (a - uniform).abs().max() > 0.05  # real patterns, not the flat attention of tiny weights


@pytest.mark.parametrize("name", list(SHAPES))
def test_matches_transformers(tmp_path, name):
    shape = SHAPES[name]
    hf = llama_folder(tmp_path, **shape)
    pre = load_pretrained(tmp_path)
    assert pre.family == ("qwen2" if shape.get("qwen2") else "llama")
    assert pre.n_params == hf.num_parameters() == inspect_folder(tmp_path).n_params
    assert isinstance(pre.model.final_norm, RMSNorm) and pre.config.kv_heads == shape["kv_heads"]
    ids = torch.randint(0, 40, (2, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf(ids, output_attentions=True)
        logits, attention = pre.model.forward_with_attention(ids)
    _oracle_ok(ref.logits, ref.attentions)
    torch.testing.assert_close(logits, ref.logits, atol=LOGITS_ATOL, rtol=0)
    assert len(attention["decoder"]) == len(ref.attentions)
    for mine, theirs in zip(attention["decoder"], ref.attentions, strict=True):
        assert mine.shape == theirs.shape == (2, shape["heads"], 20, 20)  # per query head
        torch.testing.assert_close(mine, theirs, atol=ATTN_ATOL, rtol=0)


@pytest.mark.parametrize("name", ["gqa3-tied", "gqa4-qwen2", "llama3-rope"])
def test_greedy_generation_equals_transformers(tmp_path, name):
    hf = llama_folder(tmp_path, **SHAPES[name])
    model = load_pretrained(tmp_path).model
    prompt = torch.randint(0, 40, (1, 5), generator=torch.Generator().manual_seed(3))
    n = 32 - 5  # up to the model's last position
    theirs = hf.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=n, min_new_tokens=n,
                         do_sample=False, eos_token_id=None, pad_token_id=0)[0, 5:].tolist()
    assert len(theirs) == n and len(set(theirs)) > 2
    assert [step.token_id for step in generate(model, prompt, n)] == theirs


def test_the_tokenizer_comes_with_the_model(tmp_path):
    llama_folder(tmp_path)
    pre = load_pretrained(tmp_path)
    ids = pre.tokenizer.encode("the cat sat").ids
    assert len(ids) > 0 and max(ids) < pre.config.vocab_size and pre.pooling is None


def _config(tmp_path, **changes) -> dict:
    llama_folder(tmp_path)
    raw = json.loads((tmp_path / "config.json").read_text())
    return raw | changes


def test_older_config_files_with_rope_theta_and_rope_scaling_read_the_same(tmp_path):
    new = _config(tmp_path, rope_parameters=LLAMA3)
    old = {k: v for k, v in new.items() if k != "rope_parameters"}
    old |= {"rope_theta": 500.0, "rope_scaling": {k: v for k, v in LLAMA3.items() if k != "rope_theta"}}
    assert read_spec(old).config == read_spec(new).config
    c = read_spec(old).config
    assert (c.pos_base, c.rope_scaling.kind, c.rope_scaling.factor, c.rope_scaling.original_max_len) == (
        500.0, "llama3", 8.0, 16)
    plain = {k: v for k, v in new.items() if k != "rope_parameters"} | {"rope_theta": 100000.0, "rope_scaling": None}
    assert read_spec(plain).config.pos_base == 100000.0 and read_spec(plain).config.rope_scaling.kind == "none"
    legacy_type = plain | {"rope_scaling": {"type": "linear", "factor": 2.0}}
    assert read_spec(legacy_type).config.rope_scaling == RopeScaling("linear", factor=2.0)


@pytest.mark.parametrize("changes, message", [
    (dict(head_dim=16), "head_dim=16 differs"),
    (dict(hidden_act="gelu"), "hidden_act='gelu'"),
    (dict(rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}), "'yarn' is not supported"),
    (dict(use_sliding_window=True), "sliding-window"),
    (dict(rope_interleaved=True), "rope_interleaved"),
    (dict(num_key_value_heads=3), "n_kv_heads=3 must divide n_heads=4"),
    (dict(hidden_size=30, num_attention_heads=6, head_dim=None), "head size must be even"),  # RoPE rotates pairs
])
def test_variants_it_cannot_build_are_refused_clearly(tmp_path, changes, message):
    with pytest.raises(ValueError, match=message):
        read_spec(_config(tmp_path, **changes))


# The published config.json files, as transformers 4.x wrote them (rope_theta at the top level).
SMOLLM2_135M = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 0,
    "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 576, "initializer_range": 0.041666666666666664,
    "intermediate_size": 1536, "is_llama_config": True, "max_position_embeddings": 8192, "model_type": "llama",
    "num_attention_heads": 9, "num_hidden_layers": 30, "num_key_value_heads": 3, "pretraining_tp": 1,
    "rms_norm_eps": 1e-05, "rope_interleaved": False, "rope_scaling": None, "rope_theta": 100000,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True,
    "vocab_size": 49152,
}
QWEN25_05B = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
    "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1", "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
}


@pytest.mark.parametrize("raw, family, n_params, kv_heads", [
    (SMOLLM2_135M, "llama", 134_515_008, 3),
    (QWEN25_05B, "qwen2", 494_032_768, 2),
])
def test_the_published_configs_read_with_their_real_sizes(raw, family, n_params, kv_heads):
    spec = read_spec(raw)
    assert (spec.family, spec.n_params, spec.config.kv_heads) == (family, n_params, kv_heads)
    assert spec.config.qkv_bias == (family == "qwen2") and spec.config.tie_weights
    assert spec.config.pos_base == raw["rope_theta"] and spec.config.rope_scaling.kind == "none"
