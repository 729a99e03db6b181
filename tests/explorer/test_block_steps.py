"""The step-by-step replay of a whole block (attention, then the MLP half) must equal the block's own forward pass,
layer by layer, for every family the Lab shows; published shapes are also checked against transformers' models."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from explorer.lab.block_steps import mlp_walkthrough, walk_blocks
from explorer.lab.internals import build_lab_encoder, lab_stack, trained_stack, walk_stack
from tests.pretrained.hf_folders import bert_folder, gpt2_folder, llama_folder
from transformer_core import CausalLM, Seq2SeqTransformer, SequenceRegressor, TransformerConfig
from transformer_core.neurons import neuron_activations
from transformer_core.pretrained import load_pretrained

ATOL = 1e-5


def _check(stack) -> list:
    """Every layer's replayed output equals its block's forward; the replayed attention equals walk_stack's."""
    steps = walk_blocks(stack)
    x = stack.x
    assert len(steps) == len(stack.blocks)
    for block, step, attn in zip(stack.blocks, steps, walk_stack(stack), strict=True):
        x, _ = block(x, mask=stack.mask, is_causal=stack.is_causal, positions=stack.positions)
        assert x.abs().max() > 0 and not torch.isnan(x).any()  # the oracle is not empty
        assert torch.allclose(step.mlp.output, x[0], atol=ATOL)
        assert torch.allclose(step.attention.output, attn.output, atol=ATOL)
        m = step.mlp
        assert torch.allclose(m.added, m.residual + m.attn_out, atol=ATOL)
        assert torch.allclose(m.down, m.hidden @ m.w_down + (0 if m.b_down is None else m.b_down), atol=ATOL)
        assert torch.allclose(m.up, m.normed @ m.w_up + (0 if m.b_up is None else m.b_up), atol=ATOL)
    assert torch.allclose(steps[-1].mlp.output, stack.run()[0], atol=ATOL)
    return steps


@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding"])
def test_random_lab_encoder(mask_kind: str) -> None:
    config = TransformerConfig(vocab_size=20, max_len=16, d_model=16, n_heads=2, n_layers=3, d_ff=32, pad_id=0)
    model = build_lab_encoder(config, seed=3)
    ids, valid = [5, 6, 7, 8, 0, 0], [True] * 4 + [False] * 2
    steps = _check(lab_stack(model, ids, [str(i) for i in ids], mask_kind, valid))
    assert steps[0].mlp.activation == config.activation and steps[0].mlp.gate is None


def test_trained_families_pre_and_post_norm(rng_seed: int) -> None:
    ids = [3, 4, 5, 6, 7]
    base = dict(vocab_size=13, max_len=8, d_model=16, n_heads=4, n_layers=2, d_ff=24)
    llama_like = CausalLM(TransformerConfig(**base, positional="rope", norm_type="rmsnorm", feed_forward="swiglu",
                                            n_kv_heads=2, bias=False)).eval()
    steps = _check(trained_stack(llama_like, ids, list("abcde")))
    assert steps[0].mlp.rms_norm and steps[0].mlp.activation == "swiglu"
    _check(trained_stack(CausalLM(TransformerConfig(**base, activation="gelu")).eval(), ids, list("abcde")))
    _check(trained_stack(Seq2SeqTransformer(TransformerConfig(**base, pad_id=0)).eval(), ids, list("abcde")))
    post = SequenceRegressor(TransformerConfig(**base, norm_position="post"), pool="cls").eval()
    steps = _check(trained_stack(post, ids, list("abcde")))
    m = steps[0].mlp
    assert not m.norm_first
    # post-norm: output = norm2(norm1(x + attn) + FF(norm1(x + attn)))
    block = post.blocks[0]
    assert torch.allclose(m.normed, block.norm1(m.added), atol=ATOL)
    assert torch.allclose(m.output, block.norm2(m.normed + m.down), atol=ATOL)


def test_swiglu_formula_by_hand(rng_seed: int) -> None:
    config = TransformerConfig(vocab_size=13, max_len=8, d_model=8, n_heads=2, n_layers=1, d_ff=12,
                               norm_type="rmsnorm", feed_forward="swiglu", bias=False)
    block = CausalLM(config).eval().blocks[0]
    x, attn = torch.randn(4, 8), torch.randn(4, 8)
    m = mlp_walkthrough(block, x, attn)
    added = x + attn
    normed = added / torch.sqrt(added.pow(2).mean(-1, keepdim=True) + block.norm2.eps) * block.norm2.weight
    hidden = F.silu(normed @ m.w_gate) * (normed @ m.w_up)
    assert torch.allclose(m.normed, normed, atol=ATOL)
    assert torch.allclose(m.hidden, hidden, atol=ATOL)
    assert torch.allclose(m.output, added + hidden @ m.w_down, atol=ATOL)


@pytest.fixture(scope="module", name="folders")
def folders_fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("published")
    return {"gpt2": (root / "gpt2", gpt2_folder(root / "gpt2", layers=3, heads=2, width=16)),
            "llama": (root / "llama", llama_folder(root / "llama", layers=3, heads=6, kv_heads=2, width=24, ff=40)),
            "bert": (root / "bert", bert_folder(root / "bert", layers=3, heads=2, width=16, ff=32))}


@pytest.mark.parametrize("name", ["gpt2", "llama", "bert"])
def test_published_models_against_transformers(folders, name: str) -> None:
    """Each replayed layer equals transformers' hidden state after that layer (the last one, before the final
    norm, against the block itself), and the replayed neurons equal the library's neuron activations."""
    folder, hf = folders[name]
    pre = load_pretrained(folder)
    ids = pre.tokenizer.encode("the cat sat on the mat").ids
    steps = _check(trained_stack(pre.model, ids, [str(i) for i in ids]))
    with torch.no_grad():
        states = hf(torch.tensor([list(ids)]), output_hidden_states=True).hidden_states
    last = len(steps) if name == "bert" else len(steps) - 1  # GPT-2 and Llama apply their final norm to the last
    for i in range(last):
        assert torch.allclose(steps[i].mlp.output, states[i + 1][0], atol=1e-4), f"layer {i + 1}"
    neurons = neuron_activations(pre.model, ids)
    for i, step in enumerate(steps):
        assert torch.allclose(step.mlp.hidden, neurons[i], atol=ATOL)
    assert (steps[0].mlp.gate is not None) == (name == "llama")
    assert steps[0].mlp.norm_first == (name != "bert")
