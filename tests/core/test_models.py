"""The text models and the ViT: gradients, causality, padding, decoding and the role of positions."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from transformer_core import (
    CausalLM,
    Seq2SeqTransformer,
    SequenceRegressor,
    TransformerConfig,
    VisionTransformer,
    ViTConfig,
)
from transformer_core.positional import get as positional_kind
from transformer_core.positional import kinds as positional_kinds

POSITIONALS = positional_kinds()  # every registered encoding, so a new one is tested here at once
TINY = TransformerConfig(vocab_size=11, max_len=12, d_model=16, n_heads=2, n_layers=2, d_ff=32)
B, S, T = 3, 7, 5


def _tokens(*shape: int, low: int = 1) -> torch.Tensor:
    return torch.randint(low, TINY.vocab_size, shape)


def _loss(model: torch.nn.Module) -> torch.Tensor:
    if isinstance(model, Seq2SeqTransformer):
        tgt = _tokens(B, T)
        return F.cross_entropy(model(_tokens(B, S), tgt).flatten(0, 1), tgt.flatten())
    if isinstance(model, CausalLM):
        idx = _tokens(B, S)
        return F.cross_entropy(model(idx).flatten(0, 1), idx.flatten())
    if isinstance(model, VisionTransformer):
        return F.cross_entropy(model(torch.randn(B, 3, 16, 16)), torch.tensor([0, 1, 2]))
    return model(_tokens(B, S)).square().mean()


def _models(positional: str) -> list[torch.nn.Module]:
    config = replace(TINY, positional=positional)
    return [
        Seq2SeqTransformer(config),
        Seq2SeqTransformer(replace(config, norm_position="post", tie_weights=True, n_decoder_layers=1)),
        CausalLM(config),
        CausalLM(replace(config, tie_weights=True, activation="gelu")),
        SequenceRegressor(config, pool="mean"),
        SequenceRegressor(replace(config, pad_id=0), num_outputs=2, pool="cls"),
    ]


@pytest.mark.parametrize("positional", POSITIONALS)
def test_gradients_reach_every_parameter(positional):
    torch.manual_seed(0)
    models = _models(positional)
    if positional == "learned":
        models.append(VisionTransformer(ViTConfig(image_size=16, patch_size=4, d_model=16, n_heads=2, n_layers=2,
                                                  d_ff=32, num_classes=3)))
    for model in models:
        _loss(model).backward()
        for name, p in model.named_parameters():
            assert p.grad is not None and bool(p.grad.abs().sum() > 0), f"{type(model).__name__}.{name}"


def test_seq2seq_return_attention_shapes_and_same_logits():
    torch.manual_seed(0)
    model = Seq2SeqTransformer(replace(TINY, n_decoder_layers=3)).eval()
    src, tgt = _tokens(B, S), _tokens(B, T)
    logits, attention = model.forward_with_attention(src, tgt)
    assert logits.shape == (B, T, TINY.vocab_size)
    assert set(attention) == {"encoder", "decoder", "cross"}
    assert [a.shape for a in attention["encoder"]] == [(B, 2, S, S)] * 2
    assert [a.shape for a in attention["decoder"]] == [(B, 2, T, T)] * 3
    assert [a.shape for a in attention["cross"]] == [(B, 2, T, S)] * 3
    assert all(torch.all(a.triu(diagonal=1) == 0) for a in attention["decoder"])
    torch.testing.assert_close(model(src, tgt), logits)
    memory, encoder = model.encode_with_attention(src)
    decoded, decoder = model.decode_with_attention(tgt, memory, src=src)
    assert tuple(encoder) == ("encoder",) and tuple(decoder) == ("decoder", "cross")
    torch.testing.assert_close(decoded, logits)
    assert all(torch.equal(a, b) for a, b in zip(decoder["cross"], attention["cross"], strict=True))


def _paper_positions(n: int, d: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...), written out position by position."""
    table = torch.zeros(n, d, dtype=torch.float64)
    for pos in range(n):
        for i in range(0, d, 2):
            table[pos, i] = math.sin(pos / 10000 ** (i / d))
            table[pos, i + 1] = math.cos(pos / 10000 ** (i / d))
    return table.float()


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_seq2seq_scales_token_embeddings_by_sqrt_d_model_before_adding_positions(positional):
    torch.manual_seed(0)
    model = Seq2SeqTransformer(replace(TINY, positional=positional)).eval()
    seen = {}

    def keep_input(kind: str):
        def hook(_module, args) -> None:  # returns None, so the block's input stays as it was
            seen[kind] = args[0].detach().clone()
        return hook

    model.encoder[0].register_forward_pre_hook(keep_input("encoder"))
    model.decoder[0].register_forward_pre_hook(keep_input("decoder"))
    src, tgt = _tokens(B, S), _tokens(B, T)
    model(src, tgt)
    for kind, ids, embed in (("encoder", src, model.src_embed), ("decoder", tgt, model.tgt_embed)):
        n = ids.size(1)
        positions = _paper_positions(n, TINY.d_model) if positional == "sinusoidal" else \
            embed.positions.table.detach()[:n]
        tokens = embed.tokens.weight.detach()[ids]  # (B, n, C) rows of the model's own embedding table
        torch.testing.assert_close(seen[kind], tokens * math.sqrt(TINY.d_model) + positions)
        assert not torch.allclose(seen[kind], tokens + positions, atol=1e-3)  # the scale is not a no-op


@pytest.mark.parametrize("pool", ["mean", "cls"])
def test_regressor_and_lm_return_attention(pool):
    torch.manual_seed(0)
    regressor = SequenceRegressor(TINY, num_outputs=3, pool=pool).eval()
    tokens = _tokens(B, S)
    out, attention = regressor.forward_with_attention(tokens)
    n = S + 1 if pool == "cls" else S
    assert out.shape == (B, 3) and list(attention) == ["encoder"]
    assert [a.shape for a in attention["encoder"]] == [(B, 2, n, n)] * 2
    torch.testing.assert_close(regressor(tokens), out)
    lm = CausalLM(TINY).eval()
    logits, attention = lm.forward_with_attention(tokens)
    assert list(attention) == ["decoder"] and attention["decoder"][0].shape == (B, 2, S, S)
    torch.testing.assert_close(lm(tokens), logits)


@pytest.mark.parametrize("positional", POSITIONALS)
def test_changing_a_future_token_leaves_earlier_predictions_unchanged(positional):
    torch.manual_seed(0)
    config = replace(TINY, positional=positional)
    lm, s2s = CausalLM(config).eval(), Seq2SeqTransformer(config).eval()
    idx, src = _tokens(B, S), _tokens(B, S)
    changed = idx.clone()
    changed[:, 4] = (idx[:, 4] + 1) % TINY.vocab_size
    before, after = lm(idx), lm(changed)
    torch.testing.assert_close(after[:, :4], before[:, :4])
    assert not torch.allclose(after[:, 4:], before[:, 4:])
    before, after = s2s(src, idx), s2s(src, changed)
    torch.testing.assert_close(after[:, :4], before[:, :4])
    assert not torch.allclose(after[:, 4:], before[:, 4:])


@pytest.mark.parametrize("positional", POSITIONALS)
def test_padded_tokens_do_not_change_the_outputs(positional):
    torch.manual_seed(0)
    config = replace(TINY, positional=positional, pad_id=0)
    s2s = Seq2SeqTransformer(config).eval()
    src, tgt = _tokens(B, S), _tokens(B, T)
    src_valid = torch.arange(S)[None, :] < torch.tensor([[S], [4], [2]])
    tgt_valid = torch.arange(T)[None, :] >= torch.tensor([[0], [1], [2]])  # left padding in the target
    other_src = torch.where(src_valid, src, _tokens(B, S))
    other_tgt = torch.where(tgt_valid, tgt, _tokens(B, T))
    logits = s2s(src, tgt, src_valid=src_valid, tgt_valid=tgt_valid)
    other = s2s(other_src, other_tgt, src_valid=src_valid, tgt_valid=tgt_valid)
    torch.testing.assert_close(other[tgt_valid], logits[tgt_valid])
    # With pad_id set, masks come from the tokens: trailing padding changes nothing.
    padded = torch.where(src_valid, src, 0)
    longer = torch.cat([padded, torch.zeros(B, 3, dtype=torch.long)], dim=1)
    torch.testing.assert_close(s2s(longer, tgt), s2s(padded, tgt))
    for pool in ("mean", "cls"):
        regressor = SequenceRegressor(config, pool=pool).eval()
        torch.testing.assert_close(regressor(longer), regressor(padded))
        torch.testing.assert_close(regressor(other_src, valid=src_valid), regressor(src, valid=src_valid))


def test_greedy_decode_starts_with_bos_and_agrees_with_teacher_forcing():
    torch.manual_seed(0)
    model = Seq2SeqTransformer(replace(TINY, pad_id=0)).eval()
    src = _tokens(B, S)
    ys = model.greedy_decode(src, bos_id=1, max_new_tokens=6)
    assert ys.shape == (B, 7) and ys.dtype == torch.long and torch.all(ys[:, 0] == 1)
    logits = model(src, ys[:, :-1], tgt_valid=torch.ones(B, 6, dtype=torch.bool))
    torch.testing.assert_close(logits.argmax(-1), ys[:, 1:])


@pytest.mark.parametrize(("pad_id", "filler"), [(0, 0), (None, 2)])
def test_greedy_decode_fills_after_eos(pad_id, filler):
    model = Seq2SeqTransformer(replace(TINY, pad_id=pad_id)).eval()
    with torch.no_grad():
        model.generator.bias[2] = 1e4  # EOS (id 2) always wins
    ys = model.greedy_decode(_tokens(B, S), bos_id=1, max_new_tokens=4, eos_id=2)
    assert ys.tolist() == [[1, 2, filler, filler, filler]] * B


def test_generate_is_reproducible_with_a_generator():
    torch.manual_seed(0)
    lm = CausalLM(replace(TINY, max_len=8)).eval()
    prompt = _tokens(2, 6)

    def sample(seed: int, **kwargs) -> torch.Tensor:
        return lm.generate(prompt, 10, generator=torch.Generator().manual_seed(seed), **kwargs)

    first = sample(7)
    assert first.shape == (2, 16) and torch.equal(first[:, :6], prompt)  # context cropped to max_len inside
    assert torch.equal(sample(7), first)
    assert not torch.equal(sample(8), first)
    greedy = lm.generate(prompt, 4, temperature=0.0)
    assert torch.equal(sample(3, top_k=1)[:, :10], greedy)
    for step in range(4):
        expected = lm(greedy[:, : 6 + step][:, -8:])[:, -1].argmax(-1)
        assert torch.equal(greedy[:, 6 + step], expected)


def test_without_positions_the_encoder_is_permutation_equivariant():
    torch.manual_seed(0)
    src = _tokens(B, S)
    perm = torch.randperm(S)
    blind = Seq2SeqTransformer(replace(TINY, positional="none")).eval()
    torch.testing.assert_close(blind.encode(src[:, perm]), blind.encode(src)[:, perm])
    regressor = SequenceRegressor(replace(TINY, positional="none")).eval()
    torch.testing.assert_close(regressor(src[:, perm]), regressor(src))  # mean pooling: order is invisible
    for positional in (k for k in POSITIONALS if positional_kind(k).acts != "nothing"):
        model = Seq2SeqTransformer(replace(TINY, positional=positional)).eval()
        assert not torch.allclose(model.encode(src[:, perm]), model.encode(src)[:, perm], atol=1e-3)


def test_model_argument_errors():
    with pytest.raises(ValueError, match="pool='max'"):
        SequenceRegressor(TINY, pool="max")
    with pytest.raises(ValueError, match="num_outputs=0"):
        SequenceRegressor(TINY, num_outputs=0)
    with pytest.raises(ValueError, match="max_len=12"):
        CausalLM(replace(TINY, positional="learned"))(_tokens(1, 13))
    with pytest.raises(ValueError, match="max_len=12"):
        SequenceRegressor(TINY, pool="cls")(_tokens(1, 12))  # the CLS token needs one more position


def test_generate_stops_once_every_sequence_wrote_the_stop_token():
    torch.manual_seed(0)
    lm = CausalLM(replace(TINY, max_len=8)).eval()
    prompt = _tokens(2, 4)
    full = lm.generate(prompt, 30, generator=torch.Generator().manual_seed(5))
    stop = int(full[0, 6])  # a token the first sequence writes at its third step
    early = lm.generate(prompt, 30, generator=torch.Generator().manual_seed(5), stop_id=stop)
    written = early[:, 4:]
    assert torch.equal(early, full[:, :early.size(1)])  # the same tokens, only fewer of them
    assert all((row == stop).any() for row in written)  # it ended because both rows wrote the stop token
    ends = [int((row == stop).nonzero()[0]) for row in written]
    assert early.size(1) - 4 == max(ends) + 1  # ... and not one step later
