"""Token attributions, activation patching, direct logit attribution and neuron activations on the pretrained loader's
models equal the same quantities read from transformers' own models with PyTorch hooks (GPT-2; a Llama whose 6
query heads share 2 key/value heads; BERT; ViT), at odd shapes, with random weights."""

from __future__ import annotations

import pytest
import torch

from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder, vit_folder
from tests.pretrained.hf_probes import PARTS, check_oracle, hooked, keep
from transformer_core.attribution import path_points, token_attributions
from transformer_core.head_edits import HEAD_EDITS
from transformer_core.neurons import neuron_activations
from transformer_core.patching import direct_logit_attribution, logit_difference, patch_heads, patch_residual
from transformer_core.pretrained import load_pretrained
from transformer_core.probes import PROBES

FAMILIES = ("gpt2", "llama", "bert", "vit")
TEXT = [5, 9, 13, 7, 21, 11]  # distinct tokens of the small vocabularies
CHANGED = 3  # the corrupt text differs here
BERT_TEXT = [2, 6, 12, 4, 9, 3]  # [CLS] ... [MASK] ... [SEP]
BERT_MASK = 3
ANSWER, OTHER = 17, 8  # tokens; classes 1 and 3 for the ViT


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """family -> (transformers model, our model), built once."""
    root = tmp_path_factory.mktemp("interpret")
    build = {
        "gpt2": lambda p: gpt2_folder(p, layers=3, heads=3, width=24),
        "llama": lambda p: llama_folder(p, layers=3, heads=6, kv_heads=2, width=36, ff=40),
        "bert": lambda p: bert_folder(p, layers=2, heads=3, width=24, ff=40),
        "vit": lambda p: vit_folder(p, layers=2, heads=3, width=24, ff=40, image=32, patch=8),
    }
    out = {}
    for family, make in build.items():
        hf = make(root / family)
        out[family] = (hf, load_pretrained(str(root / family)).model)
    return out


def _inputs(family: str):
    """(clean, corrupt, position, answer, other) for a family."""
    if family == "vit":
        g = torch.Generator().manual_seed(3)
        return torch.randn(3, 32, 32, generator=g), torch.randn(3, 32, 32, generator=g), 0, 1, 3
    text = BERT_TEXT if family == "bert" else TEXT
    corrupt = list(text)
    corrupt[CHANGED if family != "bert" else 1] = 15
    return text, corrupt, BERT_MASK if family == "bert" else -1, ANSWER, OTHER


def _hf_out(hf, family: str, x) -> torch.Tensor:
    """The transformers model's output vector at the explained position."""
    if family == "vit":
        return hf(pixel_values=torch.as_tensor(x)[None]).logits[0]
    position = BERT_MASK if family == "bert" else -1
    return hf(input_ids=torch.tensor(x)[None]).logits[0, position]


def _close(ours, oracle, rel: float = 1e-4) -> None:
    oracle = torch.as_tensor(oracle, dtype=torch.float64)
    check_oracle(oracle)
    scale = float(oracle.abs().max())
    torch.testing.assert_close(torch.as_tensor(ours, dtype=torch.float64), oracle, atol=rel * scale, rtol=rel * 10)


def _hf_attributions(hf, family: str, x, target: int, alphas, weights) -> torch.Tensor:
    """Σ_k w_k ∂f(α_k · rows)/∂rows · rows, with transformers' model: the input embeddings, or the patch
    embeddings replaced by a forward hook."""
    if family == "vit":
        store = {}
        with hooked(post={hf.vit.embeddings.patch_embeddings: keep(store, "p")}):
            _hf_out(hf, family, x)
        rows = store["p"][0]
    else:
        rows = hf.get_input_embeddings().weight[torch.tensor(x)].detach()
    total = torch.zeros(rows.shape[0], dtype=torch.float64)
    for a, w in zip(alphas.tolist(), weights.tolist(), strict=True):
        scaled = (a * rows).clone().requires_grad_()
        if family == "vit":
            with hooked(post={hf.vit.embeddings.patch_embeddings: lambda out, s=scaled: s[None]}):
                out = _hf_out(hf, family, x)[target]
        else:
            pos = BERT_MASK if family == "bert" else -1
            out = hf(inputs_embeds=scaled[None]).logits[0, pos, target]
        (grad,) = torch.autograd.grad(out, scaled)
        total += w * (grad * rows).sum(-1).double()
    return total


@pytest.mark.parametrize("family", FAMILIES)
def test_gradient_times_input_equals_transformers(pair, family):
    hf, ours = pair[family]
    x, _, position, answer, _ = _inputs(family)
    result = token_attributions(ours, x, answer, position=position)
    one = torch.ones(1, dtype=torch.float64)
    _close(result.values, _hf_attributions(hf, family, x, answer, one, one))
    with torch.no_grad():
        assert result.output == pytest.approx(float(_hf_out(hf, family, x)[answer]), abs=1e-4)
    assert result.gap is None and len(result.values) == (16 if family == "vit" else len(x))


@pytest.mark.parametrize("family", FAMILIES)
def test_integrated_gradients_equal_transformers(pair, family):
    hf, ours = pair[family]
    x, _, position, answer, _ = _inputs(family)
    result = token_attributions(ours, x, answer, position=position, method="integrated_gradients", steps=8)
    oracle = _hf_attributions(hf, family, x, answer, *path_points(8))
    _close(result.values, oracle, rel=1e-3 if family == "llama" else 1e-4)
    assert result.steps == 8 and result.baseline_output is not None
    span = result.output - result.baseline_output
    assert abs(span) > 1e-3
    assert result.gap == pytest.approx(float(oracle.sum()) - span, rel=1e-2, abs=1e-5)


@pytest.mark.parametrize("family", ["gpt2", "bert", "vit"])
def test_integrated_gradients_are_complete(pair, family):
    """Their values add up to f(x) - f(0), closer with more points (positions and the CLS token are added after the
    rows, so the path never meets a norm of a zero vector)."""
    x, _, position, answer, _ = _inputs(family)
    coarse, fine = (token_attributions(pair[family][1], x, answer, position=position,
                                       method="integrated_gradients", steps=n) for n in (8, 64))
    span = fine.output - fine.baseline_output
    assert abs(fine.gap) < 0.01 * abs(span)
    assert abs(fine.gap) < abs(coarse.gap) / 4


@pytest.mark.parametrize("family", FAMILIES)
def test_residual_patching_equals_hooked_transformers(pair, family):
    hf, ours = pair[family]
    clean, corrupt, position, answer, other = _inputs(family)
    result = patch_residual(ours, clean, corrupt, logit_difference(answer, other), position=position)
    layers = PARTS[family].layers(hf)
    seen = {}
    with torch.no_grad():
        with hooked(pre={layer: keep(seen, i) for i, layer in enumerate(layers)}):
            clean_value = float(_hf_out(hf, family, clean)[answer] - _hf_out(hf, family, clean)[other])
        n = seen[0].size(1)
        oracle = torch.zeros(len(layers), n)
        for i, layer in enumerate(layers):
            for t in range(n):
                def patch(x, i=i, t=t):
                    x = x.clone()
                    x[:, t] = seen[i][:, t]
                    return x
                with hooked(pre={layer: patch}):
                    out = _hf_out(hf, family, corrupt)
                oracle[i, t] = out[answer] - out[other]
    _close(result.patched, oracle)
    assert result.clean == pytest.approx(clean_value, abs=1e-4)
    if family != "vit":  # the changed token's embedding put back before block 0: the clean run, all of it
        changed = next(t for t, (a, b) in enumerate(zip(clean, corrupt, strict=True)) if a != b)
        assert result.restored[0, changed] == pytest.approx(1.0, abs=1e-4)
        assert all(abs(result.restored[0, t]) < 1e-4 for t in range(len(clean)) if t != changed)


@pytest.mark.parametrize("family", FAMILIES)
def test_head_patching_equals_hooked_transformers(pair, family):
    hf, ours = pair[family]
    clean, corrupt, position, answer, other = _inputs(family)
    result = patch_heads(ours, clean, corrupt, logit_difference(answer, other), position=position)
    layers, parts = PARTS[family].layers(hf), PARTS[family]
    heads = ours.blocks[0].self_attn.n_heads
    seen = {}
    with torch.no_grad():
        with hooked(pre={parts.out_proj(b): keep(seen, i) for i, b in enumerate(layers)}):
            _hf_out(hf, family, clean)
        size = seen[0].size(-1) // heads
        oracle = torch.zeros(len(layers), heads)
        for i, block in enumerate(layers):
            for h in range(heads):
                def patch(x, i=i, h=h):
                    x = x.clone()
                    x[..., h * size:(h + 1) * size] = seen[i][..., h * size:(h + 1) * size]
                    return x
                with hooked(pre={parts.out_proj(block): patch}):
                    out = _hf_out(hf, family, corrupt)
                oracle[i, h] = out[answer] - out[other]
    assert result.patched.shape == (len(layers), heads)  # query heads: 6 for the Llama with 2 key/value heads
    _close(result.patched, oracle)


def _hf_norm_read(norm, final: torch.Tensor, direction: torch.Tensor):
    """transformers' final norm with its scale frozen at ``final``, without its shift, dotted with ``direction``."""
    weight = norm.weight.detach().double()
    if hasattr(norm, "variance_epsilon"):  # LlamaRMSNorm
        scale = weight / torch.sqrt(final.pow(2).mean() + norm.variance_epsilon)
        return lambda c: (c * scale) @ direction
    scale = weight / torch.sqrt(final.var(unbiased=False) + norm.eps)
    return lambda c: ((c - c.mean(-1, keepdim=True)) * scale) @ direction


@pytest.mark.parametrize("family", ["gpt2", "llama", "vit"])
def test_direct_logit_attribution_equals_hooked_transformers(pair, family):
    hf, ours = pair[family]
    x, _, _, answer, other = _inputs(family)
    result = direct_logit_attribution(ours, x, answer, other)
    parts, layers = PARTS[family], PARTS[family].layers(hf)
    seen = {}
    pre = {layers[0]: keep(seen, "embed"), parts.final_norm(hf): keep(seen, "final"),
           **{parts.out_proj(b): keep(seen, ("z", i)) for i, b in enumerate(layers)}}
    with torch.no_grad(), hooked(pre=pre, post={parts.mlp(b): keep(seen, ("mlp", i)) for i, b in enumerate(layers)}):
        out = _hf_out(hf, family, x).double()
    p = 0 if family == "vit" else -1
    unembed = parts.unembed(hf)
    direction = (unembed.weight[answer] - unembed.weight[other]).detach().double()
    read = _hf_norm_read(parts.final_norm(hf), seen["final"][0, p].double(), direction)
    heads = ours.blocks[0].self_attn.n_heads
    oracle_heads, oracle_mlps = torch.zeros(len(layers), heads), torch.zeros(len(layers))
    for i, block in enumerate(layers):
        proj = parts.out_proj(block)
        w_o = proj.weight.detach().double()  # (C, H·D); GPT-2's Conv1D stores it transposed, (H·D, C)
        w_o = w_o.T if type(proj).__name__ == "Conv1D" else w_o
        z = seen["z", i][0, p].double()
        size = z.numel() // heads
        for h in range(heads):
            oracle_heads[i, h] = read(w_o[:, h * size:(h + 1) * size] @ z[h * size:(h + 1) * size])
        oracle_mlps[i] = read(seen["mlp", i][0, p].double())
    _close(result.heads, oracle_heads)
    _close(result.mlps, oracle_mlps)
    total = float(out[answer] - out[other])
    assert result.total == pytest.approx(total, abs=1e-4)
    assert result.heads.sum() + result.mlps.sum() + result.rest == pytest.approx(total, abs=1e-4)
    assert result.rest == pytest.approx(total - float(oracle_heads.sum() + oracle_mlps.sum()), abs=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_neuron_activations_equal_the_hooked_down_projection_inputs(pair, family):
    hf, ours = pair[family]
    x = _inputs(family)[0]
    parts, layers = PARTS[family], PARTS[family].layers(hf)
    seen = {}
    with torch.no_grad(), hooked(pre={parts.down(b): keep(seen, i) for i, b in enumerate(layers)}):
        _hf_out(hf, family, x)
    oracle = torch.stack([seen[i][0] for i in range(len(layers))])  # (L, T, d_ff)
    ours_acts = neuron_activations(ours, x)
    assert ours_acts.shape == oracle.shape
    _close(ours_acts, oracle)


def test_texts_of_different_lengths_are_refused_with_both_lengths(pair):
    _, ours = pair["gpt2"]
    for method in (patch_residual, patch_heads):
        with pytest.raises(ValueError, match="6 tokens and the corrupt text 4"):
            method(ours, TEXT, TEXT[:4], logit_difference(ANSWER, OTHER))


def test_direct_logit_attribution_refuses_bert(pair):
    with pytest.raises(ValueError, match="pre-norm"):
        direct_logit_attribution(pair["bert"][1], BERT_TEXT, ANSWER, OTHER, position=BERT_MASK)


def test_nothing_is_left_on_the_model_or_the_context(pair):
    _, ours = pair["llama"]
    before = ours(torch.tensor(TEXT)[None])
    patch_heads(ours, TEXT, _inputs("llama")[1], logit_difference(ANSWER, OTHER))
    token_attributions(ours, TEXT, ANSWER, method="integrated_gradients", steps=4)
    direct_logit_attribution(ours, TEXT, ANSWER, OTHER)
    assert PROBES.get() is None and HEAD_EDITS.get() is None
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in ours.modules())
    assert all(p.grad is None for p in ours.parameters())
    torch.testing.assert_close(ours(torch.tensor(TEXT)[None]), before, atol=0, rtol=0)
