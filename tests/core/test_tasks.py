"""Built-in tasks: data against independent references, the Task interface, and quick learning checks."""

import dataclasses

import numpy as np
import pytest
import torch

from transformer_core.config import TransformerConfig, ViTConfig
from transformer_core.tasks import TASK_NAMES, Sample, get_task, grammar, language, proteins, sequences
from transformer_core.tasks.base import generator_for
from transformer_core.training import TrainConfig, Trainer

TINY_TEXT = {"d_model": 32, "n_heads": 2, "n_layers": 1, "d_ff": 64}
TINY_VIT = {"d_model": 32, "n_heads": 2, "n_layers": 1, "d_ff": 64}
TINY_OPTIONS = {"char_lm": {"block_size": 16}, "protein": {"max_len": 12}, "vit_shapes": {"eval_size": 128}}


def tiny(task_name: str):
    task = get_task(task_name, **TINY_OPTIONS.get(task_name, {}))
    config = task.default_model_config()
    return task, dataclasses.replace(config, **(TINY_VIT if isinstance(config, ViTConfig) else TINY_TEXT))


def test_registry_order_and_errors():
    assert TASK_NAMES == ("reverse", "copy", "sort", "induction", "char_lm", "protein", "vit_shapes")
    with pytest.raises(ValueError, match="Unknown task"):
        get_task("translate")
    with pytest.raises(ValueError, match="option"):
        get_task("reverse", colour="red")
    with pytest.raises(ValueError, match="seq_len"):
        get_task("reverse", seq_len=0)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_task_interface(name):
    task, config = tiny(name)
    assert task.family in ("seq2seq", "causal_lm", "regression", "vision") and task.title and task.description
    model = task.build_model(config)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    b1, b2 = task.sample_batch(4, g1), task.sample_batch(4, g2)
    assert all(torch.equal(b1[k], b2[k]) for k in b1)  # same seed, same data
    loss = task.loss(model, b1)
    assert loss.ndim == 0 and torch.isfinite(loss)
    metrics = task.evaluate(model, seed=0)
    assert {"loss", task.metric_name} <= set(metrics)
    assert metrics == task.evaluate(model, seed=0)
    example = task.attention_example()
    attention = task.attention(model, example)
    for maps in attention.values():
        assert all(w.dim() == 3 for w in maps)  # (H, T, S) per layer
    scores = task.pattern_scores(attention, example)
    assert tuple(scores) == task.pattern_names
    for value in scores.values():
        assert value.shape == (len(next(iter(attention.values()))), config.n_heads)
        assert np.all((value >= -1e-6) & (value <= 1 + 1e-6))
    samples = task.samples(model, 3, seed=1)
    assert len(samples) == 3 and all(isinstance(s, Sample) for s in samples)


@pytest.mark.parametrize("kind", ["copy", "reverse", "sort"])
def test_sequence_batches_match_python_reference(kind):
    task = get_task(kind, seq_len=6, min_len=2)
    batch = task.sample_batch(32, torch.Generator().manual_seed(0))
    for src, tgt_in, tgt_out in zip(batch["src"], batch["tgt_in"], batch["tgt_out"], strict=True):
        digits = [int(t) - sequences.DIGIT0 for t in src if t != sequences.PAD]
        answer = [d + sequences.DIGIT0 for d in sequences.transform(kind, digits)]
        n = len(digits)
        assert tgt_in[: n + 1].tolist() == [sequences.BOS, *answer]
        assert tgt_out[: n + 1].tolist() == [*answer, sequences.EOS]
        assert (tgt_out[n + 1 :] == sequences.IGNORE).all()
    assert batch["lengths"].min() >= 2 and batch["lengths"].max() <= 6


def test_digit_sequences_vary_in_length_by_default():
    lengths = get_task("reverse").sample_batch(512, torch.Generator().manual_seed(0))["lengths"]
    assert set(lengths.tolist()) == set(range(4, 9))  # half of seq_len 8 up to 8
    assert get_task("copy", seq_len=5).options()["min_len"] == 3
    fixed = get_task("sort", min_len=8).sample_batch(64, torch.Generator().manual_seed(0))["lengths"]
    assert set(fixed.tolist()) == {8}

def test_sort_pattern_accepts_any_copy_of_a_repeated_digit():
    task = get_task("sort", seq_len=3)
    sources = task.expected_sources([2, 0, 2])
    assert sources == [[1], [0, 2], [0, 2]]


def test_gravy_and_charge_match_the_published_scale():
    assert proteins.gravy("AAAA") == pytest.approx(1.8)
    assert proteins.gravy(proteins.AMINO_ACIDS) == pytest.approx(-0.49)  # mean of the Kyte–Doolittle table
    assert proteins.net_charge("KKDEH") == pytest.approx(0.1)
    for prop, fn in (("gravy", proteins.gravy), ("net_charge", proteins.net_charge)):
        task = get_task("protein", property=prop)
        batch = task.sample_batch(16, torch.Generator().manual_seed(1), standardise=False)
        expected = [fn(task.sequence_text(row)) for row in batch["tokens"]]
        np.testing.assert_allclose(batch["y"].numpy(), expected, rtol=1e-5, atol=1e-5)


def test_protein_cls_pooling_adds_a_cls_row():
    task = get_task("protein", pool="cls", max_len=12)
    model = task.build_model(dataclasses.replace(task.default_model_config(), **TINY_TEXT))
    example = task.attention_example()
    maps = task.attention(model, example)["encoder"]
    assert maps[0].shape[-1] == len(example["sequence"]) + 1
    assert example["labels"]["encoder"][0][0] == "CLS"


def test_grammar_corpus_is_deterministic_and_grammatical():
    text = grammar.generate_corpus(200, seed=5)
    assert text == grammar.generate_corpus(200, seed=5)
    assert all(grammar.is_grammatical(line) for line in text.splitlines())
    for bad in ("The cat see a dog.", "A apple sleeps.", "the cat sleeps.", "The cats sleeps.", "The cat sleeps"):
        assert not grammar.is_grammatical(bad)


def test_user_text_is_checked_and_capped():
    for empty in ("", "   \n\t "):
        with pytest.raises(ValueError, match="empty"):
            get_task("char_lm", text=empty)
    with pytest.raises(ValueError, match="too short"):
        get_task("char_lm", text="hi there")
    long = get_task("char_lm", text="ab c" * (language.MAX_CHARS // 4 + 10), block_size=8)
    assert "cut" in long.notice and len(long.train_text) + len(long.val_text) == language.MAX_CHARS
    text = "Grüße aus Köln ✓ 日本語のテキスト — naïve café\r\n" * 20
    task = get_task("char_lm", text=text, block_size=16)
    assert "日" in task.vocab and "\r" not in task.vocab
    assert task.decode(task.encode(task.train_text)) == task.train_text
    assert get_task("char_lm").notice is None


def test_rare_characters_beyond_the_vocabulary_cap_become_unknown():
    text = "abc " * 50 + "".join(chr(0x4E00 + i) for i in range(language.MAX_VOCAB + 10))
    task = get_task("char_lm", text=text, block_size=8)
    assert len(task.vocab) == language.MAX_VOCAB and task.vocab.endswith(language.UNKNOWN)
    assert "rarest" in task.notice


def test_generate_text_is_seeded_and_top_k_one_is_greedy():
    task, config = tiny("char_lm")
    model = task.build_model(config)
    a = task.generate_text(model, "The ", 20, temperature=1.0, seed=4)
    assert len(a) == 20 and a == task.generate_text(model, "The ", 20, temperature=1.0, seed=4)
    greedy = task.generate_text(model, "The ", 20, temperature=0.0)
    assert task.generate_text(model, "The ", 20, temperature=1.0, top_k=1, seed=9) == greedy
    assert len(task.generate_text(model, "", 5)) == 5


def test_shapes_masks_and_patch_overlap():
    task = get_task("vit_shapes")
    batch = task.sample_batch(8, torch.Generator().manual_seed(0))
    assert batch["images"].shape == (8, 3, 32, 32) and batch["images"].min() >= 0 and batch["images"].max() <= 1
    assert (batch["masks"].flatten(1).sum(1) > 10).all()  # every picture shows its object
    mask = torch.zeros(32, 32, dtype=torch.bool)
    mask[0:3, 9:12] = True  # touches patches (0, 1) only
    assert task.patch_mask(mask, 8).nonzero()[0].tolist() == [1]
    example = task.attention_example()
    assert example["image"].shape == (32, 32, 3) and example["image"].dtype == np.uint8
    assert task.images(2, seed=0).shape == (2, 32, 32, 3)


def test_wrong_model_config_is_a_friendly_error():
    with pytest.raises(ValueError, match="ViTConfig"):
        get_task("vit_shapes").build_model(TransformerConfig())
    with pytest.raises(ValueError, match="vocab_size"):
        get_task("reverse").build_model(TransformerConfig(vocab_size=5, max_len=16))


ROPE_TASKS = {"reverse": {}, "induction": {}, "char_lm": {"block_size": 16}, "protein": {"pool": "cls", "max_len": 12}}


@pytest.mark.parametrize("name", ROPE_TASKS)
def test_rotary_models_that_a_task_accepts_train_and_too_short_ones_are_refused(name):
    task = get_task(name, **ROPE_TASKS[name])
    config = dataclasses.replace(task.default_model_config(), positional="rope", **TINY_TEXT)
    trainer = Trainer(task, config, TrainConfig(steps=1, batch_size=4, eval_every=1, snapshot_every=1))
    trainer.run()
    assert trainer.status == "done" and np.isfinite(trainer.history[-1]["loss"])
    with pytest.raises(ValueError, match="max_len"):
        task.build_model(dataclasses.replace(config, max_len=config.max_len - 1))


def test_char_lm_accuracy_counts_the_likeliest_character_against_the_text():
    task = get_task("char_lm", block_size=16)
    guess = task.stoi["e"]

    class AlwaysE(torch.nn.Module):  # predicts "e" everywhere, so its accuracy is the share of "e" in the targets
        def __init__(self):
            super().__init__()
            self.anchor = torch.nn.Parameter(torch.zeros(1))

        def forward(self, idx):
            logits = torch.zeros(*idx.shape, len(task.vocab))
            logits[..., guess] = 1.0
            return logits + self.anchor

    metrics = task.evaluate(AlwaysE(), seed=3)
    windows = task._windows(task.val_ids, task.eval_windows, generator_for(3))
    text = "".join(task.decode(row) for row in windows["targets"])
    assert metrics["accuracy"] == pytest.approx(text.count("e") / len(text))
    assert metrics["val_loss"] == metrics["loss"] and 0 < metrics["accuracy"] < 1


LEARNING = {  # task: (steps, learning rate, largest allowed ratio of held-out loss after / before)
    "reverse": (60, 1e-2, 0.7), "copy": (60, 1e-2, 0.7), "sort": (60, 1e-2, 0.7), "induction": (60, 1e-2, 0.7),
    "char_lm": (60, 1e-2, 0.7), "protein": (40, 3e-3, 0.5), "vit_shapes": (100, 3e-3, 0.8),
}


@pytest.mark.slow  # each task trains until it has learned
@pytest.mark.parametrize("name", TASK_NAMES)
def test_quick_version_learns(name):
    task, config = tiny(name)
    steps, lr, ratio = LEARNING[name]
    trainer = Trainer(task, config, TrainConfig(steps=steps, batch_size=32, lr=lr, eval_every=0, snapshot_every=0))
    before = task.evaluate(trainer.model, seed=1)["loss"]
    trainer.run()
    after = task.evaluate(trainer.model, seed=1)["loss"]
    assert trainer.status == "done"
    assert after < ratio * before, f"{name}: held-out loss {before:.3f} -> {after:.3f}"
    if task.family == "seq2seq":  # the one-pass accuracy equals real greedy decoding, example by example
        batch = task.sample_batch(task.eval_size, generator_for(1))
        with torch.no_grad():
            logits = trainer.model(batch["src"], batch["tgt_in"])
        one_pass = task._exact(logits.argmax(-1), batch)
        assert torch.equal(one_pass, task._exact(task._greedy(trainer.model.eval(), batch), batch))


@pytest.mark.parametrize(("text", "phrase"), [
    ("", "empty"), (" \n\t ", "empty"), ("hi there", "too short: 8 characters"),
    ("e\u0301" * 15, "too short: 15 characters"),  # 30 code points, but 15 characters once composed (NFC)
    ("a" * 50, "one character"), (b"bytes are not text", "must be text"),
])
def test_text_problem_names_what_is_wrong(text, phrase):
    problem = language.text_problem(text)
    assert problem is not None and phrase in problem
    with pytest.raises(ValueError, match=phrase):
        get_task("char_lm", text=text)


def test_every_text_that_passes_the_check_makes_batches_at_the_default_context():
    shortest = "ab" * (language.MIN_CHARS // 2)
    assert language.text_problem(shortest[:-1]) is not None and language.text_problem(shortest) is None
    task = get_task("char_lm", text=shortest)
    assert task.block_size == len(task.train_text) - 1 < language.BLOCK_SIZE  # the context shrinks to fit
    assert "characters of context instead of 64" in task.notice and "validation reuses" in task.notice
    batch = task.sample_batch(4, torch.Generator().manual_seed(0))
    assert batch["idx"].shape == batch["targets"].shape == (4, task.block_size)
    model = task.build_model(dataclasses.replace(task.default_model_config(), **TINY_TEXT))
    assert np.isfinite(task.evaluate(model)["loss"])
    roomy = get_task("char_lm", text="abcdefghij" * 100)
    assert roomy.block_size == language.BLOCK_SIZE and roomy.notice is None


def test_clean_text_cuts_to_the_given_length_with_a_notice():
    text, notice = language.clean_text("ab\r\ncd " * 10, max_chars=25)
    assert len(text) == 25 and "\r" not in text and "first 25 of 60 characters" in notice
    assert language.clean_text("ab cd " * 10, max_chars=1000) == ("ab cd " * 10, None)


def test_decode_text_reads_utf8_and_explains_everything_else():
    assert language.decode_text("\ufeffGrüße ☃".encode()) == "Grüße ☃"  # a byte-order mark is dropped
    with pytest.raises(ValueError, match=r"not UTF-8 text: byte 3 \(0xE9\)"):
        language.decode_text("caf\xe9 au lait".encode("latin-1"))
    with pytest.raises(ValueError, match="UTF-16"):
        language.decode_text("hello".encode("utf-16"))
    with pytest.raises(ValueError, match="NUL"):
        language.decode_text(b"PK\x03\x04\x00\x00 not a text file")


@pytest.mark.slow
def test_samples_follow_temperature_and_top_k():
    task, config = tiny("char_lm")
    model = task.build_model(config)
    greedy = task.samples(model, 4, seed=2, temperature=0.0)
    assert task.samples(model, 4, seed=2, temperature=2.0, top_k=1) == greedy
    assert [s.prediction for s in task.samples(model, 4, seed=2, temperature=2.0)] != [s.prediction for s in greedy]


def test_validation_text_starts_at_a_line_or_word_near_the_90_percent_point():
    lines = "".join(f"line {i} has a few words\n" for i in range(40))
    task = get_task("char_lm", text=lines, block_size=8)
    assert task.val_text.startswith("line ") and task.train_text.endswith("\n")
    assert abs(len(task.train_text) - 0.9 * len(lines)) < 30 and task.train_text + task.val_text == lines
    words = "word " * 100
    assert language.split_point(words) == 450 and language.split_point("x" * 100) == 90  # no boundary: 90%


def test_text_samples_end_with_their_line_and_give_way_when_interrupted():
    task, config = tiny("char_lm")
    model = task.build_model(config)
    full = task.samples(model, 4, seed=3)
    assert len(full) == 4 and all("\n" not in s.prediction for s in full)
    asked = []

    def after_two() -> bool:
        asked.append(1)
        return len(asked) > 2

    assert task.samples(model, 4, seed=3, interrupted=after_two) == full[:2]  # the same samples, fewer of them
