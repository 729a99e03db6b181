"""Branching a writing: the same tokens before the branch, the key/value cache reused, and a continuation equal to
a fresh writing from the branch's prefix."""

from __future__ import annotations

import pytest
import torch

from explorer.lab.generation import Sampling, start_writing
from explorer.lab.generation_branch import alternatives, branch_writing
from tests.explorer.test_generation_lab import Words
from transformer_core.config import TransformerConfig
from transformer_core.generation import generate
from transformer_core.kv_cache import KVCache
from transformer_core.models import CausalLM
from transformer_core.probes import probing

PROMPT = (3, 1, 4, 1, 5)


@pytest.fixture(scope="module", name="model")
def model_fixture():
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=12, max_len=32, d_model=16, n_heads=2, n_layers=2, d_ff=32,
                               positional="rope")
    return CausalLM(config).eval()


def _written(model, sampling, n=8):
    first = start_writing(model, PROMPT, Words(), sampling, n, end_id=None)
    while first.advance() is not None:
        pass
    return first


def _run(branch):
    while branch.writing.advance() is not None:
        pass
    return branch.writing


def _fed(model):
    """A probe on the token embedding that counts the positions the model reads."""
    seen = []
    return {(model.embed, "tokens"): lambda x: seen.append(x.size(1)) or x}, seen


@pytest.mark.parametrize("sampling", [Sampling(), Sampling(temperature=1.3, seed=7)], ids=["greedy", "sampled"])
def test_a_branch_keeps_the_tokens_before_it_and_continues_like_a_fresh_writing(model, sampling):
    first = _written(model, sampling)
    step = 3
    chosen = alternatives(first, step)[0]
    probes, seen = _fed(model)
    with probing(probes):
        branch = branch_writing(model, first, step, chosen)
        second = _run(branch)
    prefix = [*PROMPT, *(t.token_id for t in first.written[:step - 1])]
    assert [t.token_id for t in second.written[:step - 1]] == prefix[len(PROMPT):]
    assert second.written[step - 1].token_id == chosen != first.written[step - 1].token_id
    # The model read the chosen token and then one token per step: none of the prefix again.
    assert seen == [1] * (len(second.written) - step)
    assert sum(seen) < len(prefix)
    # The continuation equals a fresh generation from prefix + chosen, with the same settings and seed.
    fresh = list(generate(model, torch.tensor([[*prefix, chosen]]), first.max_new_tokens - step,
                          temperature=sampling.temperature,
                          generator=None if sampling.greedy else sampling.generator()))
    assert [t.token_id for t in second.written[step:]] == [s.token_id for s in fresh]
    assert len(second.written) == len(first.written)
    # The logits at the branch's first own step equal a full forward over the whole sequence.
    with torch.no_grad():
        full = model(torch.tensor([[*prefix, chosen]]))[0, -1]
    torch.testing.assert_close(fresh[0].logits, full, atol=1e-5, rtol=1e-5)
    assert branch.differs(first)[step - 1] and not any(branch.differs(first)[:step - 1])


def test_the_copied_cache_equals_the_cache_of_the_prefix_read_anew_and_leaves_the_first_intact(model):
    first = _written(model, Sampling())
    before = [layer._keys.clone() for layer in first.cache.layers]
    branch = branch_writing(model, first, 4, alternatives(first, 4)[1])
    prefix = [*PROMPT, *(t.token_id for t in first.written[:3])]
    again = KVCache(len(model.blocks), capacity=len(prefix))
    with torch.no_grad():
        model.features(torch.tensor([prefix]), cache=again)
    reused = branch.writing.cache
    for mine, theirs in zip(reused.layers, again.layers, strict=True):
        torch.testing.assert_close(mine._keys[:, :, :len(prefix)], theirs._keys)
        torch.testing.assert_close(mine._values[:, :, :len(prefix)], theirs._values)
    _run(branch)
    for old, layer in zip(before, first.cache.layers, strict=True):
        torch.testing.assert_close(layer._keys, old)  # the branch wrote into its own copy


def test_the_branch_step_shows_the_first_writings_candidates_with_another_chosen(model):
    first = _written(model, Sampling())
    token = first.written[1]
    other = alternatives(first, 2)[2]
    branch = branch_writing(model, first, 2, other)
    switched = branch.writing.written[1]
    assert [c.token_id for c in switched.candidates] == [c.token_id for c in token.candidates]
    assert [c.token_id for c in switched.candidates if c.chosen] == [other]
    assert switched.probability == next(c.probability for c in token.candidates if c.token_id == other)
    assert (switched.attention == token.attention).all()


def test_bad_branches_are_refused_in_plain_words(model):
    first = _written(model, Sampling(), n=4)
    with pytest.raises(ValueError, match="step 1 to 4"):
        branch_writing(model, first, 5, 0)
    with pytest.raises(ValueError, match="the model wrote"):
        branch_writing(model, first, 2, first.written[1].token_id)
    outside = next(i for i in range(12) if i not in {c.token_id for c in first.written[0].candidates})
    with pytest.raises(ValueError, match="candidates"):
        branch_writing(model, first, 1, outside)


def test_a_branch_at_the_last_step_writes_nothing_more_and_a_stopped_writing_can_branch(model):
    first = _written(model, Sampling(), n=4)
    branch = branch_writing(model, first, 4, alternatives(first, 4)[0])
    assert branch.writing.finished and len(branch.writing.written) == 4
    stopped = start_writing(model, PROMPT, Words(), Sampling(), 10)
    for _ in range(3):
        stopped.advance()
    stopped.stop()
    branch = branch_writing(model, stopped, 3, alternatives(stopped, 3)[0])
    assert len(_run(branch).written) == 10
