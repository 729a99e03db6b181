"""Cached generation: every step equals a full forward, sampling follows its formulas, the model stays as it was."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from transformer_core import CausalLM, TransformerConfig
from transformer_core.generation import choose_next, generate, kv_cache_bytes, sampling_probs
from transformer_core.kv_cache import KVCache
from transformer_core.positional import get as positional_kind
from transformer_core.positional import kinds as positional_kinds

TINY = TransformerConfig(vocab_size=23, max_len=20, d_model=16, n_heads=2, n_layers=2, d_ff=32)
# Every encoding a decoder can use: tables added with an offset, RoPE with fewer queries than keys, ALiBi's bias.
CAUSAL_POSITIONALS = [k for k in positional_kinds() if positional_kind(k).head_ok(TINY.head_dim)]


def _lm(seed: int = 0, **changes) -> CausalLM:
    torch.manual_seed(seed)
    return CausalLM(replace(TINY, **changes)).eval()


def _prompt(n: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, TINY.vocab_size, (1, n), generator=torch.Generator().manual_seed(seed))


def _steps(lm, prompt, n, **kwargs):
    return list(generate(lm, prompt, n, **kwargs))


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("positional", CAUSAL_POSITIONALS)
def test_each_cached_step_equals_a_full_forward(positional, norm):
    lm = _lm(positional=positional, norm_position=norm)
    prompt = _prompt(5)
    steps = _steps(lm, prompt, 9, temperature=1.0, generator=torch.Generator().manual_seed(3))
    assert len(steps) == 9 and len({s.token_id for s in steps}) > 1  # sampled: the cache sees varied tokens
    sequence = torch.cat([prompt, torch.tensor([[s.token_id for s in steps]])], dim=1)
    with torch.no_grad():
        full, attention = lm.forward_with_attention(sequence[:, :-1])  # (1, T, V), per layer (1, H, T, T)
    for i, step in enumerate(steps):
        asking = 4 + i  # the index of the token whose query made this step
        assert step.position == asking + 1
        torch.testing.assert_close(step.logits, full[0, asking], atol=1e-5, rtol=0)
        assert len(step.attention) == TINY.n_layers
        for row, weights in zip(step.attention, attention["decoder"], strict=True):
            assert row.shape == (TINY.n_heads, asking + 1)
            torch.testing.assert_close(row, weights[0, :, asking, : asking + 1], atol=1e-5, rtol=0)


def test_greedy_takes_the_likeliest_token_of_the_full_sequence():
    lm = _lm(positional="rope")
    steps = _steps(lm, _prompt(3), 6)
    ids = _prompt(3)
    for step in steps:
        with torch.no_grad():
            assert step.token_id == int(lm(ids)[0, -1].argmax())
        ids = torch.cat([ids, torch.tensor([[step.token_id]])], dim=1)


def test_the_model_is_left_as_it_was():
    lm = _lm(dropout=0.2)
    lm.train()
    lm.blocks[1].eval()  # mixed modes come back as they were, module by module
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    modes = [m.training for m in lm.modules()]
    for _ in generate(lm, _prompt(4), 5, temperature=0.8, generator=torch.Generator().manual_seed(0)):
        assert torch.is_grad_enabled()  # no gradient-free mode leaks to the caller between steps
        assert [m.training for m in lm.modules()] == modes
    assert [m.training for m in lm.modules()] == modes
    for k, v in lm.state_dict().items():
        assert torch.equal(v, before[k]), k
    # dropout was off while generating, though the model was in training mode: the steps repeat exactly
    again = _steps(lm, _prompt(4), 5, temperature=0.8, generator=torch.Generator().manual_seed(0))
    first = _steps(lm, _prompt(4), 5, temperature=0.8, generator=torch.Generator().manual_seed(0))
    assert [s.token_id for s in again] == [s.token_id for s in first]


def test_the_end_token_stops_after_its_step():
    lm = _lm()
    tokens = [s.token_id for s in _steps(lm, _prompt(4), 8, temperature=1.0,
                                         generator=torch.Generator().manual_seed(2))]
    eos = tokens[3]
    stopped = _steps(lm, _prompt(4), 8, temperature=1.0, generator=torch.Generator().manual_seed(2), eos_token_id=eos)
    assert [s.token_id for s in stopped] == tokens[: tokens.index(eos) + 1]


def test_the_caller_stops_by_stopping_iterating():
    steps = generate(_lm(), _prompt(4), 10)
    first = next(steps)
    steps.close()
    assert first.position == 4


def test_generation_stops_at_max_len_and_refuses_longer_prompts():
    lm = _lm(positional="learned")
    assert [s.position for s in _steps(lm, _prompt(TINY.max_len - 2), 10)] == [18, 19]
    assert _steps(lm, _prompt(TINY.max_len), 10) == []
    with pytest.raises(ValueError, match="max_len=20"):
        generate(lm, _prompt(TINY.max_len + 1), 1)


@pytest.mark.parametrize("kwargs, message", [
    (dict(temperature=-1.0), "temperature=-1.0"),
    (dict(top_k=0), "top_k=0"),
    (dict(top_p=0.0), "top_p=0.0"),
    (dict(top_p=1.5), "top_p=1.5"),
])
def test_bad_sampling_settings_are_refused_at_once(kwargs, message):
    with pytest.raises(ValueError, match=message):
        generate(_lm(), _prompt(3), 2, **kwargs)


@pytest.mark.parametrize("prompt, message", [
    (torch.tensor([1, 2, 3]), r"\(1, T\)"),
    (torch.tensor([[1, 99]]), "token ids from 0 to 22"),
    (torch.zeros(1, 0, dtype=torch.long), "at least one"),
])
def test_bad_prompts_are_refused(prompt, message):
    with pytest.raises(ValueError, match=message):
        generate(_lm(), prompt, 2)


LOGITS = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0])


def _softmax(values: list[float]) -> list[float]:
    e = [math.exp(v) for v in values]
    return [x / sum(e) for x in e]


def test_temperature_and_top_k_follow_the_formula():
    by_hand = _softmax([v / 0.5 for v in LOGITS.tolist()])
    torch.testing.assert_close(sampling_probs(LOGITS, temperature=0.5), torch.tensor(by_hand))
    top2 = _softmax([v / 2.0 for v in LOGITS.tolist()[:2]])
    torch.testing.assert_close(sampling_probs(LOGITS, temperature=2.0, top_k=2), torch.tensor(top2 + [0.0] * 3))
    assert sampling_probs(LOGITS, temperature=0.0).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]


def test_top_p_keeps_the_smallest_set_that_reaches_p():
    p = _softmax(LOGITS.tolist())  # about 0.61, 0.22, 0.14, 0.08, 0.03 (in that order)
    for top_p, kept in [(0.5, 1), (0.61, 1), (0.7, 2), (0.9, 3), (1.0, 5)]:
        n = kept if sum(p[:kept]) >= top_p else kept + 1  # the set must reach top_p
        expected = [x / sum(p[:n]) for x in p[:n]] + [0.0] * (5 - n)
        torch.testing.assert_close(sampling_probs(LOGITS, top_p=top_p), torch.tensor(expected))
    shuffled = LOGITS[torch.tensor([3, 0, 4, 2, 1])]  # the vocabulary order does not matter
    torch.testing.assert_close(sampling_probs(shuffled, top_p=0.7), sampling_probs(LOGITS, top_p=0.7)[[3, 0, 4, 2, 1]])


def test_sampling_draws_from_those_probabilities():
    probs = sampling_probs(LOGITS, temperature=1.5, top_k=4, top_p=0.9)
    draws = [int(choose_next(LOGITS, temperature=1.5, top_k=4, top_p=0.9, generator=torch.Generator().manual_seed(s)))
             for s in range(20)]
    expected = [int(torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(s))) for s in range(20)]
    assert draws == expected and len(set(draws)) > 1
    assert int(choose_next(LOGITS, temperature=0.0)) == 0


def test_the_cache_holds_what_the_formula_predicts():
    lm = _lm(positional="rope")
    cache = KVCache(TINY.n_layers, capacity=12)
    with torch.no_grad():
        lm(_prompt(7), cache=cache)
        lm(_prompt(1), cache=cache)
    assert cache.length == 8
    assert cache.nbytes == kv_cache_bytes(TINY, 8) == 2 * 2 * 16 * 8 * 4
    assert kv_cache_bytes(TINY, 8, torch.float16) == cache.nbytes // 2
    with pytest.raises(ValueError, match="holds 12 tokens"), torch.no_grad():
        lm(_prompt(5), cache=cache)
