"""Generation in the Attention Lab without Streamlit: steps to records, the growing heatmap, CSV and GIF."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from PIL import Image

from explorer.lab import generation_exports as ex
from explorer.lab.generation import SHOWN_SPACE, Sampling, Writing, end_token_id, token_label


class Words:
    """A vocabulary of ids 0..V-1 named "w<i>" (id 0 is the end token; id 1 starts with a space)."""

    def id_to_token(self, token_id: int) -> str | None:
        return "<|endoftext|>" if token_id == 0 else "Ġsky" if token_id == 1 else f"w{token_id}"

    def decode(self, ids: list[int], *, skip_special_tokens: bool = True) -> str:
        return "".join(" sky" if i == 1 else f"w{i}" for i in ids if not (skip_special_tokens and i == 0))


@dataclass(frozen=True)
class Step:
    token_id: int
    logits: torch.Tensor
    attention: tuple[torch.Tensor, ...]
    position: int


def fake_steps(prompt_len: int, tokens: list[int], *, layers: int = 2, heads: int = 3, vocab: int = 12):
    """Steps whose attention rows are known: layer l, head h, step k puts ``(l + h + k) % S`` as the heaviest key."""
    for k, token in enumerate(tokens):
        s = prompt_len + k
        rows = []
        for layer in range(layers):
            row = torch.full((heads, s), 0.1 / max(s - 1, 1))
            for h in range(heads):
                row[h, (layer + h + k) % s] = 0.0
                row[h] = row[h] / row[h].sum() * 0.1
                row[h, (layer + h + k) % s] = 0.9
            rows.append(row)
        logits = torch.arange(vocab, dtype=torch.float32) / 4
        logits[token] = 5.0
        yield Step(token, logits, tuple(rows), s)


def writing(tokens: list[int], *, prompt: tuple[int, ...] = (3, 1, 4), max_new: int = 10, sampling=None) -> Writing:
    w = Writing(prompt, tuple(token_label(Words(), i) for i in prompt), sampling or Sampling(), max_new, Words(),
                iter(fake_steps(len(prompt), tokens)), "tiny", end_id=0)
    while w.advance() is not None:
        pass
    return w


def test_steps_become_records_with_labels_probabilities_and_candidates():
    w = writing([5, 1, 7])
    assert [t.token for t in w.written] == ["w5", f"{SHOWN_SPACE}sky", "w7"]
    assert [t.position for t in w.written] == [3, 4, 5] and [t.step for t in w.written] == [1, 2, 3]
    first = w.written[0]
    expected = torch.softmax(next(fake_steps(3, [5])).logits.double(), -1)
    assert first.probability == pytest.approx(float(expected[5]))
    assert first.candidates[0].token == "w5" and first.candidates[0].chosen
    assert [c.probability for c in first.candidates] == sorted((c.probability for c in first.candidates), reverse=True)
    assert first.attention.shape == (2, 3, 3)
    assert w.status == "done" or w.status == "full"
    assert w.text == ("w3 skyw4", "w5 skyw7")


def test_a_writing_ends_at_its_token_count_the_end_token_and_stop():
    assert writing([5, 6, 7], max_new=2).status == "done"
    assert len(writing([5, 6, 7], max_new=2).written) == 2
    ended = writing([5, 0, 7])
    assert ended.status == "ended" and len(ended.written) == 2 and ended.written[-1].end
    assert writing([5]).status == "full"  # the steps ran out before max_new: the model's positions are full
    w = Writing((3,), ("w3",), Sampling(), 10, Words(), iter(fake_steps(1, [5, 6, 7])))
    w.advance()
    w.stop()
    assert w.status == "stopped" and w.advance() is None and len(w.written) == 1 and w.steps is None


def test_a_chosen_token_outside_the_top_candidates_is_added_and_marked():
    class Low(Step):
        pass

    logits = torch.arange(12, dtype=torch.float32)  # token 0 is the least likely
    w = Writing((3,), ("w3",), Sampling(temperature=1.0), 5, Words(),
                iter([Low(2, logits, (torch.ones(1, 1),), 1)]))
    w.advance()
    (token,) = w.written
    assert [c.token for c in token.candidates[:5]] == ["w11", "w10", "w9", "w8", "w7"]
    assert token.candidates[-1].token == "w2" and token.candidates[-1].chosen
    assert token.probability == pytest.approx(float(torch.softmax(logits.double(), -1)[2]))


def test_the_distribution_follows_temperature_top_k_and_top_p():
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0])
    assert torch.allclose(Sampling().distribution(logits), torch.softmax(logits.double(), -1))
    hot = Sampling(temperature=2.0).distribution(logits)
    assert torch.allclose(hot, torch.softmax(logits.double() / 2, -1))
    k2 = Sampling(temperature=1.0, top_k=2).distribution(logits)
    assert k2[2:].sum() == 0 and torch.allclose(k2[:2], torch.softmax(logits[:2].double(), -1))
    p = torch.softmax(logits.double(), -1)  # ≈ 0.61, 0.22, 0.14, 0.03
    nucleus = Sampling(temperature=1.0, top_p=0.7).distribution(logits)
    assert nucleus[2:].sum() == 0 and torch.allclose(nucleus[:2], p[:2] / p[:2].sum())
    assert Sampling(temperature=1.0, top_p=0.5).distribution(logits)[0] == 1.0  # the likeliest always stays
    for bad in ({"temperature": -1}, {"top_k": 0}, {"top_p": 0.0}, {"top_p": 1.5}):
        with pytest.raises(ValueError):
            Sampling(**bad)
    assert "seed 3" in Sampling(temperature=0.8, top_k=40, seed=3).describe()
    assert Sampling().describe().startswith("greedy")


def test_end_token_is_found_by_name():
    names = {"<|endoftext|>": 7, "</s>": 2}
    assert end_token_id(names.get) == 7
    assert end_token_id({"</s>": 2}.get) == 2
    assert end_token_id({}.get) is None


def test_the_heatmap_gains_one_row_per_token_over_the_prompt_and_what_was_written():
    w = writing([5, 1, 7, 8])
    grown = ex.growing(w, layer=1, head=2)
    assert grown.weights.shape == (4, 3 + 3)  # 4 steps; keys: 3 prompt tokens + 3 written ones read back
    assert grown.cols == ("w3", f"{SHOWN_SPACE}sky", "w4", "✎w5", f"✎{SHOWN_SPACE}sky", "✎w7")
    assert grown.rows[0] == "w4 → w5" and grown.rows[1] == f"w5 → {SHOWN_SPACE}sky"
    for k in range(4):
        s = 3 + k
        row = grown.weights[k]
        assert np.isnan(row[s:]).all() and row[:s].sum() == pytest.approx(1.0, abs=1e-6)
        assert int(np.nanargmax(row)) == (1 + 2 + k) % s  # the key the fake model put 0.9 on
    with pytest.raises(ValueError, match="no layer 3"):
        ex.growing(w, layer=2, head=0)
    empty = Writing((3,), ("w3",), Sampling(), 5, Words(), iter(()))
    with pytest.raises(ValueError, match="Nothing is written"):
        ex.growing(empty, 0, 0)


def test_the_csv_has_a_row_per_step_with_its_candidates():
    w = writing([5, 0])
    rows = list(csv.DictReader(io.StringIO(ex.steps_csv(w))))
    assert [r["step"] for r in rows] == ["1", "2"] and [r["token"] for r in rows] == ["w5", "<|endoftext|>"]
    assert rows[1]["end_of_text"] == "1" and rows[0]["end_of_text"] == "0"
    assert float(rows[0]["probability"]) == pytest.approx(w.written[0].probability)
    assert rows[0]["candidate_1"] == "w5" and float(rows[0]["candidate_probability_1"]) == pytest.approx(
        w.written[0].probability)


def test_the_gif_has_a_frame_per_step_the_same_size_and_capped():
    w = writing([5, 6, 7, 8, 9])
    data = ex.growing_gif(w, 0, 1)
    gif = Image.open(io.BytesIO(data))
    assert gif.format == "GIF" and gif.n_frames == 5
    sizes = set()
    for i in range(gif.n_frames):
        gif.seek(i)
        sizes.add(gif.size)
    assert len(sizes) == 1 and max(next(iter(sizes))) <= ex.GIF_MAX_SIDE_PX
    gif.seek(0)
    first = np.asarray(gif.convert("RGB"))
    gif.seek(4)
    last = np.asarray(gif.convert("RGB"))
    assert (first != last).any()  # rows fill in
    assert ex.frame_steps(5) == [1, 2, 3, 4, 5]
    many = ex.frame_steps(200, most=10)
    assert len(many) <= 11 and many[-1] == 200 and many == sorted(many)


@pytest.fixture(scope="module", name="tiny")
def tiny_fixture(tmp_path_factory):
    from tests.pretrained.hf_folders import gpt2_folder
    from transformer_core.pretrained import load_pretrained

    folder = tmp_path_factory.mktemp("models") / "tiny-gpt2"
    gpt2_folder(folder, layers=2, heads=2, positions=32)
    return load_pretrained(folder)


def _start(pre, text: str, n: int, sampling: Sampling | None = None) -> Writing:
    from explorer.lab.generation import start_writing

    ids = pre.tokenizer.encode(text).ids
    w = start_writing(pre.model, ids, pre.tokenizer, sampling or Sampling(), n,
                      end_id=end_token_id(pre.tokenizer.token_to_id), model_name=pre.name)
    while w.advance() is not None:
        pass
    return w


def test_a_real_writing_heatmap_equals_the_full_models_attention_rows(tiny):
    before = {k: v.clone() for k, v in tiny.model.state_dict().items()}
    w = _start(tiny, "the cat sat", 8)
    assert w.end_id == tiny.tokenizer.token_to_id("<|endoftext|>")
    ids = torch.tensor([w.ids[:-1]])  # every token read (the last written one never is)
    with torch.no_grad():
        logits, att = tiny.model.forward_with_attention(ids)
    p = len(w.prompt_ids)
    for layer in range(2):
        for head in range(2):
            grown = ex.growing(w, layer, head)
            full = att["decoder"][layer][0, head, p - 1:].numpy()  # (n, S): the causal matrix's last n rows
            assert np.allclose(np.nan_to_num(grown.weights), full, atol=1e-5)
    greedy = logits[0, p - 1:].argmax(-1).tolist()  # greedy: each written token is the likeliest
    assert [t.token_id for t in w.written] == greedy
    assert all(torch.equal(before[k], v) for k, v in tiny.model.state_dict().items())  # the model is only read


def test_a_real_writing_repeats_with_its_seed_and_refuses_bad_requests_kindly(tiny):
    hot = Sampling(temperature=1.5, top_k=20, top_p=0.95, seed=11)
    first, again = _start(tiny, "the cat", 10, hot), _start(tiny, "the cat", 10, hot)
    assert [t.token_id for t in first.written] == [t.token_id for t in again.written]
    others = {tuple(t.token_id for t in _start(tiny, "the cat", 10, Sampling(temperature=1.5, seed=s)).written)
              for s in range(4)}
    assert len(others) > 1  # other seeds write other texts
    from explorer.lab.generation import start_writing

    for ids, n, phrase in (((), 5, "Type a prompt"), ((1, 2), 0, "1 to 64"), ((1,) * 32, 5, "at most 32 tokens")):
        with pytest.raises(ValueError, match=phrase):
            start_writing(tiny.model, ids, tiny.tokenizer, Sampling(), n)


def test_a_character_vocabulary_labels_spaces_and_line_breaks_and_decodes():
    from explorer.lab.generation import Characters

    chars = Characters({"a": 0, " ": 1, "\n": 2})
    assert [token_label(chars, i) for i in (0, 1, 2, 9)] == ["a", SHOWN_SPACE, "↵", "#9"]
    assert chars.decode([0, 1, 0, 2, 9]) == "a a\n"
