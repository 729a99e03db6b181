"""Switching heads off in the Attention Lab, against transformers with the heads' values zeroed and against
hand-made references."""

from __future__ import annotations

import copy

import numpy as np
import torch

from explorer.lab.head_switch import Outcome, Subject, compare, describe_change, format_heads, parse_heads
from explorer.lab.internals import build_lab_encoder, lab_outputs
from explorer.lab.lens_grid import lens_grid
from explorer.lab.subjects import pretrained_subject, random_subject, trained_subject
from explorer.lab.text_input import LabInput
from explorer.pretrained.lab import SHOWN_SPACE, SPACE_MARK, encode
from tests.core.intervention_models import value_edited
from transformer_core import TransformerConfig
from transformer_core.tasks import get_task


def _values_zeroed(hf, off, n_heads: int):
    """A copy of the transformers model whose switched-off heads read zero values (its head_mask is ignored in
    transformers 5): GPT-2 keeps V in the last third of each block's c_attn, BERT in each layer's ``value``."""
    model = copy.deepcopy(hf)
    with torch.no_grad():
        for layer, head in off:
            if hasattr(model, "transformer"):  # GPT-2: Conv1D weight (C, 3C), columns Q | K | V
                attn, width = model.transformer.h[layer].attn.c_attn, model.config.n_embd
                cols = slice(2 * width + head * width // n_heads, 2 * width + (head + 1) * width // n_heads)
                attn.weight[:, cols] = 0.0
                attn.bias[cols] = 0.0
            else:  # BERT: nn.Linear value (C, C)
                value, width = model.bert.encoder.layer[layer].attention.self.value, model.config.hidden_size
                rows = slice(head * width // n_heads, (head + 1) * width // n_heads)
                value.weight[rows] = 0.0
                value.bias[rows] = 0.0
    return model


def _lab(ids: list[int]) -> LabInput:
    return LabInput(tuple(f"t{i}" for i in ids), tuple(ids), 30)


def test_heads_round_trip_through_their_url_text():
    pairs, bad = parse_heads("1.2, 3.1,1.2,,9.9,x,2.0,2", layers=3, heads=4)
    assert pairs == [(0, 1), (2, 0)] and bad == ["9.9", "x", "2.0", "2"]
    assert format_heads(pairs) == "1.2,3.1"
    assert parse_heads("", 2, 2) == ([], [])


def test_gpt2_next_tokens_with_heads_off_match_transformers_with_zero_values(gpt2):
    hf, pre = gpt2
    inp = encode(pre, "the cat sat on the", 48)
    off = [(0, 1), (1, 3)]
    result = compare(pretrained_subject(pre, inp, k=5), off)
    with torch.no_grad():
        ref = _values_zeroed(hf, off, 4)(torch.tensor([inp.ids])).logits[0, -1].softmax(-1)
        plain = hf(torch.tensor([inp.ids])).logits[0, -1].softmax(-1)
    after, before = result.after.ranked[0], result.before.ranked[0]
    np.testing.assert_allclose(after.values, ref.topk(5).values.numpy(), atol=1e-5)
    np.testing.assert_allclose(before.values, plain.topk(5).values.numpy(), atol=1e-5)
    assert after.values != before.values
    names = [(pre.tokenizer.id_to_token(int(i)) or "").replace(SPACE_MARK, SHOWN_SPACE) for i in ref.topk(5).indices]
    assert list(after.labels) == names


def test_bert_fill_ins_with_heads_off_match_transformers_with_zero_values(bert):
    hf, pre = bert
    inp = encode(pre, "the cat sat on the [MASK]", 48)
    spot = list(inp.tokens).index("[MASK]")
    off = [(1, 0)]
    result = compare(pretrained_subject(pre, inp), off, mode="zero")
    with torch.no_grad():
        ref = _values_zeroed(hf, off, 2)(torch.tensor([inp.ids])).logits[0, spot].softmax(-1)
    np.testing.assert_allclose(result.after.ranked[0].values, ref.topk(5).values.numpy(), atol=1e-5)
    assert result.after.ranked[0].title == f"Fill-ins for position {spot}"


def test_no_heads_off_runs_nothing():
    def read():
        raise AssertionError("the model ran")

    result = compare(Subject(torch.nn.Linear(2, 2), "encoder", read, read), [])
    assert result.after == result.before == Outcome()
    assert describe_change(result) == ["Every head is on: pick heads to switch them off."]


def test_random_encoder_outputs_move_as_a_model_with_those_values_zeroed():
    config = TransformerConfig(vocab_size=30, max_len=16, d_model=16, n_heads=4, n_layers=2, d_ff=32)
    model = build_lab_encoder(config, seed=3)
    ids = [4, 9, 2, 7, 1]
    off = [(1, 2)]
    result = compare(random_subject(model, _lab(ids), "causal"), off)
    with torch.no_grad():
        expected = lab_outputs(value_edited(model, {("encoder", 1, 2): None}), ids, "causal")
    np.testing.assert_allclose(result.after.vectors, expected.numpy(), atol=1e-5)
    change = result.vector_change()
    moved = np.linalg.norm(expected.numpy() - result.before.vectors, axis=-1)
    np.testing.assert_allclose(change, moved / np.linalg.norm(result.before.vectors, axis=-1), rtol=1e-4)
    assert (change > 0).all()


def test_mean_mode_replaces_heads_with_their_mean_over_the_text():
    config = TransformerConfig(vocab_size=30, max_len=16, d_model=16, n_heads=4, n_layers=1, d_ff=32)
    model = build_lab_encoder(config, seed=1)
    ids = [4, 9, 2, 7]
    idx = torch.tensor([ids])
    with torch.no_grad():
        _, att = model.blocks[0].self_attn(*(model.blocks[0].norm1(model.embed(idx)),) * 3, need_weights=True)
        v = model.blocks[0].self_attn.v_proj(model.blocks[0].norm1(model.embed(idx))).view(1, 4, 4, 4)
        mean = (att[0, 2] @ v[0, :, 2]).mean(dim=0)  # head 2's output, averaged over the positions
        expected = lab_outputs(value_edited(model, {("encoder", 0, 2): mean}), ids)
    result = compare(random_subject(model, _lab(ids), "none"), [(0, 2)], mode="mean")
    np.testing.assert_allclose(result.after.vectors, expected.numpy(), atol=1e-5)


def _untrained(name: str, text: str):
    """A task, its default model with seeded random weights, its vocabulary and ``text`` in it."""
    task = get_task(name)
    torch.manual_seed(0)
    model = task.build_model(task.default_model_config())
    vocab = task.input_vocabulary()
    return task, model, vocab, [vocab[c] for c in text]


def test_trained_reverse_model_answers_and_scores_with_heads_off():
    task, model, vocab, ids = _untrained("reverse", "3141")
    off = [(0, 0), (1, 3)]
    result = compare(trained_subject(model, task, ids, vocab), off)
    edited = value_edited(model, {("encoder", layer, head): None for layer, head in off})
    assert result.after.metric == ("accuracy", task.evaluate(edited, seed=0)["accuracy"])
    assert result.before.metric == ("accuracy", task.evaluate(model, seed=0)["accuracy"])
    assert result.after.answer.isdigit() or result.after.answer == "(nothing)"


def test_trained_decoder_lists_next_characters():
    task, model, vocab, ids = _untrained("induction", "ABCAB")
    result = compare(trained_subject(model, task, ids, vocab), [(0, 1)])
    ranked = result.after.ranked[0]
    with torch.no_grad():
        edited = value_edited(model, {("decoder", 0, 1): None})
        ref = edited(torch.tensor([ids]))[0, -1].softmax(-1).topk(5)
    np.testing.assert_allclose(ranked.values, ref.values.numpy(), atol=1e-6)
    assert ranked.title == "Next character after “B”" and set(ranked.labels) <= {*vocab, "#0"}
    assert result.after.metric[0] == task.metric_name


def test_lens_grid_matches_transformers_hidden_states(gpt2):
    hf, pre = gpt2
    inp = encode(pre, "the cat sat on the mat", 48)
    grid = lens_grid(pre.model, inp.ids, inp.tokens, lambda i: f"#{i}")
    with torch.no_grad():
        out = hf(torch.tensor([inp.ids]), output_hidden_states=True)
        hidden = out.hidden_states  # embeddings, then after each block (the last one after ln_f)
        layer0 = hf.lm_head(hf.transformer.ln_f(hidden[1]))[0].softmax(-1)
    np.testing.assert_allclose(grid.top_probs[0], layer0.max(-1).values.numpy(), atol=1e-5)
    assert grid.top[0] == tuple(f"#{int(i)}" for i in layer0.argmax(-1))
    assert grid.final == tuple(f"#{int(i)}" for i in out.logits[0].argmax(-1))
    assert grid.agreement()[-1] == len(inp.ids)
