"""Head ablation and head importance, for every model family, against models whose weights do the same by hand."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from tests.core.intervention_models import MODELS, build, value_edited
from transformer_core.head_edits import HEAD_EDITS
from transformer_core.interventions import ablate_heads, all_heads, attention_stacks, head_importance, head_means


@pytest.mark.parametrize("name", MODELS)
def test_stacks_are_the_attention_dict_of_the_model(name):
    model, run = build(name)
    with torch.no_grad():
        _, attention = run(model, with_attention=True)
    stacks = attention_stacks(model)
    assert list(stacks) == list(attention)
    for key, weights in attention.items():
        assert [w.size(1) for w in weights] == [m.n_heads for m in stacks[key]]
    assert len(all_heads(model)) == sum(w.size(1) for ws in attention.values() for w in ws)


@pytest.mark.parametrize("name", MODELS)
def test_zero_ablation_equals_zeroed_value_rows(name):
    model, run = build(name)
    heads = [all_heads(model)[1], all_heads(model)[-1]]
    with torch.no_grad(), ablate_heads(model, heads):
        ablated = run(model)
    with torch.no_grad():
        expected = run(value_edited(model, {h: None for h in heads}))
        plain = run(model)
    torch.testing.assert_close(ablated, expected, atol=1e-6, rtol=1e-5)
    assert not torch.allclose(ablated, plain, atol=1e-4)  # the heads did something


@pytest.mark.parametrize("name", MODELS)
def test_mean_ablation_equals_constant_values(name):
    # A head whose values are the same vector m at every key outputs m (its weights sum to 1): the hand version.
    model, run = build(name)
    heads = all_heads(model)[::3]
    gen = torch.Generator().manual_seed(3)
    stacks = attention_stacks(model)
    means = {h: torch.randn(stacks[h[0]][h[1]].head_dim, generator=gen) for h in heads}
    with torch.no_grad(), ablate_heads(model, heads, mode="mean", means=means):
        ablated = run(model)
    with torch.no_grad():
        expected = run(value_edited(model, means))
    torch.testing.assert_close(ablated, expected, atol=1e-5, rtol=1e-4)


def test_head_means_are_the_average_head_outputs():
    model, run = build("causal_lm")
    idx = torch.randint(0, 11, (3, 6), generator=torch.Generator().manual_seed(4))
    means = head_means(model, lambda m: m(idx))
    with torch.no_grad():
        _, attention = model.forward_with_attention(idx)
        x = model.embed(idx)
        for layer, block in enumerate(model.blocks):
            attn = block.self_attn
            v = attn.v_proj(block.norm1(x)).view(3, 6, attn.n_heads, attn.head_dim).transpose(1, 2)  # (B, H, T, D)
            outputs = attention["decoder"][layer] @ v  # (B, H, T, D)
            for head in range(attn.n_heads):
                expected = outputs[:, head].mean(dim=(0, 1))
                torch.testing.assert_close(means[("decoder", layer, head)], expected, atol=1e-6, rtol=1e-5)
            x, _ = block(x, is_causal=True, positions=model.attn_positions)
    assert len(means) == len(all_heads(model))


def test_head_means_leave_out_heads_the_run_never_reaches():
    model, _ = build("seq2seq")
    src = torch.tensor([[3, 4, 5]])
    means = head_means(model, lambda m: m.encode(src))
    assert {h[0] for h in means} == {"encoder"}
    cross = [("cross", 0, 0)]
    with pytest.raises(ValueError, match="never reached"), ablate_heads(model, cross, mode="mean", means=means):
        pass


@pytest.mark.parametrize("name", MODELS)
def test_leaving_the_context_restores_the_model_exactly(name):
    model, run = build(name)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        before = run(model)
        with pytest.raises(RuntimeError, match="inside"), ablate_heads(model, all_heads(model)[:2]):
            raise RuntimeError("inside")
        with ablate_heads(model, all_heads(model)):
            run(model)
        after = run(model)
    assert torch.equal(before, after)
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert HEAD_EDITS.get() is None
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_nested_ablations_add_up():
    model, run = build("causal_lm")
    a, b = ("decoder", 0, 1), ("decoder", 0, 2)
    with torch.no_grad(), ablate_heads(model, [a]), ablate_heads(model, [b]):
        nested = run(model)
    with torch.no_grad(), ablate_heads(model, [a, b]):
        together = run(model)
    assert torch.equal(nested, together)


def test_two_threads_ablating_one_model_each_get_their_own_result():
    model, run = build("causal_lm")
    plans = [[("decoder", 0, 0)], [("decoder", 1, 3), ("decoder", 0, 2)]]
    with torch.no_grad():
        expected = [run(value_edited(model, {h: None for h in plan})) for plan in plans]
    barrier, errors = threading.Barrier(2), []

    def work(i: int) -> None:
        barrier.wait()
        for _ in range(30):
            with torch.no_grad(), ablate_heads(model, plans[i]):
                got = run(model)
            if not torch.allclose(got, expected[i], atol=1e-6):
                errors.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("name", MODELS)
def test_head_importance_is_a_loop_of_single_ablations(name):
    model, run = build(name)

    def score(m):
        with torch.no_grad():
            return float(run(m).float().pow(2).mean())

    maps = head_importance(model, score)
    base = score(model)
    for stack, layer, head in all_heads(model):
        expected = score(value_edited(model, {(stack, layer, head): None})) - base
        assert maps[stack][layer, head] == pytest.approx(expected, abs=1e-5)
    assert set(maps) == set(attention_stacks(model))


def test_head_importance_of_some_heads_leaves_the_others_unknown():
    model, run = build("seq2seq")
    calls = []
    maps = head_importance(model, lambda m: float(run(m).sum()), heads=[("cross", 1, 2)], mode="zero",
                           progress=lambda done, total: calls.append((done, total)))
    assert np.isfinite(maps["cross"][1, 2])
    assert np.isnan(maps["cross"]).sum() == maps["cross"].size - 1
    assert np.isnan(maps["encoder"]).all()
    assert calls == [(1, 1)]


def test_head_importance_with_mean_ablation_uses_the_means():
    model, run = build("regressor")
    means = head_means(model, run)
    ref = ("encoder", 1, 0)
    maps = head_importance(model, lambda m: float(run(m).sum()), heads=[ref], mode="mean", means=means)
    with torch.no_grad():
        expected = float(run(value_edited(model, {ref: means[ref]})).sum()) - float(run(model).sum())
    assert maps["encoder"][1, 0] == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(("heads", "message"), [
    ([("nowhere", 0, 0)], "Unknown attention stack 'nowhere'"),
    ([("cross", 2, 0)], "layer 2 does not exist in the cross stack"),
    ([("encoder", 0, 4)], "head 4 does not exist in the encoder stack"),
    ([("encoder", 0, -1)], "head -1 does not exist"),
    ([("encoder", 0)], "named \\(stack, layer, head\\)"),
    ([("encoder", True, 0)], "layer True does not exist"),
])
def test_bad_head_names_are_refused_clearly(heads, message):
    model, _ = build("seq2seq")
    with pytest.raises(ValueError, match=message), ablate_heads(model, heads):
        pass


def test_bad_modes_and_models_are_refused_clearly():
    model, _ = build("seq2seq")
    head = [("encoder", 0, 0)]
    with pytest.raises(ValueError, match="must be 'zero' or 'mean'"), ablate_heads(model, head, mode="half"):
        pass
    with pytest.raises(ValueError, match="pass means=head_means"), ablate_heads(model, head, mode="mean"):
        pass
    with pytest.raises(ValueError, match="cannot be ablated"):
        attention_stacks(torch.nn.Linear(2, 2))


def test_heads_may_come_as_lists_from_json():
    model, run = build("seq2seq")
    with torch.no_grad(), ablate_heads(model, [["cross", 0, 1]]):
        from_list = run(model)
    with torch.no_grad(), ablate_heads(model, [("cross", 0, 1)]):
        from_tuple = run(model)
    assert torch.equal(from_list, from_tuple)
