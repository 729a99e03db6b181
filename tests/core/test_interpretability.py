"""Token attributions, patching, direct logit attribution and neurons on the models the tasks train, built from each
task's default config; PyTorch autograd and hooks on our own modules are the oracle."""

from __future__ import annotations

import copy
import dataclasses
import threading

import pytest
import torch

from transformer_core.attribution import token_attributions
from transformer_core.models import CausalLM
from transformer_core.neurons import neuron_activations
from transformer_core.patching import direct_logit_attribution, logit_difference, patch_heads, patch_residual
from transformer_core.probes import PROBES, probing, recorder
from transformer_core.tasks.base import generator_for
from transformer_core.tasks.registry import get_task


def _model(task_name: str, *, train_steps: int = 0) -> torch.nn.Module:
    task = get_task(task_name)
    torch.manual_seed(0)
    model = task.build_model(task.default_model_config())
    if train_steps:  # a few steps of the task's own training, so the weights are not the initial ones
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        g = generator_for(0)
        for _ in range(train_steps):
            opt.zero_grad()
            task.loss(model, task.sample_batch(16, g)).backward()
            opt.step()
    return model.eval()


@pytest.fixture(scope="module")
def induction():
    return _model("induction", train_steps=20)


def _ids(model, n: int, seed: int = 1) -> list[int]:
    return (torch.randperm(model.config.vocab_size - 1, generator=torch.Generator().manual_seed(seed))[:n] + 1).tolist()


def _table_gradient_oracle(model: torch.nn.Module, embed_name: str, run, ids: list[int]) -> torch.Tensor:
    """Gradient × input from the gradient of the embedding *table* (ordinary autograd on a copy, no probe): for
    distinct tokens, row ``ids[t]`` of the table's gradient is the gradient at position t."""
    twin = copy.deepcopy(model)
    table = twin.get_submodule(embed_name).tokens.weight
    table.requires_grad_(True)
    run(twin).backward()
    return (table.grad[ids] * table[ids]).sum(-1).detach()


def test_gradient_times_input_on_a_trained_decoder_equals_the_table_gradient(induction):
    ids = _ids(induction, 9)
    result = token_attributions(induction, ids, 4)
    oracle = _table_gradient_oracle(induction, "embed", lambda m: m(torch.tensor(ids)[None])[0, -1, 4], ids)
    assert oracle.abs().sum() > 0 and oracle.std() > 0
    torch.testing.assert_close(torch.as_tensor(result.values, dtype=torch.float32), oracle, atol=1e-5, rtol=1e-4)


def test_integrated_gradients_on_a_trained_decoder_are_complete(induction):
    """The values add up to f(x) - f(0): the gap is under 1% of the values' total size."""
    calls = []
    result = token_attributions(induction, _ids(induction, 9), 4, method="integrated_gradients", steps=64,
                                progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (64, 64) and all(d <= t for d, t in calls)
    assert abs(result.values).sum() > 1e-2 and abs(result.gap) < 0.01 * abs(result.values).sum()


def test_integrated_gradients_in_smaller_batches_report_each_batch_and_agree(induction):
    """``batch_points`` only changes how the path is cut into batches: progress per batch, the same values."""
    ids, calls = _ids(induction, 9), []
    whole = token_attributions(induction, ids, 4, method="integrated_gradients", steps=12)
    cut = token_attributions(induction, ids, 4, method="integrated_gradients", steps=12, batch_points=5,
                             progress=lambda done, total: calls.append((done, total)))
    assert calls == [(5, 12), (10, 12), (12, 12)]
    assert abs(whole.values).sum() > 1e-3
    torch.testing.assert_close(cut.values, whole.values, atol=1e-9, rtol=1e-6)
    with pytest.raises(ValueError, match="batch_points"):
        token_attributions(induction, ids, 4, method="integrated_gradients", batch_points=0)


def test_encoder_decoder_attributions_cover_source_and_target_tokens():
    model = _model("reverse")
    src, tgt = _ids(model, 6, seed=2), _ids(model, 4, seed=3)
    # ReLU kinks make the integrand jump: more points than for a smooth GELU path
    result = token_attributions(model, (src, tgt), 5, position=2, method="integrated_gradients", steps=256)
    assert result.n_source == 6 and len(result.source) == 6 and len(result.target) == 4
    assert abs(result.source).sum() > 0 and abs(result.target[:3]).sum() > 0
    assert result.target[3] == 0.0  # the decoder is causal: position 2 never reads target token 3
    assert abs(result.gap) < 0.01 * abs(result.values).sum()
    gxi = token_attributions(model, (src, tgt), 5, position=2)
    twin = copy.deepcopy(model)
    tables = [twin.src_embed.tokens.weight, twin.tgt_embed.tokens.weight]
    for t in tables:
        t.requires_grad_(True)
    twin(torch.tensor(src)[None], torch.tensor(tgt)[None])[0, 2, 5].backward()
    oracle = torch.cat([(t.grad[i] * t[i]).sum(-1).detach() for t, i in zip(tables, (src, tgt), strict=True)])
    torch.testing.assert_close(torch.as_tensor(gxi.values, dtype=torch.float32), oracle, atol=1e-5, rtol=1e-4)


def test_regressor_and_vit_attributions_are_complete():
    protein = _model("protein")
    ids = _ids(protein, 12)
    result = token_attributions(protein, ids, 0, method="integrated_gradients", steps=64)
    assert len(result.values) == 12 and abs(result.gap) < 0.01 * abs(result.values).sum()
    vit = _model("vit_shapes")
    c, size = vit.config.in_channels, vit.config.image_size
    image = torch.randn(c, size, size, generator=torch.Generator().manual_seed(0))
    result = token_attributions(vit, image, 1, method="integrated_gradients", steps=64)
    assert len(result.values) == vit.config.num_patches
    assert abs(result.gap) < 0.01 * abs(result.values).sum()


def test_patching_the_changed_token_before_block_0_restores_the_clean_answer(induction):
    clean = _ids(induction, 8)
    corrupt = list(clean)
    corrupt[5] = next(v for v in range(1, induction.config.vocab_size) if v not in clean)
    metric = logit_difference(clean[5], corrupt[5])
    result = patch_residual(induction, clean, corrupt, metric)
    assert result.patched.shape == (induction.config.n_layers, 8)
    assert abs(result.clean - result.corrupt) > 1e-3
    assert result.restored[0, 5] == pytest.approx(1.0, abs=1e-4)
    assert abs(result.restored[0, :5]).max() < 1e-4  # positions before the change see the same tokens either way
    seen = {}
    handles = [b.register_forward_pre_hook(lambda m, a, i=i: seen.__setitem__(i, a[0].clone()))
               for i, b in enumerate(induction.blocks)]
    with torch.no_grad():
        induction(torch.tensor(clean)[None])
    for h in handles:
        h.remove()
    layer, t = induction.config.n_layers - 1, 7

    def patch(module, args):
        x = args[0].clone()
        x[:, t] = seen[layer][:, t]
        return (x, *args[1:])

    handle = induction.blocks[layer].register_forward_pre_hook(patch)
    with torch.no_grad():
        out = induction(torch.tensor(corrupt)[None])[0, -1]
    handle.remove()
    assert result.patched[layer, t] == pytest.approx(metric(out), abs=1e-5)
    heads = patch_heads(induction, clean, corrupt, metric)
    assert heads.patched.shape == (induction.config.n_layers, induction.config.n_heads)


def test_direct_logit_attribution_parts_sum_to_the_logit_difference(induction):
    ids = _ids(induction, 9)
    result = direct_logit_attribution(induction, ids, 3, 7)
    with torch.no_grad():
        logits = induction(torch.tensor(ids)[None])[0, -1]
    assert result.total == pytest.approx(float(logits[3] - logits[7]), abs=1e-5)
    assert result.heads.sum() + result.mlps.sum() + result.rest == pytest.approx(result.total, abs=1e-4)
    assert abs(result.heads).max() > 0 and abs(result.mlps).max() > 0
    vit = _model("vit_shapes")
    image = torch.randn(vit.config.in_channels, vit.config.image_size, vit.config.image_size)
    part = direct_logit_attribution(vit, image, 0, 2)
    assert part.heads.sum() + part.mlps.sum() + part.rest == pytest.approx(part.total, abs=1e-4)


def test_methods_refuse_what_they_cannot_read():
    post = CausalLM(dataclasses.replace(_model("induction").config, norm_position="post"))
    with pytest.raises(ValueError, match="pre-norm"):
        direct_logit_attribution(post, [1, 2, 3], 1, 2)
    seq2seq = _model("reverse")
    with pytest.raises(ValueError, match="needs stack='encoder'"):
        patch_residual(seq2seq, ([1, 2], [1]), ([1, 3], [1]), logit_difference(1, 2))
    with pytest.raises(ValueError, match="clean source has 2 tokens and the corrupt source 3"):
        patch_heads(seq2seq, ([1, 2], [1]), ([1, 3, 4], [1]), logit_difference(1, 2), stack="cross")
    with pytest.raises(ValueError, match="one stack"):
        neuron_activations(post, [1, 2, 3], stack="encoder")
    with pytest.raises(ValueError, match="pair"):
        token_attributions(seq2seq, [1, 2, 3], 1)
    with pytest.raises(ValueError, match="method="):
        token_attributions(post, [1, 2, 3], 1, method="saliency")
    with pytest.raises(ValueError, match="target="):
        token_attributions(post, [1, 2, 3], 10_000)


def test_neuron_activations_equal_the_hooked_down_projection_input(induction):
    ids = _ids(induction, 9)
    seen = {}
    handles = [b.ff.linear2.register_forward_pre_hook(lambda m, a, i=i: seen.__setitem__(i, a[0].clone()))
               for i, b in enumerate(induction.blocks)]
    with torch.no_grad():
        induction(torch.tensor(ids)[None])
    for h in handles:
        h.remove()
    oracle = torch.stack([seen[i][0] for i in range(len(seen))])
    assert oracle.abs().sum() > 0 and oracle.std() > 0
    torch.testing.assert_close(neuron_activations(induction, ids), oracle)


def test_probes_belong_to_the_thread_that_sets_them(induction):
    ids = torch.tensor(_ids(induction, 5))[None]
    seen_elsewhere: dict = {}
    inside = threading.Event()
    done = threading.Event()

    def other_thread():
        inside.wait()
        with torch.no_grad():
            induction(ids)
        seen_elsewhere["probes"] = PROBES.get()
        done.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    store: dict = {}
    with probing({(induction.blocks[0], "resid_pre"): recorder(store, "x")}):
        inside.set()
        done.wait(10)
    thread.join()
    assert seen_elsewhere["probes"] is None and "x" not in store
    assert PROBES.get() is None


def test_patching_a_regressor_restores_its_output_from_the_changed_token():
    model = _model("protein")
    clean = _ids(model, 10)
    corrupt = list(clean)
    corrupt[4] = next(v for v in range(1, model.config.vocab_size) if v not in clean)
    result = patch_residual(model, clean, corrupt, lambda out: float(out[0]))
    assert result.patched.shape == (model.config.n_layers, 10)
    assert abs(result.clean - result.corrupt) > 1e-4
    assert result.restored[0, 4] == pytest.approx(1.0, abs=1e-3)
    acts = neuron_activations(model, clean)
    assert acts.shape == (model.config.n_layers, 10, model.config.d_ff)


def test_patching_the_encoder_decoder_by_stack_equals_hooks():
    model = _model("reverse")
    src, tgt = _ids(model, 6, seed=2), _ids(model, 4, seed=3)
    corrupt_src = list(src)
    corrupt_src[2] = next(v for v in range(1, model.config.vocab_size) if v not in src)
    metric = logit_difference(tgt[3], corrupt_src[2])
    clean, corrupt = (src, tgt), (corrupt_src, tgt)
    enc = patch_residual(model, clean, corrupt, metric, position=2, stack="encoder")
    assert enc.patched.shape == (model.config.n_layers, 6) and abs(enc.clean - enc.corrupt) > 1e-4
    assert enc.restored[0, 2] == pytest.approx(1.0, abs=1e-4)  # the changed source token, before the encoder
    dec = patch_residual(model, clean, corrupt, metric, position=2, stack="decoder")
    assert dec.patched.shape == (model.config.decoder_layers, 4)
    cross = patch_heads(model, clean, corrupt, metric, position=2, stack="cross")
    assert cross.patched.shape == (model.config.decoder_layers, model.config.n_heads)
    # The oracle: hooks on our own cross-attention's output projection put back one head's clean output.
    seen = {}
    proj = model.decoder[-1].cross_attn.out_proj
    handle = proj.register_forward_pre_hook(lambda m, a: seen.__setitem__("z", a[0].clone()))
    with torch.no_grad():
        model(torch.tensor(src)[None], torch.tensor(tgt)[None])
    handle.remove()
    d = model.config.d_model // model.config.n_heads

    def patch(m, a):
        z = a[0].clone()
        z[..., d:2 * d] = seen["z"][..., d:2 * d]
        return (z,)

    handle = proj.register_forward_pre_hook(patch)
    with torch.no_grad():
        out = model(torch.tensor(corrupt_src)[None], torch.tensor(tgt)[None])[0, 2]
    handle.remove()
    assert cross.patched[-1, 1] == pytest.approx(metric(out), abs=1e-5)
    acts = neuron_activations(model, clean, stack="decoder")
    assert acts.shape == (model.config.decoder_layers, 4, model.config.d_ff)
