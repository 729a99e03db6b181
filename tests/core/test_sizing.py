"""Parameter counts, cost estimates and famous-model presets, checked against independent counts."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from transformer_core import (
    CausalLM,
    Seq2SeqTransformer,
    SequenceRegressor,
    TransformerConfig,
    VisionTransformer,
    ViTConfig,
)
from transformer_core.presets import bert_with_pooler
from transformer_core.sizing import (
    PRESETS,
    build_preset,
    count_parameters,
    estimate_preset,
    estimate_training_step,
    kv_cache_bytes_per_token,
    measure_step_time,
    parameter_breakdown,
    preset_info,
    preset_parameter_count,
)

SMALL = TransformerConfig(vocab_size=50, max_len=16, d_model=32, n_heads=4, n_layers=2, d_ff=64)
SMALL_VIT = ViTConfig(image_size=16, patch_size=4, d_model=32, n_heads=4, n_layers=2, d_ff=64, num_classes=5)
BATCH = 2

PUBLISHED = {
    "BERT-base": 109_482_240,
    "GPT-2 small": 124_439_808,
    "ViT-B/16": 86_567_656,
    "Transformer base (2017)": 63_082_496,  # the paper reports ~65M
    "SmolLM2-135M": 134_515_008,  # HuggingFaceTB/SmolLM2-135M's safetensors hold this many numbers
}
LLAMA_SMALL = replace(SMALL, n_heads=4, n_kv_heads=2, norm_type="rmsnorm", feed_forward="swiglu", positional="rope",
                      bias=False, embed_scale=False)


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_preset_counts_match_the_published_architectures(name):
    model = build_preset(name)
    assert all(p.is_meta for p in model.parameters())
    assert preset_parameter_count(name) == PUBLISHED[name]
    breakdown = parameter_breakdown(model)
    assert sum(breakdown.values()) == PUBLISHED[name]
    info = preset_info(name)
    assert info["params"] == PUBLISHED[name] and info["name"] == name
    assert {"layers", "d_model", "heads", "d_ff", "vocab", "seq_len", "year", "paper"} <= set(info)


def test_bert_base_count_by_hand_and_preset_summaries():
    c, f, v = 768, 3072, 30522
    embeddings = (v + 512 + 2) * c + 2 * c  # tokens, positions, token types, LayerNorm
    block = 4 * (c * c + c) + (c * f + f) + (f * c + c) + 2 * 2 * c
    assert embeddings + 12 * block + (c * c + c) == PUBLISHED["BERT-base"]
    assert set(PRESETS) == set(PUBLISHED)
    assert preset_info("ViT-B/16")["seq_len"] == 197 and preset_info("ViT-B/16")["vocab"] is None
    assert preset_info("Transformer base (2017)")["decoder_layers"] == 6
    assert parameter_breakdown(build_preset("GPT-2 small"))["head"] == 0  # tied to the token embedding
    with pytest.raises(ValueError, match="Unknown preset 'GPT-5'"):
        build_preset("GPT-5")


def test_smollm2_count_by_hand_and_its_small_cache():
    c, f, v, kv = 576, 1536, 49152, 3 * 64
    block = 2 * c * c + 2 * c * kv + 3 * c * f + 2 * c  # Q and O, the narrower K and V, SwiGLU, two RMSNorms
    assert v * c + 30 * block + c == PUBLISHED["SmolLM2-135M"]  # tied head: the embedding counts once
    info = preset_info("SmolLM2-135M")
    assert info["kv_heads"] == 3 and info["heads"] == 9
    assert info["kv_cache_per_token"] == kv_cache_bytes_per_token(PRESETS["SmolLM2-135M"].config) == 2 * 30 * kv * 4
    gpt2 = preset_info("GPT-2 small")["kv_cache_per_token"]
    assert gpt2 == 2 * 12 * 768 * 4 and info["kv_cache_per_token"] < gpt2  # 3 K/V heads: a smaller cache
    assert preset_info("BERT-base")["kv_cache_per_token"] is None
    breakdown = parameter_breakdown(build_preset("SmolLM2-135M"))
    assert breakdown["norms"] == 61 * c and breakdown["feed_forward"] == 30 * 3 * c * f and breakdown["head"] == 0


def test_llama_flops_match_torch_flop_counter():
    model = CausalLM(LLAMA_SMALL)
    estimate = estimate_training_step(LLAMA_SMALL, kind="decoder", batch_size=BATCH)
    with FlopCounterMode(display=False) as forward:
        _forward(model, "decoder")
    assert estimate.flops_per_token_forward * estimate.tokens_per_step == forward.get_total_flops()
    plain = estimate_training_step(replace(SMALL, positional="rope"), kind="decoder", batch_size=BATCH)
    c, f, kv, t = 32, 64, 16, SMALL.max_len
    # two fewer K/V widths of C·(C - C_kv) multiply-adds, one more C·F matrix, per token and layer
    difference = 2 * t * (2 * c * (kv - c) + c * f) * SMALL.n_layers
    assert (estimate.flops_per_token_forward - plain.flops_per_token_forward) * t == difference


def test_tiny_bert_runs_and_learns_from_every_parameter():
    torch.manual_seed(0)
    config = replace(SMALL, norm_position="post", activation="gelu", positional="learned", pad_id=0)
    bert = bert_with_pooler(config)
    tokens = torch.randint(1, 50, (BATCH, 8))
    tokens[1, 5:] = 0
    segments = (torch.arange(8) >= 4).long().expand(BATCH, 8)
    sequence = bert(tokens, token_type_ids=segments)
    pooled = bert.pooled(tokens, token_type_ids=segments)
    assert sequence.shape == (BATCH, 8, 32) and pooled.shape == (BATCH, 32)
    assert pooled.abs().max() < 1
    (sequence.square().mean() + pooled.sum()).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in bert.parameters())
    with pytest.raises(ValueError, match="n_decoder_layers"):
        bert_with_pooler(replace(config, n_decoder_layers=2))


def test_breakdown_of_a_tiny_model_by_hand():
    config = TransformerConfig(vocab_size=10, max_len=5, d_model=8, n_heads=2, n_layers=1, d_ff=16,
                               positional="learned")
    model = CausalLM(config)
    expected = {
        "embeddings": 10 * 8 + 5 * 8,
        "attention": 4 * (8 * 8 + 8),
        "feed_forward": (8 * 16 + 16) + (16 * 8 + 8),
        "norms": 3 * 2 * 8,  # two in the block, one final (pre-norm)
        "head": 10 * 8,
    }
    assert parameter_breakdown(model) == expected
    assert count_parameters(model) == sum(expected.values())
    tied = CausalLM(replace(config, tie_weights=True))
    assert count_parameters(tied) == count_parameters(model) - 10 * 8
    assert parameter_breakdown(tied)["head"] == 0
    model.embed.tokens.weight.requires_grad_(False)
    assert count_parameters(model, trainable_only=True) == count_parameters(model) - 10 * 8


@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
def test_breakdown_sums_to_the_total_for_every_model(positional):
    config = replace(SMALL, positional=positional)
    models = [Seq2SeqTransformer(config), Seq2SeqTransformer(replace(config, tie_weights=True)),
              SequenceRegressor(config, pool="cls"), VisionTransformer(SMALL_VIT)]
    for model in models:
        breakdown = parameter_breakdown(model)
        assert sum(breakdown.values()) == count_parameters(model)
        assert all(value > 0 for key, value in breakdown.items() if key != "head")
    vit = parameter_breakdown(models[-1])
    assert vit["embeddings"] == (3 * 16 * 32 + 32) + 32 + 17 * 32  # patch projection, CLS, positions
    assert vit["head"] == 32 * 5 + 5


def _forward(model, kind, batch=BATCH):
    x = torch.randint(0, SMALL.vocab_size, (batch, SMALL.max_len))
    if kind == "seq2seq":
        return model.forward_with_attention(x, x)[0]
    if kind == "vit":
        return model.forward_with_attention(torch.randn(batch, 3, 16, 16))[0]
    return model.forward_with_attention(x)[0]


@pytest.mark.parametrize("kind", ["encoder", "decoder", "seq2seq", "vit"])
def test_flops_match_torch_flop_counter(kind):
    """The explicit attention path runs plain matmuls, which FlopCounterMode counts (2 per multiply-add)."""
    config = SMALL_VIT if kind == "vit" else SMALL
    model = {"encoder": SequenceRegressor, "decoder": CausalLM, "seq2seq": Seq2SeqTransformer,
             "vit": VisionTransformer}[kind](config)
    estimate = estimate_training_step(config, kind=kind, batch_size=BATCH)
    with FlopCounterMode(display=False) as forward:
        _forward(model, kind)
    assert estimate.flops_per_token_forward * estimate.tokens_per_step == forward.get_total_flops()
    with FlopCounterMode(display=False) as step:
        _forward(model, kind).square().mean().backward()
    expected = estimate.flops_per_step
    if kind == "vit":  # backward = 2x forward, except that no gradient is needed for the input pixels
        expected -= 2 * BATCH * config.num_patches * (3 * 4 * 4) * config.d_model
    assert step.get_total_flops() == expected


def _non_embedding(model) -> int:
    return count_parameters(model) - parameter_breakdown(model)["embeddings"]


@pytest.mark.parametrize("kind", ["encoder", "decoder", "seq2seq", "vit"])
def test_flops_agree_with_the_6n_rule_for_large_models(kind):
    """Kaplan et al. (2020): a step costs about 6 * N * tokens once C is large next to T and the vocabulary."""
    if kind == "vit":
        config = ViTConfig(image_size=32, patch_size=8, d_model=1024, n_heads=16, n_layers=4, d_ff=4096)
    else:
        config = TransformerConfig(vocab_size=32, max_len=32, d_model=1024, n_heads=16, n_layers=4, d_ff=4096,
                                   tie_weights=kind != "encoder")
    estimate = estimate_training_step(config, kind=kind, batch_size=8, seq_len=32 if kind != "vit" else None)
    model = build_model(config, kind)
    tokens = estimate.tokens_per_step / 2 if kind == "seq2seq" else estimate.tokens_per_step
    # Each seq2seq token passes through one of the two stacks, each holding about half the parameters.
    assert estimate.flops_per_step == pytest.approx(6 * _non_embedding(model) * tokens, rel=0.03)
    assert estimate.params == count_parameters(model)


def build_model(config, kind):
    with torch.device("meta"):
        return {"encoder": SequenceRegressor, "decoder": CausalLM, "seq2seq": Seq2SeqTransformer,
                "vit": VisionTransformer}[kind](config)


def test_gpt2_small_step_is_within_15_percent_of_6n():
    # GPT-2's token embedding is also its output projection, so here N counts it: 124M parameters. The
    # 1024 x 1024 attention matrices of all 12 layers add another 14% on top of 6N.
    estimate = estimate_preset("GPT-2 small", batch_size=1)
    assert 1.10 < estimate.flops_per_step / (6 * estimate.params * 1024) < 1.15
    assert estimate.params == PUBLISHED["GPT-2 small"] and estimate.tokens_per_step == 1024


def test_a_preset_built_once_serves_its_estimate_and_its_count_is_worked_out_once(monkeypatch):
    """The Model Builder builds each famous model once per batch size (its breakdown and its estimate share the
    module) and counts its parameters once per process: GPT-2 XL's 48 blocks take a while on the meta device."""
    from transformer_core import sizing

    model = build_preset("BERT-base")
    expected = estimate_preset("BERT-base", batch_size=4)
    preset_parameter_count("BERT-base")

    def refused(name: str):
        raise AssertionError(f"{name} built again")

    monkeypatch.setattr(sizing, "build_preset", refused)
    assert estimate_preset("BERT-base", batch_size=4, model=model) == expected
    assert preset_parameter_count("BERT-base") == PUBLISHED["BERT-base"]


def test_memory_parts_add_up_and_activations_grow_with_the_batch():
    small = estimate_training_step(SMALL, kind="decoder", batch_size=4, seq_len=8)
    large = estimate_training_step(SMALL, kind="decoder", batch_size=8, seq_len=8)
    assert small.weights_bytes == 4 * small.params == small.grads_bytes
    assert small.optimizer_bytes == 2 * small.weights_bytes
    for e in (small, large):
        parts = (e.weights_bytes, e.grads_bytes, e.optimizer_bytes, e.activations_bytes)
        assert all(part > 0 for part in parts) and e.total_bytes == sum(parts)
    assert large.activations_bytes == 2 * small.activations_bytes
    assert large.weights_bytes == small.weights_bytes and large.total_bytes > small.total_bytes
    longer = estimate_training_step(SMALL, kind="decoder", batch_size=4, seq_len=16)
    assert longer.activations_bytes > 2 * small.activations_bytes * 0.99  # attention grows with T squared
    s2s = estimate_training_step(SMALL, kind="seq2seq", batch_size=4, seq_len=8, tgt_len=4)
    assert s2s.tokens_per_step == 4 * 12


def _saved_values(model, run) -> int:
    """Numbers autograd keeps for the backward pass (parameters excluded), counted once per storage."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if t.is_floating_point() and ptr not in params:
            saved[ptr] = t.untyped_storage().nbytes() // t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return sum(saved.values())


@pytest.mark.parametrize("kind", ["encoder", "decoder", "seq2seq", "vit"])
def test_activation_estimate_is_close_to_what_autograd_keeps(kind):
    config = SMALL_VIT if kind == "vit" else SMALL
    model = {"encoder": SequenceRegressor, "decoder": CausalLM, "seq2seq": Seq2SeqTransformer,
             "vit": VisionTransformer}[kind](config)

    def run(batch: int) -> None:
        out = _forward(model, kind, batch)
        if kind in ("decoder", "seq2seq"):
            F.cross_entropy(out.flatten(0, 1), out.argmax(-1).flatten())

    # Two batch sizes: the difference is what one more sample keeps (copies of weights cancel out).
    per_sample = (_saved_values(model, lambda: run(4)) - _saved_values(model, lambda: run(2))) / 2
    estimate = estimate_training_step(config, kind=kind, batch_size=1).activations_bytes / 4
    assert 0.9 < per_sample / estimate < 1.1


def test_estimate_errors():
    with pytest.raises(ValueError, match="kind='rnn'"):
        estimate_training_step(SMALL, kind="rnn", batch_size=1)
    with pytest.raises(ValueError, match="needs a ViTConfig"):
        estimate_training_step(SMALL, kind="vit", batch_size=1)
    with pytest.raises(ValueError, match="longer than max_len=16"):
        estimate_training_step(SMALL, kind="decoder", batch_size=1, seq_len=17)
    with pytest.raises(ValueError, match="must be positive"):
        estimate_training_step(SMALL, kind="encoder", batch_size=0)


def _lm_loss(model, batch):
    return F.cross_entropy(model(batch).flatten(0, 1), batch.flatten())


def test_measure_step_time_leaves_the_model_untouched():
    torch.manual_seed(0)
    model = CausalLM(SMALL)
    before = [p.detach().clone() for p in model.parameters()]
    batch = torch.randint(0, 50, (BATCH, 8))
    seconds = measure_step_time(model, batch, _lm_loss, device="cpu", repeats=2)
    assert 0 < seconds < 5
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert measure_step_time(lambda: CausalLM(SMALL), batch, _lm_loss, device="cpu", repeats=1) > 0
    with torch.device("meta"):
        on_meta = CausalLM(SMALL)
    assert measure_step_time(on_meta, (batch,), lambda m, b: _lm_loss(m, b[0]), device="cpu", repeats=1) > 0
    with pytest.raises(ValueError, match="repeats=0"):
        measure_step_time(model, batch, _lm_loss, device="cpu", repeats=0)
